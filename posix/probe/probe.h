/* What the probe's sources share (posix/probe/seam_probe.c holds main()). */
#pragma once

/* Listens on 127.0.0.1:port, non-blocking; exits 1 if it cannot. */
int listen_on(int port);
/* Waits for a connection and accepts it. */
int accept_one(int listener);

/* posix/probe/signal_probe.c: SIGPIPE as Linux raises it, and the waits for signals. With
 * `alone`, natively: no listener. */
int sigpipe_mode(int alone);
int sigpipe_dies_mode(int alone);
int signal_waits_mode(int alone);
int timers_mode(int alone);
int signal_thread_mode(int alone);
int mask_thread_mode(int alone);
int raise_thread_mode(int alone);
int lock_signal_mode(int alone);
int thread_kill_mode(int alone, int how);
int mask_thread_dies_mode(int alone);
int mask_thread_waits_mode(int alone);
int signalfd_mode(int alone);
int alarm_dies_mode(int alone);
int reraise_mode(void);

/* posix/probe/process_probe.c: children as servers start them, and what the seam refuses of
 * them. */
int children_mode(int alone);
int child_refused_mode(const char* what);
int child_serves_mode(int mute);

/* posix/probe/socket_probe.c: an IPv6 listener, and a CPU-time timer. */
int families_mode(int alone);
int sndbuf_mode(void);
int datagrams_mode(void);

/* posix/probe/spin_probe.c: threads that spin on each other in user space. */
int spins_mode(int alone);

/* posix/probe/entropy_probe.c: getrandom's bytes, and where memory lies. */
int entropy_mode(void);
int fclosed_mode(void);
int fortify_mode(void);
int cond_clock_mode(int alone);

/* posix/probe/raw_probe.c: a server whose system calls are its own, never libc's. */
int raw_mode(int alone);
/* A SIGTERM handler with SA_ONSTACK, the signal blocked by a raw rt_sigprocmask. */
int onstack_mode(void);
/* bench/seam_overhead.sh: `count` clock reads, trapped ("raw") or interposed ("libc"). */
int calls_mode(const char* how, long count);
