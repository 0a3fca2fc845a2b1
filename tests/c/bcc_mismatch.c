/*
 * A program whose probes differ from tests/catalogs/bcc_mismatch.yaml as
 * SPDK v25.09's do from master's catalog: ctrlr_destruct passes one more
 * argument; nvmf_tgt_state numbers FINI_STOP_LISTEN and FINI_STOP_SUBSYSTEMS
 * the other way round; key_set passes its int keylen as uint8_t at one site
 * and uint64_t at another (as memcached's nkey); the catalog's never_here
 * is not in it. Plain <sys/sdt.h>: the notes are what the program passes.
 * Two threads, pinned to CPUs 0 and 1, take turns firing tick (seq 0, 1,
 * ...) and now and then a busy span. Protocol of tests/helpers/tracing.py: READY,
 * a line on stdin, EXPECT lines in firing order, then DONE.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>

enum nvmf_tgt_state {
	NVMF_TGT_RUNNING = 4,
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
};

#define TICKS 400
static volatile int turn;  /* whose turn: the seq to fire next */
static int tids[2];

/* Each thread fires every other seq, spinning for its turn: hits of the two
 * CPUs a microsecond apart, faster than the tool reads its buffers. */
static void *ticker(void *arg)
{
	int me = (int)(intptr_t)arg;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(me, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);  /* may fail on one CPU: still two threads */
	tids[me] = gettid();
	for (uint64_t seq = (uint64_t)me; seq < TICKS; seq += 2) {
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != (int)seq)
			sched_yield();
		if (seq % 100 < 2) {
			DTRACE_PROBE(pgmis, busy_begin);
			usleep(200);
			DTRACE_PROBE(pgmis, busy_end);
		}
		DTRACE_PROBE1(pgmis, tick, seq);
		__atomic_store_n(&turn, (int)seq + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int main(void)
{
	static char subnqn[224];
	volatile uint8_t short_key = 200;
	volatile uint64_t long_key = 5000000000ull;
	volatile enum nvmf_tgt_state state = NVMF_TGT_FINI_STOP_LISTEN;
	static int ctrlr;
	pthread_t threads[2];
	char line[16];

	for (size_t i = 0; i < sizeof(subnqn) - 1; i++)
		subnqn[i] = (char)('a' + i % 26);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("EXPECT ctrlr_destruct ctrlr=%p thread_id=7\n", (void *)&ctrlr);
	DTRACE_PROBE3(pgmis, ctrlr_destruct, &ctrlr, (uint64_t)7, 1);
	printf("EXPECT tgt_state state=FINI_STOP_LISTEN\n");
	DTRACE_PROBE1(pgmis, tgt_state, state);
	printf("EXPECT key_set keylen=200\n");
	DTRACE_PROBE1(pgmis, key_set, short_key);
	printf("EXPECT key_set keylen=5000000000\n");
	DTRACE_PROBE1(pgmis, key_set, long_key);
	printf("EXPECT subsystem_add subnqn=%s\n", subnqn);
	DTRACE_PROBE1(pgmis, subsystem_add, subnqn);
	for (int i = 0; i < 2; i++)
		pthread_create(&threads[i], NULL, ticker, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	for (int seq = 0; seq < TICKS; seq++) {
		if (seq % 100 < 2)
			printf("EXPECT busy_begin\nSPAN busy tid=%d\nEXPECT busy_end\n", tids[seq % 2]);
		printf("EXPECT tick seq=%d\n", seq);
	}
	printf("DONE\n");
	return 0;
}
