/*
 * Fires every SPDK probe the way SPDK's sources do: the same macros and
 * argument expressions (struct members, char arrays, enums, thread ids),
 * with stand-in structs. Built with USDT on and off by the tests.
 *
 * Prints "ENABLED <n>" (how many typed _ENABLED() checks are true) and
 * "EVALUATED <n>" (how many probe arguments were evaluated) so tests can
 * tell a compiled-out build evaluated nothing.
 */
#include "spdk_internal/usdt.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*spdk_event_fn)(void *arg1, void *arg2);
typedef void (*spdk_msg_fn)(void *ctx);
typedef int (*spdk_poller_fn)(void *ctx);
typedef int (*spdk_interrupt_fn)(void *ctx);

enum spdk_nvmf_subsystem_state {
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0,
	SPDK_NVMF_SUBSYSTEM_ACTIVATING,
	SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING,
	SPDK_NVMF_SUBSYSTEM_PAUSED,
	SPDK_NVMF_SUBSYSTEM_RESUMING,
	SPDK_NVMF_SUBSYSTEM_DEACTIVATING,
	SPDK_NVMF_SUBSYSTEM_NUM_STATES,
};

enum spdk_nvme_transport_type {
	SPDK_NVME_TRANSPORT_PCIE = 256,
	SPDK_NVME_TRANSPORT_RDMA = 1,
	SPDK_NVME_TRANSPORT_FC = 2,
	SPDK_NVME_TRANSPORT_TCP = 3,
	SPDK_NVME_TRANSPORT_VFIOUSER = 1024,
	SPDK_NVME_TRANSPORT_CUSTOM = 4096,
	SPDK_NVME_TRANSPORT_CUSTOM_FABRICS = 4097,
};

enum nvmf_tgt_state {
	NVMF_TGT_INIT_NONE = 0,
	NVMF_TGT_INIT_CREATE_TARGET,
	NVMF_TGT_INIT_CREATE_POLL_GROUPS,
	NVMF_TGT_INIT_START_SUBSYSTEMS,
	NVMF_TGT_RUNNING,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_FINI_DESTROY_SUBSYSTEMS,
	NVMF_TGT_FINI_DESTROY_POLL_GROUPS,
	NVMF_TGT_FINI_DESTROY_TARGET,
	NVMF_TGT_STOPPED,
	NVMF_TGT_ERROR,
};

struct spdk_event { spdk_event_fn fn; void *arg1; void *arg2; };
struct spdk_msg { spdk_msg_fn fn; void *arg; };
struct spdk_poller { spdk_poller_fn fn; void *arg; };
struct spdk_interrupt { char name[256]; int efd; spdk_interrupt_fn fn; void *arg; };
struct spdk_nvmf_transport { int dummy; };
struct spdk_nvmf_tgt { char name[256]; };
struct spdk_nvmf_subsystem { char subnqn[224]; enum spdk_nvmf_subsystem_state state; };
struct spdk_nvmf_ctrlr { struct spdk_nvmf_subsystem *subsys; char hostnqn[224]; };
struct spdk_nvmf_qpair { uint16_t qid; struct spdk_nvmf_ctrlr *ctrlr; };
struct spdk_nvmf_request { struct spdk_nvmf_qpair *qpair; };
struct spdk_nvmf_poll_group { int dummy; };
struct spdk_nvmf_host { char nqn[224]; };
struct spdk_nvme_transport_id { enum spdk_nvme_transport_type trtype; char traddr[257]; char trsvcid[33]; };
struct spdk_nvmf_ns { uint32_t nsid; };
struct spdk_scheduler_thread_info { uint32_t lcore; uint64_t thread_id; };
struct spdk_scheduler_core_info { uint64_t total_idle_tsc; uint32_t lcore; };

static int g_evaluated;

/* Each argument goes through this, so a compiled-out build shows 0. */
#define EV(x) (g_evaluated++, (x))

uint64_t spdk_get_ticks(void) { return 1234567; }
static uint64_t spdk_thread_get_id(void) { return 7; }

