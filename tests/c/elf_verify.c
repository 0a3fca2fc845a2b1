/*
 * Fires the probes of tests/test_verify.py's catalog through the
 * generated header; each DRIFT_* macro builds a binary that disagrees
 * with the catalog in one way, as real drift does.
 */
#include "pgtest_usdt.h"

#include <stdint.h>

struct qp {
	uint16_t qid;
};

/* Not inlined into a constant: a clock, like spdk_get_ticks(), is read at run time. */
volatile uint64_t pg_clock = 42;

__attribute__((noinline)) uint64_t pg_ticks(void)
{
	return pg_clock;
}

#ifdef PG_LIBRARY
void pg_fire(struct qp *qp, const char *name, int state);
void pg_fire(struct qp *qp, const char *name, int state)
#else
__attribute__((noinline)) static void pg_fire(struct qp *qp, const char *name, int state)
#endif
{
#if defined(DRIFT_TYPES)
	/* The untyped macros pass what the expression is: an int qid, a long state. */
	PGTEST_DTRACE_PROBE2_TICKS(qpair_add, qp, (int)qp->qid);
	PGTEST_DTRACE_PROBE3(state_change, name, (long)state, 7u);
#elif defined(DRIFT_ARG0)
	/* A ticks probe fired through the non-ticks macro: arg0 is 0, not the clock. */
	PGTEST_DTRACE_PROBE2(qpair_add, qp, qp->qid);
	PGTEST_PROBE_STATE_CHANGE(name, state, 7u);
#elif defined(DRIFT_COUNT)
	PGTEST_DTRACE_PROBE1_TICKS(qpair_add, qp);
	PGTEST_PROBE_STATE_CHANGE(name, state, 7u);
#else
	PGTEST_PROBE_QPAIR_ADD(qp, qp->qid);
	PGTEST_PROBE_STATE_CHANGE(name, state, 7u);
#endif
#ifndef DRIFT_MISSING
	PGTEST_PROBE_TICK();
#endif
#ifdef DRIFT_EXTRA
	/* A probe the catalog does not list compiles all the same (as with SPDK's header). */
	PGTEST_DTRACE_PROBE1(secret, state);
#endif
}

#ifndef PG_LIBRARY
int main(int argc, char **argv)
{
	struct qp qp = {(uint16_t)argc};
	pg_fire(&qp, argv[0], argc);
	return 0;
}
#endif
