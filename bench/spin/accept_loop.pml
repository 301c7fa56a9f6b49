/*
 * accept_loop.pml: an abstract model of loopsim's accept loop (realloop/loop.cpp, accept.cpp)
 * for SPIN, at bounded sizes. One door (the listener), no time, no request costs: only the
 * accept queue, the listener's edge-triggered readiness, the owed flag and the loop's passes.
 *
 * Parameters (spin -DNAME=VALUE -a accept_loop.pml):
 *   ARRIVALS  connections that arrive, at moments interleaved nondeterministically with the
 *             loop's steps (default 5)
 *   BATCH     R1: accepts per batch; 0 drains until EAGAIN (default 2)
 *   OWE       R2: 1, a batch stopped by its count leaves the door owed; 0, the sabotage
 *             "nothing owed" (loop.owe_unfinished_batch = false) (default 1)
 *
 * Two ways to check "every arrival is eventually accepted":
 *   safety (default): when nothing else can move (the arrivals are done and the loop's wait
 *     would block forever) `timeout` lets the loop assert !stranded, i.e. queue == 0; a
 *     stranded backlog is an assertion violation.
 *       spin -DOWE=0 -a accept_loop.pml && cc -O2 -DSAFETY -DNOCLAIM -o pan pan.c && ./pan
 *   liveness (-DLIVENESS): no timeout branch; the wait is a valid end state and the LTL claim
 *     below (`<> (accepted == ARRIVALS)`) is checked; a stranded backlog is an acceptance cycle
 *     (the final state, stutter-extended).
 *       spin -DLIVENESS -DOWE=0 -a accept_loop.pml && cc -O2 -o pan pan.c && ./pan -a
 */

#ifndef ARRIVALS
#define ARRIVALS 5
#endif
#ifndef BATCH
#define BATCH 2
#endif
#ifndef OWE
#define OWE 1
#endif

byte queue = 0;     /* the listener's accept queue (K9; never full at these sizes) */
bool edge = false;  /* the listener is on the poller's ready list (K3) */
bool owed = false;  /* R2: the last batch stopped by its count */
byte arrived = 0;   /* connections that completed their handshake */
byte accepted = 0;  /* connections the loop accepted */

/* The stranded state: a backlog, no event that will announce it, nothing owed. Once the
 * arrivals are done it lasts forever: the loop's wait blocks and nothing wakes it. */
#define stranded (queue > 0 && !edge && !owed)

/* K3: each connection completing its handshake queues on the listener and puts the listener
 * on the ready list if it is not already there; N arrivals before one wait give one event. */
active proctype arrivals() {
  do
  :: arrived < ARRIVALS -> atomic { queue++; arrived++; edge = true }
  :: else -> break
  od
}

/* The loop: wait, handle the pass's events (here only the listener's), then one batch for the
 * door if it was announced or is owed (R1), owed again only if the count stopped it (R2). */
active proctype loop() {
  bool ready;
  byte n;
  /* The wait. It does not block while owed (R2); otherwise it blocks until an event.
   * Harvesting takes the listener off the ready list (edge-triggered); K4: an item no longer
   * ready at harvest (its backlog emptied since) is dropped silently. The idle timeout's
   * wake-ups with no event change nothing and are left out. A loop blocked here is a valid
   * end state; whether it may block here for good is what the property decides. */
end_wait:
  do
  :: atomic { (edge || owed) -> ready = edge && queue > 0; edge = false };
     if
     :: ready || owed ->
          /* One batch: each accept is its own step, so arrivals interleave with it. */
          n = 0;
          do
          :: BATCH > 0 && n == BATCH ->
               owed = OWE; break            /* stopped by its count */
          :: (BATCH == 0 || n < BATCH) && queue > 0 ->
               atomic { queue--; accepted++; n++ }
          :: (BATCH == 0 || n < BATCH) && queue == 0 ->
               owed = false; break          /* EAGAIN: the backlog is drained */
          od
     :: else -> skip
     fi;
     ready = false; n = 0
#ifndef LIVENESS
  :: timeout -> assert(!stranded); break    /* blocked for good: nothing may be left queued */
#endif
  od
}

/* Every arrival is eventually accepted (ARRIVALS is finite, so this is the whole promise). */
ltl all_accepted { <> (accepted == ARRIVALS) }
