/*
 * accept_counting.pml: the anchors' question (shared/anchors/accept_loop.pml) in this project's
 * own Promela, for bench/explore_vs_spin.sh --question anchor.
 *
 * A counting abstraction of the accept loop of R1-R2: connections are counters, not records.
 * Each of B clients connects at any step; each accepted client sends its one request at any
 * later step, or (IDLE=1) the clients still silent may stay silent for good. The loop: a wait
 * (blocking unless the door is owed), the pass's events, then at most BATCH accepts if the
 * listener was announced or the door is owed; a batch stopped by its count owes the door (R2).
 *
 * The same -D names as the anchor, for the same runs:
 *   B      clients (default 4)           BATCH  accepts per batch (2)
 *   OWED   1 the rule, 0 the sabotage    IDLE   1 silent clients may stay silent (1)
 *
 * The property: when nothing can move (SPIN's timeout), the accept queue is empty.
 *   spin -a -DB=8 -DBATCH=3 -DOWED=1 accept_counting.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *
 * It is written apart from the anchor, statement by statement, so its state counts differ from
 * the anchor's: SPIN counts program counters too, and this model takes each kernel call of a
 * batch as one atomic step (accept and its bookkeeping), the events of a pass as one step, and
 * merges the wait's harvest into the wake-up. What it counts is otherwise the anchor's.
 */

#ifndef B
#define B 4
#endif
#ifndef BATCH
#define BATCH 2
#endif
#ifndef OWED
#define OWED 1
#endif
#ifndef IDLE
#define IDLE 1
#endif

byte outside = B;     /* clients not connected yet */
byte queue = 0;       /* handshakes done, waiting in the accept queue */
bool announced = false; /* the listener is on the ready list (edge-triggered) */
byte quiet = 0;       /* accepted, request not sent yet */
byte arrived = 0;     /* request sent: the connection is on the ready list */
bool owed = false;    /* R2 */

active proctype connecting()
{
end_connecting:
  do
  :: atomic { outside > 0 -> outside--; queue++; announced = true }
  od
}

active proctype sending()
{
end_sending:
  do
  :: atomic { quiet > 0 -> quiet--; arrived++ }
#if IDLE
  :: break
#endif
  od
}

active proctype loop()
{
  bool door;
  byte taken;
end_wait:
  do
  :: /* the wait: returns at once while owed, else when something is ready */
     atomic {
       (owed || announced || arrived > 0) ->
       door = announced || owed; announced = false;
       taken = arrived; arrived = 0
     };
     /* the pass's events: each ready connection is read and answered */
     taken = 0;
     /* R1: one batch, if announced or owed */
     if
     :: door ->
        byte n = 0;
        do
        :: atomic { n < BATCH && queue > 0 -> queue--; quiet++; n++ }
        :: n < BATCH && queue == 0 -> owed = false; break
        :: n == BATCH -> owed = OWED; break
        od;
        n = 0
     :: else -> skip
     fi;
     door = false
  od
}

active proctype judge()
{
end_judge:
  timeout -> assert(queue == 0)
}
