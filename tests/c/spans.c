/*
 * Fires the spans of tests/catalogs/spans.yaml with known delays, through
 * the header probegen generates for it (spans.h).
 *
 * Waits for a line on stdin (the test writes one once the tracer is
 * attached). Then two threads each run ROUNDS rounds of: work_begin; two
 * requests in flight at once, a READ ended after SHORT_US and a WRITE
 * ended after LONG_US (status 0 and 1); work_end after WORK_US. Request
 * ids and tags are distinct per thread and round, so only a span matched
 * by its key measures the right delay. Then one req_done and one work_end
 * without a start. Prints "FIRED PROBE COUNT" per probe; per request and
 * piece of work, "SPAN NAME BY INNER OUTER": what its own clock (the one
 * bpftrace's nsecs reads) measured in microseconds just inside and just
 * outside the two probes, so the tracer's value lies between; then "DONE".
 */
#define _POSIX_C_SOURCE 200809L

#include "spans.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum req_kind { KIND_READ, KIND_WRITE };

#define THREADS 2
#define SHORT_US 1500   /* [1024, 2048) */
#define LONG_US 12000   /* [8192, 16384) */
#define WORK_US 24000   /* [16384, 32768) */

#define MAX_ROUNDS 1000

static int g_rounds = 10;

struct measured {
	long read_inner, read_outer, write_inner, write_outer, work_inner, work_outer;
};

static struct measured g_measured[THREADS][MAX_ROUNDS];

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static long us_between(const struct timespec *from, const struct timespec *to)
{
	return (to->tv_sec - from->tv_sec) * 1000000L + (to->tv_nsec - from->tv_nsec) / 1000;
}

static void sleep_until(const struct timespec *start, long us)
{
	struct timespec deadline = *start;

	deadline.tv_nsec += (us % 1000000) * 1000;
	deadline.tv_sec += us / 1000000 + deadline.tv_nsec / 1000000000;
	deadline.tv_nsec %= 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) != 0) {
	}
}

static void *worker(void *arg)
{
	uint64_t thread = (uint64_t)(uintptr_t)arg;
	char tag_read[32], tag_write[32];

	for (int round = 0; round < g_rounds; round++) {
		uint64_t id_read = thread * 1000 + (uint64_t)round * 2, id_write = id_read + 1;
		struct timespec begun;

		snprintf(tag_read, sizeof(tag_read), "t%llu-r%d-read", (unsigned long long)thread, round);
		snprintf(tag_write, sizeof(tag_write), "t%llu-r%d-write", (unsigned long long)thread, round);
		struct timespec w0, w1, s0, s1, r0, r1, x0, x1, e0, e1;
		struct measured *m = &g_measured[thread - 1][round];

		now(&begun);
		w0 = begun;
		SPANTEST_WORK_BEGIN();
		now(&w1);
		now(&s0);
		SPANTEST_REQ_START(id_read, KIND_READ, tag_read);
		SPANTEST_REQ_START(id_write, KIND_WRITE, tag_write);
		now(&s1);
		sleep_until(&begun, SHORT_US);
		now(&r0);
		SPANTEST_REQ_DONE(id_read, tag_read, 0);
		now(&r1);
		sleep_until(&begun, LONG_US);
		now(&x0);
		SPANTEST_REQ_DONE(id_write, tag_write, 1);
		now(&x1);
		sleep_until(&begun, WORK_US);
		now(&e0);
		SPANTEST_WORK_END();
		now(&e1);
		m->read_inner = us_between(&s1, &r0);
		m->read_outer = us_between(&s0, &r1);
		m->write_inner = us_between(&s1, &x0);
		m->write_outer = us_between(&s0, &x1);
		m->work_inner = us_between(&w1, &e0);
		m->work_outer = us_between(&w0, &e1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[THREADS];
	char line[16];

	if (argc > 1)
		g_rounds = atoi(argv[1]);
	if (g_rounds < 1 || g_rounds > MAX_ROUNDS)
		return 2;
	printf("READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&threads[t], NULL, worker, (void *)(t + 1));
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	SPANTEST_REQ_DONE(999999, "stray", 2);  /* an end without a start */
	SPANTEST_WORK_END();
	for (int t = 0; t < THREADS; t++) {
		for (int round = 0; round < g_rounds; round++) {
			struct measured *m = &g_measured[t][round];

			printf("SPAN request READ %ld %ld\n", m->read_inner, m->read_outer);
			printf("SPAN request WRITE %ld %ld\n", m->write_inner, m->write_outer);
			printf("SPAN request_tagged 0 %ld %ld\n", m->read_inner, m->read_outer);
			printf("SPAN request_tagged 1 %ld %ld\n", m->write_inner, m->write_outer);
			printf("SPAN work - %ld %ld\n", m->work_inner, m->work_outer);
		}
	}
	printf("FIRED req_start %d\n", THREADS * g_rounds * 2);
	printf("FIRED req_done %d\n", THREADS * g_rounds * 2 + 1);
	printf("FIRED work_begin %d\n", THREADS * g_rounds);
	printf("FIRED work_end %d\n", THREADS * g_rounds + 1);
	printf("DONE\n");
	fflush(stdout);
	return 0;
}
