/*
 * One program at two versions, shaped like SPDK's nvmf target, against one
 * catalog (tests/catalogs/drift.yaml, which describes the default build).
 * With -DV25_09 it drifts as SPDK v25.09 does from master: enum
 * nvmf_tgt_state has FINI_STOP_LISTEN before FINI_STOP_SUBSYSTEMS; and
 * struct spdk_nvmf_qpair has qid moved and widened (uint16_t -> uint32_t)
 * and cntlid renamed ctrlr_id. The probe notes are the same in both.
 *
 * Protocol as tracing_types.c: READY, a line on stdin, "EXPECT <line>"
 * before each hit (names printed from this build's own enum), DONE.
 */
#include "drift.h"

#include <stdint.h>
#include <stdio.h>

#ifdef V25_09
enum nvmf_tgt_state {
	NVMF_TGT_INIT_NONE = 0,
	NVMF_TGT_RUNNING = 4,
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_STOPPED = 10,
};
struct spdk_nvmf_qpair {
	void *ctrlr;
	uint32_t qid;
	uint16_t ctrlr_id;
};
#define CNTLID ctrlr_id
#else
enum nvmf_tgt_state {
	NVMF_TGT_INIT_NONE = 0,
	NVMF_TGT_RUNNING = 4,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_FINI_STOP_LISTEN,
	NVMF_TGT_STOPPED = 10,
};
struct spdk_nvmf_qpair {
	uint16_t qid;
	uint16_t cntlid;
	void *ctrlr;
};
#define CNTLID cntlid
#endif

static const char *state_name(enum nvmf_tgt_state state)
{
	switch (state) {
	case NVMF_TGT_INIT_NONE: return "INIT_NONE";
	case NVMF_TGT_RUNNING: return "RUNNING";
	case NVMF_TGT_FINI_STOP_SUBSYSTEMS: return "FINI_STOP_SUBSYSTEMS";
	case NVMF_TGT_FINI_STOP_LISTEN: return "FINI_STOP_LISTEN";
	case NVMF_TGT_STOPPED: return "STOPPED";
	}
	return NULL;
}

static struct spdk_nvmf_qpair g_qpair = { .qid = 7, .CNTLID = 3 };

/* Hide the global from the optimiser: register operands, as in SPDK. */
#define LAUNDER(p) __asm__ volatile("" : "+r"(p))

static void tgt_state(enum nvmf_tgt_state state)
{
	printf("EXPECT tgt_state state=%s\n", state_name(state));
	PGDRIFT_TGT_STATE(state);
}

int main(void)
{
	static const enum nvmf_tgt_state states[] = {
		NVMF_TGT_RUNNING, NVMF_TGT_FINI_STOP_SUBSYSTEMS, NVMF_TGT_FINI_STOP_LISTEN, NVMF_TGT_STOPPED,
	};
	struct spdk_nvmf_qpair *qpair = &g_qpair;
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (unsigned i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		tgt_state(states[i]);
	LAUNDER(qpair);
	PGDRIFT_QPAIR_EVENT(qpair, 1);
	printf("DONE\n");
	return 0;
}
