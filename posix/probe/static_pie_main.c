// A statically linked, position-independent program (static-pie), which the seam does not
// load: the tests check that it is refused by name. It does nothing.
int main(void) { return 0; }
