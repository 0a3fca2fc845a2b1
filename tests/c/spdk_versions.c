/*
 * One SPDK-shaped program at two versions against one catalog
 * (tests/catalogs/spdk_versions.yaml, which describes -DNEWER), built with
 * probegen's header or SPDK's own (tests/c/spdk_own_header): both must
 * compile with -Werror at both versions. Like SPDK's sources it fires
 * probes through the untyped SPDK_DTRACE_PROBE* macros only.
 *
 * The older version (no -DNEWER) drifts as SPDK releases do: it fires
 * nvmf_ns_change and nvmf_request_io_exec_path (in v25.09, gone in master)
 * that the catalog does not list, passes nvmf_ctrlr_destruct the subsystem
 * NQN master dropped, orders enum nvmf_tgt_state's two FINI_STOP states the
 * other way round, and does not fire nvmf_tgt_resume_polling (standing for
 * a probe added later).
 */
#include "spdk_internal/usdt.h"

#include <stdint.h>
#include <stdio.h>

enum nvmf_tgt_state {
	NVMF_TGT_INIT_NONE = 0,
	NVMF_TGT_RUNNING = 4,
#ifdef NEWER
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_FINI_STOP_LISTEN,
#else
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
#endif
	NVMF_TGT_STOPPED = 10,
};

struct spdk_nvmf_tgt {
	char name[256];
};

struct spdk_nvmf_subsystem {
	char subnqn[224];
};

struct spdk_nvmf_ctrlr {
	struct spdk_nvmf_subsystem *subsys;
	char hostnqn[224];
};

struct spdk_nvmf_qpair {
	struct spdk_nvmf_ctrlr *ctrlr;
	uint16_t qid;
};

volatile uint64_t g_clock = 1000;

uint64_t spdk_get_ticks(void)
{
	return g_clock++;
}

static volatile enum nvmf_tgt_state g_tgt_state;

__attribute__((noinline)) static void tgt_set_state(enum nvmf_tgt_state state)
{
	g_tgt_state = state;
	SPDK_DTRACE_PROBE1(nvmf_tgt_state, g_tgt_state);
}

__attribute__((noinline)) static void ctrlr_destruct(struct spdk_nvmf_ctrlr *ctrlr, uint64_t thread_id)
{
#ifdef NEWER
	SPDK_DTRACE_PROBE2_TICKS(nvmf_ctrlr_destruct, ctrlr, thread_id);
#else
	SPDK_DTRACE_PROBE3_TICKS(nvmf_ctrlr_destruct, ctrlr, ctrlr->subsys->subnqn, thread_id);
#endif
}

__attribute__((noinline)) static void poll_group_add(struct spdk_nvmf_qpair *qpair, uint64_t thread_id)
{
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_qpair, qpair, thread_id);
#ifndef NEWER
	SPDK_DTRACE_PROBE2(nvmf_request_io_exec_path, qpair, qpair->qid);
#endif
}

__attribute__((noinline)) static void subsystem_hosts(struct spdk_nvmf_subsystem *subsystem, const char *hostnqn)
{
	SPDK_DTRACE_PROBE2(nvmf_subsystem_add_host, subsystem->subnqn, hostnqn);
#ifndef NEWER
	SPDK_DTRACE_PROBE2(nvmf_ns_change, subsystem->subnqn, 1u);
#endif
}

__attribute__((noinline)) static void tgt_polling(struct spdk_nvmf_tgt *tgt)
{
#ifdef NEWER
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_resume_polling, tgt, tgt->name);
#else
	(void)tgt;
#endif
}

__attribute__((noinline)) static void ctrlr_reset(const char *name)
{
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reset, name);
}

int main(void)
{
	struct spdk_nvmf_tgt tgt = {"nvmf_tgt"};
	struct spdk_nvmf_subsystem subsystem = {"nqn.2016-06.io.spdk:cnode1"};
	struct spdk_nvmf_ctrlr ctrlr = {&subsystem, "nqn.2014-08.org.nvmexpress:uuid:host"};
	struct spdk_nvmf_qpair qpair = {&ctrlr, 1};

	tgt_set_state(NVMF_TGT_RUNNING);
	tgt_polling(&tgt);
	subsystem_hosts(&subsystem, ctrlr.hostnqn);
	poll_group_add(&qpair, 7);
	ctrlr_reset("Nvme0");
	ctrlr_destruct(&ctrlr, 7);
	tgt_set_state(NVMF_TGT_FINI_STOP_SUBSYSTEMS);
	printf("%d\n", (int)g_tgt_state);
	return 0;
}
