/*
 * Fires every probe of the default SPDK catalog (probes.yaml) the way SPDK's
 * sources do: SPDK_DTRACE_PROBEn / _TICKS with struct members, char arrays,
 * enums and thread ids, on stand-in structs. Protocol as tracing_types.c:
 * READY, wait for a line on stdin, then "EXPECT <line>" before each hit
 * (formatted here by hand), then DONE.
 */
#include "spdk_internal/usdt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum spdk_nvmf_subsystem_state {
	SPDK_NVMF_SUBSYSTEM_INACTIVE = 0, SPDK_NVMF_SUBSYSTEM_ACTIVATING, SPDK_NVMF_SUBSYSTEM_ACTIVE,
	SPDK_NVMF_SUBSYSTEM_PAUSING, SPDK_NVMF_SUBSYSTEM_PAUSED, SPDK_NVMF_SUBSYSTEM_RESUMING,
	SPDK_NVMF_SUBSYSTEM_DEACTIVATING, SPDK_NVMF_SUBSYSTEM_NUM_STATES,
};
enum spdk_nvme_transport_type { SPDK_NVME_TRANSPORT_RDMA = 1, SPDK_NVME_TRANSPORT_TCP = 3, SPDK_NVME_TRANSPORT_PCIE = 256 };
enum nvmf_tgt_state { NVMF_TGT_INIT_NONE = 0, NVMF_TGT_RUNNING = 4, NVMF_TGT_ERROR = 11 };

struct spdk_event { void (*fn)(void *, void *); void *arg1; void *arg2; };
struct spdk_interrupt { char name[256]; int efd; int (*fn)(void *); void *arg; };
struct spdk_nvmf_tgt { char name[256]; };
struct spdk_nvmf_subsystem { char subnqn[224]; enum spdk_nvmf_subsystem_state state; };
struct spdk_nvmf_ctrlr { struct spdk_nvmf_subsystem *subsys; char hostnqn[224]; };
struct spdk_nvmf_qpair { uint16_t qid; struct spdk_nvmf_ctrlr *ctrlr; };
struct spdk_nvme_transport_id { enum spdk_nvme_transport_type trtype; char traddr[257]; char trsvcid[33]; };

#define TICKS UINT64_C(1234567890123)
uint64_t spdk_get_ticks(void) { return TICKS; }

static void event_fn(void *a, void *b) { (void)a; (void)b; }
static int intr_fn(void *a) { return a != NULL; }

static struct spdk_nvmf_tgt g_tgt = { "nvmf_tgt" };
static struct spdk_nvmf_subsystem g_subsystem = { "nqn.2016-06.io.spdk:cnode1", SPDK_NVMF_SUBSYSTEM_ACTIVE };
static struct spdk_nvmf_ctrlr g_ctrlr = { &g_subsystem, "nqn.2014-08.org.nvmexpress:uuid:host-1" };
static struct spdk_nvmf_qpair g_qpair = { 3, &g_ctrlr };
static struct spdk_interrupt g_intr = { "intr_one", 17, intr_fn, &g_tgt };
static struct spdk_nvme_transport_id g_trid = { SPDK_NVME_TRANSPORT_TCP, "192.168.1.10", "4420" };
static char g_bdev_name[] = "Nvme0";

/* SPDK reaches these through pointers it was handed; hide the globals from
 * the optimiser so the operands are register-based as in SPDK, not
 * rip-relative symbol operands (which bpftrace 0.17 and BCC 0.26 misread). */
#define LAUNDER(p) __asm__ volatile("" : "+r"(p))
#define P(x) ((void *)(x))
#define T "ticks=%" PRIu64 " "