static void event_fn(void *a, void *b) { (void)a; (void)b; }
static void msg_fn(void *ctx) { (void)ctx; }
static int poller_fn(void *ctx) { (void)ctx; return 0; }

int main(void)
{
	struct spdk_event event = { event_fn, (void *)0x11, (void *)0x22 };
	struct spdk_msg msg = { msg_fn, (void *)0x33 };
	struct spdk_poller poller = { poller_fn, (void *)0x44 };
	struct spdk_interrupt intr = { "intr0", 5, poller_fn, (void *)0x55 };
	struct spdk_nvmf_transport transport = { 0 };
	struct spdk_nvmf_tgt tgt = { "nvmf_tgt" };
	struct spdk_nvmf_subsystem subsystem = { "nqn.2016-06.io.spdk:cnode1", SPDK_NVMF_SUBSYSTEM_ACTIVE };
	struct spdk_nvmf_ctrlr ctrlr = { &subsystem, "nqn.2014-08.org.nvmexpress:uuid:host" };
	struct spdk_nvmf_qpair qpair = { 3, &ctrlr };
	struct spdk_nvmf_request req = { &qpair };
	struct spdk_nvmf_poll_group group = { 0 };
	struct spdk_nvmf_host host = { "nqn.2014-08.org.nvmexpress:uuid:other" };
	struct spdk_nvme_transport_id trid = { SPDK_NVME_TRANSPORT_TCP, "127.0.0.1", "4420" };
	struct spdk_nvmf_ns ns = { 9 };
	struct spdk_scheduler_thread_info thread_info = { 2, 7 };
	struct spdk_scheduler_core_info cores_info[4] = { { 100, 0 }, { 200, 1 }, { 300, 2 }, { 400, 3 } };
	const char *hostnqn = host.nqn;
	char *name = (char *)"Nvme0";
	enum spdk_nvmf_subsystem_state requested_state = SPDK_NVMF_SUBSYSTEM_PAUSED;
	enum spdk_nvmf_subsystem_state original_state = SPDK_NVMF_SUBSYSTEM_ACTIVE;
	enum nvmf_tgt_state g_tgt_state = NVMF_TGT_RUNNING;
	uint16_t qid = 4;
	uint32_t nsid = 1, flags = 0x5, dst_core = 3, cores_count = 4, i = 2;
	int status = -22, ref = 1;

	SPDK_DTRACE_PROBE3(event_exec, EV(event.fn), EV(event.arg1), EV(event.arg2));
	SPDK_DTRACE_PROBE2(msg_exec, EV(msg.fn), EV(msg.arg));
	SPDK_DTRACE_PROBE2(timerfd_exec, EV(poller.fn), EV(poller.arg));
	SPDK_DTRACE_PROBE4(interrupt_fd_process, EV(intr.name), EV(intr.efd), EV(intr.fn), EV(intr.arg));

	SPDK_DTRACE_PROBE3(nvmf_transport_poll_group_add, EV(&qpair), EV(qpair.qid), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE3(nvmf_transport_poll_group_remove, EV(&qpair), EV(qpair.qid), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE1(nvmf_transport_qpair_fini, EV(&qpair));

	SPDK_DTRACE_PROBE1_TICKS(nvmf_destroy_poll_group, EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_transport_poll_group_create, EV(&transport), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE1_TICKS(nvmf_create_poll_group, EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE1_TICKS(nvmf_destroy_poll_group_qpairs, EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_add_transport, EV(&transport), EV(tgt.name));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_pause_polling, EV(&tgt), EV(tgt.name));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_resume_polling, EV(&tgt), EV(tgt.name));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_qpair, EV(&qpair), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_remove_qpair, EV(&qpair), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_qpair_disconnect, EV(&qpair), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_drain_qpair, EV(&qpair), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_subsystem, EV(spdk_thread_get_id()), EV(subsystem.subnqn));
	SPDK_DTRACE_PROBE3_TICKS(nvmf_poll_group_remove_subsystem, EV(&group), EV(spdk_thread_get_id()), EV(subsystem.subnqn));

	SPDK_DTRACE_PROBE4_TICKS(nvmf_ctrlr_add_qpair, EV(&qpair), EV(qpair.qid), EV(ctrlr.subsys->subnqn), EV(ctrlr.hostnqn));
	SPDK_DTRACE_PROBE3_TICKS(nvmf_ctrlr_create, EV(&ctrlr), EV(subsystem.subnqn), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_ctrlr_destruct, EV(&ctrlr), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE4_TICKS(nvmf_ctrlr_add_io_qpair, EV(&ctrlr), EV(req.qpair), EV(qid), EV(spdk_thread_get_id()));

	SPDK_DTRACE_PROBE1(nvmf_subsystem_create, EV(subsystem.subnqn));
	SPDK_DTRACE_PROBE1(nvmf_subsystem_destroy, EV(subsystem.subnqn));
	SPDK_DTRACE_PROBE3(nvmf_subsystem_change_state, EV(subsystem.subnqn), EV(requested_state), EV(subsystem.state));
	SPDK_DTRACE_PROBE4(nvmf_subsystem_change_state_done, EV(subsystem.subnqn), EV(requested_state), EV(original_state), EV(status));
	SPDK_DTRACE_PROBE3(nvmf_pg_change_state, EV(subsystem.subnqn), EV(requested_state), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE3(nvmf_pg_change_state_done, EV(subsystem.subnqn), EV(requested_state), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE4(spdk_nvmf_ns_add_host, EV(subsystem.subnqn), EV(nsid), EV(hostnqn), EV(flags));
	SPDK_DTRACE_PROBE4(spdk_nvmf_ns_remove_host, EV(subsystem.subnqn), EV(nsid), EV(hostnqn), EV(flags));
	SPDK_DTRACE_PROBE2(nvmf_subsystem_add_host, EV(subsystem.subnqn), EV(host.nqn));
	SPDK_DTRACE_PROBE2(nvmf_subsystem_remove_host, EV(subsystem.subnqn), EV(host.nqn));
	SPDK_DTRACE_PROBE4(nvmf_subsystem_add_listener, EV(subsystem.subnqn), EV(trid.trtype), EV(trid.traddr), EV(trid.trsvcid));
	SPDK_DTRACE_PROBE4(nvmf_subsystem_remove_listener, EV(subsystem.subnqn), EV(trid.trtype), EV(trid.traddr), EV(trid.trsvcid));
	SPDK_DTRACE_PROBE2(nvmf_subsystem_add_ns, EV(subsystem.subnqn), EV(ns.nsid));
	SPDK_DTRACE_PROBE3(nvmf_subsystem_add_ctrlr, EV(subsystem.subnqn), EV(&ctrlr), EV(ctrlr.hostnqn));
	SPDK_DTRACE_PROBE3(nvmf_subsystem_remove_ctrlr, EV(subsystem.subnqn), EV(&ctrlr), EV(ctrlr.hostnqn));

	SPDK_DTRACE_PROBE1(nvmf_tgt_state, EV(g_tgt_state));

	SPDK_DTRACE_PROBE2(dynsched_move, EV(&thread_info), EV(dst_core));
	SPDK_DTRACE_PROBE1(dynsched_balance, EV(cores_count));
	SPDK_DTRACE_PROBE2(dynsched_core_info, EV(i), EV(&cores_info[i]));

	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_delete, EV(name));
	SPDK_DTRACE_PROBE2(bdev_nvme_ctrlr_release, EV(name), EV(ref));
	SPDK_DTRACE_PROBE2(bdev_nvme_destruct, EV(name), EV(nsid));
	SPDK_DTRACE_PROBE3(bdev_nvme_create_qpair, EV(name), EV(qid), EV(spdk_thread_get_id()));
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reconnect_delay, EV(name));
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reconnect, EV(name));
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reset, EV(name));

	printf("ENABLED %d\n", SPDK_PROBE_NVMF_CREATE_POLL_GROUP_ENABLED() + SPDK_PROBE_EVENT_EXEC_ENABLED());
	printf("EVALUATED %d\n", g_evaluated);
	return 0;
}
