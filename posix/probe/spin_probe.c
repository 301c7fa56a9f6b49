/* The probe's spin mode: threads that wait for each other in user space, on an atomic flag, with
 * no call between: Linux preempts the one that spins, and the seam must too (posix/threads.cpp). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "probe.h"

static atomic_int lock_word;
static atomic_int flag;

/* Spins until the lock is free, then takes it: haproxy's locks are such. */
static void spin_lock(void) {
  int expected = 0;
  while (!atomic_compare_exchange_weak(&lock_word, &expected, 1)) expected = 0;
}

static void* spinner(void* unused) {
  (void)unused;
  spin_lock();  /* main holds it, asleep: only a preemption lets main run again */
  printf("the thread took the lock\n");
  atomic_store(&lock_word, 0);
  usleep(1000);
  atomic_store(&flag, 1);  /* main spins on this meanwhile */
  return NULL;
}

int spins_mode(int alone) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int listener = alone ? -1 : listen_on(8080);
  spin_lock();
  pthread_t thread;
  pthread_create(&thread, NULL, spinner, NULL);
  usleep(5000);  /* asleep holding the lock, as a thread blocked in a call while holding one */
  printf("main lets the lock go\n");
  atomic_store(&lock_word, 0);
  while (!atomic_load(&flag)) {
  }
  printf("main saw the flag\n");
  pthread_join(thread, NULL);
  if (listener >= 0) close(accept_one(listener));
  return 0;
}