int main(void)
{
	struct spdk_event event = { event_fn, P(0x1000), P(0x2000) };
	uint64_t tid = 7;
	const char *nqn = g_subsystem.subnqn, *host = g_ctrlr.hostnqn;
	char line[16];
	struct spdk_nvmf_tgt *tgt = &g_tgt;
	struct spdk_nvmf_subsystem *subsystem = &g_subsystem;
	struct spdk_nvmf_ctrlr *ctrlr = &g_ctrlr;
	struct spdk_nvmf_qpair *qpair = &g_qpair;
	struct spdk_interrupt *intr = &g_intr;
	struct spdk_nvme_transport_id *trid = &g_trid;
	char *name = g_bdev_name;

	LAUNDER(tgt); LAUNDER(subsystem); LAUNDER(ctrlr); LAUNDER(qpair); LAUNDER(intr); LAUNDER(trid); LAUNDER(name);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	printf("EXPECT event_exec fn=%p arg1=%p arg2=%p\n", P(event.fn), event.arg1, event.arg2);
	SPDK_DTRACE_PROBE3(event_exec, event.fn, event.arg1, event.arg2);
	printf("EXPECT msg_exec fn=%p arg=%p\n", P(intr_fn), P(0x3000));
	SPDK_DTRACE_PROBE2(msg_exec, intr_fn, P(0x3000));
	printf("EXPECT timerfd_exec fn=%p arg=(nil)\n", P(intr_fn));
	SPDK_DTRACE_PROBE2(timerfd_exec, intr_fn, NULL);
	printf("EXPECT interrupt_fd_process name=intr_one efd=17 fn=%p arg=%p\n", P(g_intr.fn), g_intr.arg);
	SPDK_DTRACE_PROBE4(interrupt_fd_process, intr->name, intr->efd, intr->fn, intr->arg);

	printf("EXPECT nvmf_transport_poll_group_add qpair=%p qid=3 thread_id=7\n", P(&g_qpair));
	SPDK_DTRACE_PROBE3(nvmf_transport_poll_group_add, qpair, qpair->qid, tid);
	printf("EXPECT nvmf_transport_poll_group_remove qpair=%p qid=3 thread_id=7\n", P(&g_qpair));
	SPDK_DTRACE_PROBE3(nvmf_transport_poll_group_remove, qpair, qpair->qid, tid);
	printf("EXPECT nvmf_transport_qpair_fini qpair=%p\n", P(&g_qpair));
	SPDK_DTRACE_PROBE1(nvmf_transport_qpair_fini, qpair);

	printf("EXPECT nvmf_destroy_poll_group " T "thread_id=7\n", TICKS);
	SPDK_DTRACE_PROBE1_TICKS(nvmf_destroy_poll_group, tid);
	printf("EXPECT nvmf_transport_poll_group_create " T "transport=%p thread_id=7\n", TICKS, P(0x4000));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_transport_poll_group_create, P(0x4000), tid);
	printf("EXPECT nvmf_create_poll_group " T "thread_id=7\n", TICKS);
	SPDK_DTRACE_PROBE1_TICKS(nvmf_create_poll_group, tid);
	printf("EXPECT nvmf_destroy_poll_group_qpairs " T "thread_id=7\n", TICKS);
	SPDK_DTRACE_PROBE1_TICKS(nvmf_destroy_poll_group_qpairs, tid);
	printf("EXPECT nvmf_tgt_add_transport " T "transport=%p tgt_name=nvmf_tgt\n", TICKS, P(0x4000));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_add_transport, P(0x4000), tgt->name);
	printf("EXPECT nvmf_tgt_pause_polling " T "tgt=%p tgt_name=nvmf_tgt\n", TICKS, P(&g_tgt));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_pause_polling, tgt, tgt->name);
	printf("EXPECT nvmf_tgt_resume_polling " T "tgt=%p tgt_name=nvmf_tgt\n", TICKS, P(&g_tgt));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_tgt_resume_polling, tgt, tgt->name);
	printf("EXPECT nvmf_poll_group_add_qpair " T "qpair=%p thread_id=7\n", TICKS, P(&g_qpair));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_qpair, qpair, tid);
	printf("EXPECT nvmf_poll_group_remove_qpair " T "qpair=%p thread_id=7\n", TICKS, P(&g_qpair));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_remove_qpair, qpair, tid);
	printf("EXPECT nvmf_qpair_disconnect " T "qpair=%p thread_id=7\n", TICKS, P(&g_qpair));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_qpair_disconnect, qpair, tid);
	printf("EXPECT nvmf_poll_group_drain_qpair " T "qpair=%p thread_id=7\n", TICKS, P(&g_qpair));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_drain_qpair, qpair, tid);
	printf("EXPECT nvmf_poll_group_add_subsystem " T "thread_id=7 subnqn=%s\n", TICKS, nqn);
	SPDK_DTRACE_PROBE2_TICKS(nvmf_poll_group_add_subsystem, tid, subsystem->subnqn);
	printf("EXPECT nvmf_poll_group_remove_subsystem " T "group=%p thread_id=7 subnqn=%s\n", TICKS, P(0x5000), nqn);
	SPDK_DTRACE_PROBE3_TICKS(nvmf_poll_group_remove_subsystem, P(0x5000), tid, subsystem->subnqn);

	printf("EXPECT nvmf_ctrlr_add_qpair " T "qpair=%p qid=3 subnqn=%s hostnqn=%s\n", TICKS, P(&g_qpair), nqn, host);
	SPDK_DTRACE_PROBE4_TICKS(nvmf_ctrlr_add_qpair, qpair, qpair->qid, ctrlr->subsys->subnqn, ctrlr->hostnqn);
	printf("EXPECT nvmf_ctrlr_create " T "ctrlr=%p subnqn=%s thread_id=7\n", TICKS, P(&g_ctrlr), nqn);
	SPDK_DTRACE_PROBE3_TICKS(nvmf_ctrlr_create, ctrlr, subsystem->subnqn, tid);
	printf("EXPECT nvmf_ctrlr_destruct " T "ctrlr=%p thread_id=7\n", TICKS, P(&g_ctrlr));
	SPDK_DTRACE_PROBE2_TICKS(nvmf_ctrlr_destruct, ctrlr, tid);
	printf("EXPECT nvmf_ctrlr_add_io_qpair " T "ctrlr=%p qpair=%p qid=3 thread_id=7\n", TICKS, P(&g_ctrlr), P(&g_qpair));
	SPDK_DTRACE_PROBE4_TICKS(nvmf_ctrlr_add_io_qpair, ctrlr, qpair, qpair->qid, tid);

	printf("EXPECT nvmf_subsystem_create subnqn=%s\n", nqn);
	SPDK_DTRACE_PROBE1(nvmf_subsystem_create, subsystem->subnqn);
	printf("EXPECT nvmf_subsystem_destroy subnqn=%s\n", nqn);
	SPDK_DTRACE_PROBE1(nvmf_subsystem_destroy, subsystem->subnqn);
	printf("EXPECT nvmf_subsystem_change_state subnqn=%s requested_state=PAUSED state=ACTIVE\n", nqn);
	SPDK_DTRACE_PROBE3(nvmf_subsystem_change_state, subsystem->subnqn, SPDK_NVMF_SUBSYSTEM_PAUSED, subsystem->state);
	printf("EXPECT nvmf_subsystem_change_state_done subnqn=%s requested_state=PAUSED original_state=ACTIVE status=-22\n", nqn);
	SPDK_DTRACE_PROBE4(nvmf_subsystem_change_state_done, subsystem->subnqn, SPDK_NVMF_SUBSYSTEM_PAUSED,
			   subsystem->state, -22);
	printf("EXPECT nvmf_pg_change_state subnqn=%s requested_state=NUM_STATES thread_id=7\n", nqn);
	SPDK_DTRACE_PROBE3(nvmf_pg_change_state, subsystem->subnqn, SPDK_NVMF_SUBSYSTEM_NUM_STATES, tid);
	printf("EXPECT nvmf_pg_change_state_done subnqn=%s requested_state=UNKNOWN(8) thread_id=7\n", nqn);
	SPDK_DTRACE_PROBE3(nvmf_pg_change_state_done, subsystem->subnqn, (enum spdk_nvmf_subsystem_state)8, tid);
	printf("EXPECT spdk_nvmf_ns_add_host subnqn=%s nsid=1 hostnqn=%s flags=0x80000001\n", nqn, host);
	SPDK_DTRACE_PROBE4(spdk_nvmf_ns_add_host, subsystem->subnqn, 1u, host, 0x80000001u);
	printf("EXPECT spdk_nvmf_ns_remove_host subnqn=%s nsid=4294967295 hostnqn=%s flags=0x0\n", nqn, host);
	SPDK_DTRACE_PROBE4(spdk_nvmf_ns_remove_host, subsystem->subnqn, UINT32_MAX, host, 0u);
	printf("EXPECT nvmf_subsystem_add_host subnqn=%s hostnqn=%s\n", nqn, host);
	SPDK_DTRACE_PROBE2(nvmf_subsystem_add_host, subsystem->subnqn, ctrlr->hostnqn);
	printf("EXPECT nvmf_subsystem_remove_host subnqn=%s hostnqn=%s\n", nqn, host);
	SPDK_DTRACE_PROBE2(nvmf_subsystem_remove_host, subsystem->subnqn, ctrlr->hostnqn);
	printf("EXPECT nvmf_subsystem_add_listener subnqn=%s trtype=TCP traddr=192.168.1.10 trsvcid=4420\n", nqn);
	SPDK_DTRACE_PROBE4(nvmf_subsystem_add_listener, subsystem->subnqn, trid->trtype, trid->traddr, trid->trsvcid);
	printf("EXPECT nvmf_subsystem_remove_listener subnqn=%s trtype=PCIE traddr=192.168.1.10 trsvcid=4420\n", nqn);
	SPDK_DTRACE_PROBE4(nvmf_subsystem_remove_listener, subsystem->subnqn, SPDK_NVME_TRANSPORT_PCIE, trid->traddr,
			   trid->trsvcid);
	printf("EXPECT nvmf_subsystem_add_ns subnqn=%s nsid=5\n", nqn);
	SPDK_DTRACE_PROBE2(nvmf_subsystem_add_ns, subsystem->subnqn, 5u);
	printf("EXPECT nvmf_subsystem_add_ctrlr subnqn=%s ctrlr=%p hostnqn=%s\n", nqn, P(&g_ctrlr), host);
	SPDK_DTRACE_PROBE3(nvmf_subsystem_add_ctrlr, subsystem->subnqn, ctrlr, ctrlr->hostnqn);
	printf("EXPECT nvmf_subsystem_remove_ctrlr subnqn=%s ctrlr=%p hostnqn=%s\n", nqn, P(&g_ctrlr), host);
	SPDK_DTRACE_PROBE3(nvmf_subsystem_remove_ctrlr, subsystem->subnqn, ctrlr, ctrlr->hostnqn);
	printf("EXPECT nvmf_tgt_state state=RUNNING\n");
	SPDK_DTRACE_PROBE1(nvmf_tgt_state, NVMF_TGT_RUNNING);
	printf("EXPECT nvmf_tgt_state state=ERROR\n");
	SPDK_DTRACE_PROBE1(nvmf_tgt_state, NVMF_TGT_ERROR);

	printf("EXPECT dynsched_move thread_info=%p dst_core=2\n", P(0x6000));
	SPDK_DTRACE_PROBE2(dynsched_move, P(0x6000), 2u);
	printf("EXPECT dynsched_balance cores_count=64\n");
	SPDK_DTRACE_PROBE1(dynsched_balance, 64u);
	printf("EXPECT dynsched_core_info core=1 core_info=%p\n", P(0x7000));
	SPDK_DTRACE_PROBE2(dynsched_core_info, 1u, P(0x7000));

	printf("EXPECT bdev_nvme_ctrlr_delete name=Nvme0\n");
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_delete, name);
	printf("EXPECT bdev_nvme_ctrlr_release name=Nvme0 ref=-1\n");
	SPDK_DTRACE_PROBE2(bdev_nvme_ctrlr_release, name, -1);
	printf("EXPECT bdev_nvme_destruct name=Nvme0 nsid=1\n");
	SPDK_DTRACE_PROBE2(bdev_nvme_destruct, name, 1u);
	printf("EXPECT bdev_nvme_create_qpair name=Nvme0 qpair_id=65535 thread_id=7\n");
	SPDK_DTRACE_PROBE3(bdev_nvme_create_qpair, name, (uint16_t)65535, tid);
	printf("EXPECT bdev_nvme_ctrlr_reconnect_delay name=Nvme0\n");
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reconnect_delay, name);
	printf("EXPECT bdev_nvme_ctrlr_reconnect name=Nvme0\n");
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reconnect, name);
	printf("EXPECT bdev_nvme_ctrlr_reset name=Nvme0\n");
	SPDK_DTRACE_PROBE1(bdev_nvme_ctrlr_reset, name);

	printf("DONE\n");
	return 0;
}
