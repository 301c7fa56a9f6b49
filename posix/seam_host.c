// loopsim_seam_host: the process a statically linked target runs in. loopsim starts it with
// the seam preloaded and the program's path in LOOPSIM_SEAM_LOAD; the seam maps the program
// into this process and runs it in place of this main() (posix/loaded.cpp), which runs only
// where the seam is absent.
#include <stdio.h>

int main(int argc, char** argv) {
  fprintf(stderr,
          "%s: runs a statically linked program under loopsim's seam, and only as loopsim starts it "
          "(docs/targets.md)\n",
          argc > 0 ? argv[0] : "loopsim_seam_host");
  return 2;
}
