/*
 * One of three shared libraries (built with -DBOMB_LIB=1, 2, 3) holding
 * probes of tests/catalogs/bcc_mismatch.yaml; the test replaces a debug
 * section of each with a zip bomb. bomb_fire_N fires tgt_state with state
 * 3 + N (the catalog's RUNNING, FINI_STOP_SUBSYSTEMS, FINI_STOP_LISTEN) and
 * key_set with 1000 * N, printing the EXPECT lines of tests/helpers/tracing.py.
 */
#include <stdio.h>
#include <sys/sdt.h>

enum nvmf_tgt_state {
	NVMF_TGT_RUNNING = 4,
	NVMF_TGT_FINI_STOP_SUBSYSTEMS,
	NVMF_TGT_FINI_STOP_LISTEN,
};

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FIRE CAT(bomb_fire_, BOMB_LIB)

void FIRE(void);

void FIRE(void)
{
	static const char *const names[] = {"RUNNING", "FINI_STOP_SUBSYSTEMS", "FINI_STOP_LISTEN"};
	volatile enum nvmf_tgt_state state = (enum nvmf_tgt_state)(NVMF_TGT_RUNNING + BOMB_LIB - 1);
	volatile int keylen = 1000 * BOMB_LIB;

	printf("EXPECT tgt_state state=%s\n", names[BOMB_LIB - 1]);
	DTRACE_PROBE1(pgmis, tgt_state, state);
	printf("EXPECT key_set keylen=%d\n", keylen);
	DTRACE_PROBE1(pgmis, key_set, keylen);
}
