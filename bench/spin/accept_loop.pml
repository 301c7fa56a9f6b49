/*
 * accept_loop.pml: loopsim's accept loop (realloop/loop.cpp, accept.cpp) for SPIN, asking the
 * question `loopsim explore` asks of bench/spin/accept-free.toml.
 *
 * The world: ARRIVALS connections, the i-th free to arrive at any moment from tick i to tick
 * i + WIDTH (loopsim: a window from 1 + 10 i ms to 41 + 10 i ms); one held keep-alive
 * connection whose request is free to arrive at any moment up to the last tick. Time is a tick
 * counter that moves only while the loop waits with nothing to do, and never past the end of a
 * window whose arrival is still out: as virtual time moves in loopsim only when every thread
 * blocks, and a window's end forces its happening.
 *
 * The loop, one kernel call a step, so that SPIN interleaves an arrival wherever loopsim lands
 * one between two calls: the wait; the pass's events (the held connection's request: read, then
 * the answer written); then one batch for the listener if it was announced or is owed (R1), each
 * accept followed by the connection's admission as the loop does it (watch, the eager read of
 * the request, the answer, the close); owed again only if the count stopped it (R2); the wait
 * does not block while owed. Arrivals are taken in window order: of arrivals free at one moment,
 * the one whose window ends first (loopsim lands interchangeable clients so, and so may SPIN).
 *
 * Parameters (spin -DNAME=VALUE -a accept_loop.pml):
 *   ARRIVALS  connections (default 8); BATCH: R1's accepts per batch, 0 until EAGAIN (3);
 *   OWE       R2: 1 the rule, 0 the sabotage (loop.owe_unfinished_batch = false) (1);
 *   WIDTH     ticks an arrival's window spans (4)
 *
 * The property: when nothing else can move (every arrival and request has come, time has run
 * out, and the loop's wait would block forever), nothing waits in the accept queue and every
 * request is answered. SPIN's `timeout` is that moment; a stranded backlog fails the assertion.
 *   spin -DOWE=0 -a accept_loop.pml && cc -O2 -DSAFETY -DNOCLAIM -o pan pan.c && ./pan
 */

#ifndef ARRIVALS
#define ARRIVALS 8
#endif
#ifndef BATCH
#define BATCH 3
#endif
#ifndef OWE
#define OWE 1
#endif
#ifndef WIDTH
#define WIDTH 4
#endif
#define LAST (ARRIVALS + WIDTH)  /* the held request's window ends with the last arrival's */

byte clock = 0;
byte queue = 0;          /* the listener's accept queue (K9; never full at these sizes) */
bool ledge = false;      /* the listener is on the poller's ready list (K3) */
bool owed = false;       /* R2: the last batch stopped by its count */
byte arrived = 0;        /* connections whose handshake completed */
byte answered = 0;       /* arrivals answered and closed */
bool held_sent = false;  /* the held connection's request has arrived */
bool hedge = false;      /* ...and the held connection is on the ready list */
bool held_answered = false;
bool waiting = false;    /* the loop is in its wait */

/* K3: a connection completing its handshake queues on the listener and puts the listener on the
 * ready list if it is not there; N arrivals before one wait are one event. */
active proctype arrivals() {
  do
  :: atomic { arrived < ARRIVALS && arrived <= clock -> queue++; arrived++; ledge = true }
  :: arrived == ARRIVALS -> break
  od
}

active proctype held() {
  atomic { held_sent = true; hedge = true }
}

/* Time moves while the loop waits with nothing to wake it, up to the next window's end. */
active proctype ticker() {
  do
  :: atomic {
       waiting && !ledge && !hedge && !owed && clock < LAST &&
       (arrived == ARRIVALS || clock < arrived + WIDTH) && (held_sent || clock < LAST - 1) ->
       clock++
     }
  :: clock == LAST -> break
  od
}

active proctype loop() {
  bool lready, hready;
  byte n;
end_wait:
  do
  :: waiting = true;
     if
     :: atomic {
          (ledge || hedge || owed) ->
          waiting = false;
          /* K4: an item no longer ready at harvest is dropped */
          lready = ledge && queue > 0; ledge = false;
          hready = hedge; hedge = false
        }
     :: timeout ->
          /* blocked for good: nothing may be left queued or unanswered */
          assert(queue == 0 && answered == arrived && held_answered);
          break
     fi;
     /* the pass's events: the held connection's request is read, then answered */
     if
     :: hready -> skip;                   /* read */
                  held_answered = true;   /* write */
                  hready = false
     :: else -> skip
     fi;
     /* R1: one batch after the events, if announced or owed */
     if
     :: lready || owed ->
          n = 0;
          do
          :: BATCH > 0 && n == BATCH -> owed = OWE; break   /* stopped by its count */
          :: (BATCH == 0 || n < BATCH) && queue > 0 ->
               queue--; n++;              /* accept */
               skip;                      /* watch */
               skip;                      /* the eager read: the request */
               skip;                      /* write the answer */
               answered++                 /* close */
          :: (BATCH == 0 || n < BATCH) && queue == 0 ->
               owed = false; break        /* EAGAIN: drained */
          od
     :: else -> skip
     fi;
     lready = false; n = 0
  od
}
