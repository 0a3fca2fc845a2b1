/*
 * Calls the typed macros of catalogs/header_types.yaml with arguments of
 * other (convertible) types: the notes must still carry the catalog's
 * sizes. Prints ENABLED/CLOCK counts for the tests.
 */
#include "pgtest_probes.h"

#include <stdio.h>
#include <stdlib.h>

enum pgtest_state { PGTEST_STATE_IDLE = 0, PGTEST_STATE_BUSY, PGTEST_STATE_DONE = 7 };
struct pgtest_obj { int x; };

static int g_clock_reads;

uint64_t pgtest_clock(void);
uint64_t pgtest_clock(void)
{
	g_clock_reads++;
	return 987654321;
}

static int cb(void *ctx) { (void)ctx; return 0; }
static void fp(int a, char *b) { (void)a; (void)b; }

int main(int argc, char **argv)
{
	struct pgtest_obj obj = { 1 };
	long wide = argc;          /* 8 bytes, passed to 1-, 2- and 4-byte arguments */
	int narrow = -argc;        /* 4 bytes, passed to 8-byte arguments */
	char text[32] = "hello";
	int i;
	int rounds = argc > 1 ? atoi(argv[1]) : 1;

	for (i = 0; i < rounds; i++) {
		PGTEST_NO_ARGS();
		PGTEST_INTEGERS(wide, wide, wide, wide, wide, wide, narrow, narrow, wide, narrow, narrow);
		PGTEST_OTHERS(text, PGTEST_STATE_DONE, &obj, &obj, cb, fp, 'x', 0x5u);
		PGTEST_TIMED(narrow);
		PGTEST_DTRACE_PROBE1_TICKS(timed, narrow);
		PGTEST_PGTEST(PGTEST_STATE_BUSY, narrow, wide);
	}
	printf("ENABLED %d\n", PGTEST_TIMED_ENABLED());
	printf("CLOCK %d\n", g_clock_reads);
	return 0;
}
