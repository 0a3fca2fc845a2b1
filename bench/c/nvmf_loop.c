/*
 * Fires eight of SPDK's nvmf probes (the span pairs of probes.yaml: state
 * changes, qpairs joining and leaving a poll group, controllers created and
 * destroyed) ITERATIONS times, as SPDK's sources pass their arguments,
 * through the header probegen generates from probes.yaml.
 *
 * Prints READY, waits for a line on stdin (the benchmark's tracer is
 * attached by then), fires, and prints "HITS n NS t": the hits fired and
 * the nanoseconds they took, by CLOCK_MONOTONIC.
 */
#define _POSIX_C_SOURCE 200809L

#include "spdk_internal/usdt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum spdk_nvmf_subsystem_state {
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0, SPDK_NVMF_SUBSYSTEM_ACTIVATING, SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING, SPDK_NVMF_SUBSYSTEM_PAUSED,
};
struct spdk_nvmf_subsystem { char subnqn[224]; enum spdk_nvmf_subsystem_state state; };
struct spdk_nvmf_ctrlr { struct spdk_nvmf_subsystem *subsys; char hostnqn[224]; };
struct spdk_nvmf_qpair { uint16_t qid; struct spdk_nvmf_ctrlr *ctrlr; };

uint64_t spdk_get_ticks(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static struct spdk_nvmf_subsystem g_subsystem = { "nqn.2016-06.io.spdk:cnode1", SPDK_NVMF_SUBSYSTEM_ACTIVE };
static struct spdk_nvmf_ctrlr g_ctrlr = { &g_subsystem, "nqn.2014-08.org.nvmexpress:uuid:host-1" };
static struct spdk_nvmf_qpair g_qpair = { 3, &g_ctrlr };

/* Keep the optimiser from turning the pointers into symbol operands. */
#define LAUNDER(p) __asm__ volatile("" : "+r"(p))
#define PROBES_PER_ITERATION 8

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 100000;
	struct spdk_nvmf_subsystem *subsystem = &g_subsystem;
	struct spdk_nvmf_ctrlr *ctrlr = &g_ctrlr;
	struct spdk_nvmf_qpair *qpair = &g_qpair;
	struct timespec start, end;
	char line[16];

	LAUNDER(subsystem);
	LAUNDER(ctrlr);
	LAUNDER(qpair);
	printf("READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < iterations; i++) {
		uint64_t tid = (uint64_t)(i & 3);
		enum spdk_nvmf_subsystem_state requested = (i & 1) ? SPDK_NVMF_SUBSYSTEM_PAUSED : SPDK_NVMF_SUBSYSTEM_ACTIVE;

		SPDK_DTRACE_PROBE3(nvmf_subsystem_change_state, subsystem->subnqn, requested, subsystem->state);
		SPDK_DTRACE_PROBE3(nvmf_pg_change_state, subsystem->subnqn, requested, tid);
		SPDK_DTRACE_PROBE3(nvmf_pg_change_state_done, subsystem->subnqn, requested, tid);
		SPDK_DTRACE_PROBE4(nvmf_subsystem_change_state_done, subsystem->subnqn, requested, subsystem->state, 0);
		SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_qpair, qpair, tid);
		SPDK_DTRACE_PROBE3_TICKS(nvmf_ctrlr_create, ctrlr, subsystem->subnqn, tid);
		SPDK_DTRACE_PROBE2_TICKS(nvmf_ctrlr_destruct, ctrlr, tid);
		SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_remove_qpair, qpair, tid);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("HITS %ld NS %lld\n", iterations * PROBES_PER_ITERATION,
	       (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec));
	return 0;
}
