/*
 * Probes fired as SPDK v25.09 fires them, against master's catalog
 * (probes.yaml), with raw <sys/sdt.h>: nvmf_ctrlr_destruct passes the
 * subsystem's NQN before thread_id (3 arguments where the catalog has 2);
 * enum nvmf_tgt_state has FINI_STOP_LISTEN before FINI_STOP_SUBSYSTEMS;
 * nvmf_subsystem_change_state_done passes status from a 1-byte site and an
 * 8-byte one (the catalog: int); every other catalog probe is absent.
 * Then two threads fire nvmf_tgt_state at once.
 *
 * Protocol as tracing_types.c: READY, a line on stdin, "EXPECT <line>"
 * before each hit (the threads': after them), DONE.
 */
#define _GNU_SOURCE
#include <sys/sdt.h>

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum nvmf_tgt_state {
	NVMF_TGT_INIT_NONE = 0,
	NVMF_TGT_INIT_CREATE_TARGET,
	NVMF_TGT_INIT_CREATE_POLL_GROUPS,
	NVMF_TGT_INIT_START_SUBSYSTEMS,
	NVMF_TGT_RUNNING,
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_FINI_DESTROY_SUBSYSTEMS,
	NVMF_TGT_FINI_DESTROY_POLL_GROUPS,
	NVMF_TGT_FINI_DESTROY_TARGET,
	NVMF_TGT_STOPPED,
	NVMF_TGT_ERROR,
};

enum spdk_nvmf_subsystem_state {
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0,
	SPDK_NVMF_SUBSYSTEM_ACTIVATING,
	SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING,
	SPDK_NVMF_SUBSYSTEM_PAUSED,
};

/* Hide values from the optimiser: register operands, as in SPDK. */
#define LAUNDER(v) __asm__ volatile("" : "+r"(v))

#define THREAD_HITS 2000

static char g_nqn[224];
static int g_ctrlr;

static void tgt_state(enum nvmf_tgt_state state, const char *name)
{
	int value = state;

	LAUNDER(value);
	printf("EXPECT nvmf_tgt_state state=%s\n", name);
	DTRACE_PROBE2(spdk, nvmf_tgt_state, 0, value);
}

/* Each thread fires its hits as fast as it can, on a CPU of its own where
 * there are two: each CPU's hits reach the tracer through its own buffer. */
static void *fire(void *arg)
{
	int value = (int)(intptr_t)arg;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(value == NVMF_TGT_RUNNING ? 0 : 1, &cpus);
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	for (int i = 0; i < THREAD_HITS; i++) {
		LAUNDER(value);
		DTRACE_PROBE2(spdk, nvmf_tgt_state, 0, value);
	}
	return NULL;
}

int main(void)
{
	char line[16];
	uint64_t ticks = 777, thread_id = 12;
	void *ctrlr = &g_ctrlr;
	const char *subnqn = g_nqn;
	int8_t small = -5;
	int64_t big = 5000000000LL;
	int requested = SPDK_NVMF_SUBSYSTEM_ACTIVE, original = SPDK_NVMF_SUBSYSTEM_PAUSED;
	pthread_t threads[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 223; i++)
		g_nqn[i] = "nqn.2016-06.io.spdk:cnode"[i % 25];
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	tgt_state(NVMF_TGT_RUNNING, "RUNNING");
	tgt_state(NVMF_TGT_FINI_STOP_LISTEN, "FINI_STOP_LISTEN");
	tgt_state(NVMF_TGT_FINI_STOP_SUBSYSTEMS, "FINI_STOP_SUBSYSTEMS");
	LAUNDER(ticks);
	LAUNDER(ctrlr);
	LAUNDER(subnqn);
	LAUNDER(thread_id);
	printf("EXPECT nvmf_ctrlr_destruct arg0=%lu arg1=%lu arg2=%lu arg3=%lu\n", (unsigned long)ticks,
	       (unsigned long)ctrlr, (unsigned long)subnqn, (unsigned long)thread_id);
	DTRACE_PROBE4(spdk, nvmf_ctrlr_destruct, ticks, ctrlr, subnqn, thread_id);
	LAUNDER(small);
	LAUNDER(big);
	LAUNDER(requested);
	LAUNDER(original);
	printf("EXPECT nvmf_subsystem_change_state_done subnqn=%s requested_state=ACTIVE original_state=PAUSED status=-5\n", g_nqn);
	DTRACE_PROBE5(spdk, nvmf_subsystem_change_state_done, 0, subnqn, requested, original, small);
	printf("EXPECT nvmf_subsystem_change_state_done subnqn=%s requested_state=ACTIVE original_state=PAUSED status=5000000000\n", g_nqn);
	DTRACE_PROBE5(spdk, nvmf_subsystem_change_state_done, 0, subnqn, requested, original, big);
	pthread_create(&threads[0], NULL, fire, (void *)(intptr_t)NVMF_TGT_RUNNING);
	pthread_create(&threads[1], NULL, fire, (void *)(intptr_t)NVMF_TGT_STOPPED);
	pthread_join(threads[0], NULL);
	pthread_join(threads[1], NULL);
	for (int i = 0; i < THREAD_HITS; i++)
		printf("EXPECT nvmf_tgt_state state=RUNNING\nEXPECT nvmf_tgt_state state=STOPPED\n");
	printf("DONE\n");
	return 0;
}
