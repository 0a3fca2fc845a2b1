/*
 * SPDK's subsystem state changes on poll-group threads, for the picture of
 * a timeline in doc/tracing.md: the main thread asks for PAUSED, then
 * ACTIVE; each of three poll-group threads changes its state in turn (in a
 * time of its own), then the main thread's change is done. Probes and
 * arguments as SPDK's lib/nvmf passes them, through the header probegen
 * generates from probes.yaml. Prints READY, waits for a line on stdin.
 */
#define _GNU_SOURCE

#include "spdk_internal/usdt.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

enum spdk_nvmf_subsystem_state {
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0, SPDK_NVMF_SUBSYSTEM_ACTIVATING, SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING, SPDK_NVMF_SUBSYSTEM_PAUSED,
};

#define GROUPS 3
static char subnqn[224] = "nqn.2016-06.io.spdk:cnode1";
static pthread_barrier_t asked, done;
static volatile enum spdk_nvmf_subsystem_state requested;

uint64_t spdk_get_ticks(void)
{
	return 0;
}

static void *poll_group(void *arg)
{
	uint64_t thread_id = (uint64_t)(uintptr_t)arg;

	for (int change = 0; change < 2; change++) {
		pthread_barrier_wait(&asked);
		usleep(300 * (unsigned)thread_id);
		SPDK_DTRACE_PROBE3(nvmf_pg_change_state, subnqn, requested, thread_id);
		usleep(1000 + 700 * (unsigned)thread_id);
		SPDK_DTRACE_PROBE3(nvmf_pg_change_state_done, subnqn, requested, thread_id);
		pthread_barrier_wait(&done);
	}
	return NULL;
}

int main(void)
{
	enum spdk_nvmf_subsystem_state state = SPDK_NVMF_SUBSYSTEM_ACTIVE;
	pthread_t threads[GROUPS];
	char line[16];

	pthread_barrier_init(&asked, NULL, GROUPS + 1);
	pthread_barrier_init(&done, NULL, GROUPS + 1);
	for (uintptr_t i = 0; i < GROUPS; i++)
		pthread_create(&threads[i], NULL, poll_group, (void *)(i + 1));
	printf("READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int change = 0; change < 2; change++) {
		requested = change ? SPDK_NVMF_SUBSYSTEM_ACTIVE : SPDK_NVMF_SUBSYSTEM_PAUSED;
		SPDK_DTRACE_PROBE3(nvmf_subsystem_change_state, subnqn, requested, state);
		pthread_barrier_wait(&asked);
		pthread_barrier_wait(&done);
		SPDK_DTRACE_PROBE4(nvmf_subsystem_change_state_done, subnqn, requested, state, 0);
		state = requested;
		usleep(1000);
	}
	for (int i = 0; i < GROUPS; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
