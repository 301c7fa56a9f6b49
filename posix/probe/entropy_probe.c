/* The probe's entropy mode: what getrandom, getentropy and the raw system call give, and where
 * the program's memory lies, printed so that two runs can be compared (posix/sockets_test.cpp);
 * files closed where no interposer sees; and a fortified read told its buffer is smaller than
 * the read (posix/seam_test.cpp). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

static void hex(const char* what, const unsigned char* bytes, size_t n) {
  printf("%s ", what);
  for (size_t i = 0; i < n; ++i) printf("%02x", bytes[i]);
  printf("\n");
}

int entropy_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = listen_on(8080);
  unsigned char bytes[16];
  printf("getrandom %zd\n", getrandom(bytes, sizeof bytes, 0));
  hex("bytes", bytes, sizeof bytes);
  printf("getentropy %d\n", getentropy(bytes, sizeof bytes));
  hex("bytes", bytes, sizeof bytes);
  printf("syscall %ld\n", syscall(SYS_getrandom, bytes, sizeof bytes, 0));
  hex("bytes", bytes, sizeof bytes);
  void* heap = malloc(64);
  printf("heap %p stack %p\n", heap, (void*)bytes);
  free(heap);
  close(accept_one(listener));
  return 0;
}

/* A file closed by fclose, whose close no interposer sees (glibc's own), 50 times over, then a
 * listener: the number comes back, and each file's descriptor must have been let go. */
int fclosed_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 0; i < 50; ++i) {
    int fd = open("/dev/null", O_WRONLY);
    FILE* file = fdopen(fd, "w");
    fprintf(file, "%d\n", i);
    fclose(file);
  }
  const int listener = listen_on(8080);
  printf("listening\n");
  close(accept_one(listener));
  return 0;
}

/* _FORTIFY_SOURCE's read: a program built with it calls __read_chk with the buffer's size, and
 * glibc ends it (SIGABRT, "buffer overflow detected") when the read could pass it. Here the read
 * asks for 64 bytes and says the buffer holds 16 (it holds 64, so nothing is overrun either way). */
ssize_t __read_chk(int fd, void* buffer, size_t size, size_t buffer_size);

int fortify_mode(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int fd = open("/dev/zero", O_RDONLY);
  char buffer[64];
  printf("reading 64 bytes into a buffer said to hold 16\n");
  printf("read %zd\n", __read_chk(fd, buffer, sizeof buffer, 16));
  return 0;
}
