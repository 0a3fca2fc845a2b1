/* Types for probegen structs tests: every layout feature the issue names.
 * Compiled with gcc -g (DWARF 4 and 5, -gz); never run except as the live
 * target of the bpftrace test (argv[1] = "run"). */
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

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

enum odd_values { ODD_NEG = -5, ODD_BIG = 200, ODD_HUGE = 0x7fffffff, ODD_ZERO = 0 };
enum wide_values { WIDE_SMALL = 1, WIDE_LARGE = 0x100000000LL };

typedef enum { MODE_A = 1, MODE_B = 4 } mode_t_anon;
typedef uint16_t qid_t;
typedef void (*spdk_msg_fn)(void *ctx);
typedef struct { int x; int y; } point_t;

struct spdk_nvmf_tgt;
struct spdk_nvmf_subsystem;

struct spdk_nvmf_qpair {
	struct spdk_nvmf_tgt *tgt;
	qid_t qid;
	uint8_t flags;
	bool connected;
	enum spdk_nvmf_subsystem_state state;
	const char *name;
	spdk_msg_fn cb;
	int (*handler)(struct spdk_nvmf_qpair *qp, const void *buf, size_t len, ...);
};

struct spdk_nvmf_subsystem {
	uint32_t sid;
	enum spdk_nvmf_subsystem_state state;
	char subnqn[224];
	mode_t_anon mode;
	point_t where;
	struct spdk_nvmf_subsystem *next;
	struct spdk_nvmf_qpair qpairs[2];
	volatile int counter;
	const volatile uint64_t *const cv_ptr;
	struct {
		uint32_t nsid;
		union {
			uint64_t raw;
			struct { uint32_t lo, hi; };
		};
	} id;
	union {
		int as_int;
		float as_float;
	};
	unsigned int bits_a : 3;
	unsigned int bits_b : 7;
	unsigned int : 0;
	unsigned char bits_c : 2;
	uint64_t bits_d : 40;
	int16_t matrix[3][4];
	char (*ptr_to_array)[16];
	void *(*fn_array[2])(int);
	enum odd_values odd;
	enum wide_values wide;
	long double ld;
	_Bool flag;
	uint8_t tail[];
};

struct __attribute__((packed)) packed_hdr {
	uint8_t type;
	uint32_t len;
	uint16_t crc;
	uint64_t stamp;
};

struct holder {
	char c;
	struct packed_hdr hdr;
	uint16_t after;
	uint32_t unaligned_field __attribute__((packed, aligned(1)));
};

struct __attribute__((aligned(64))) cacheline {
	uint64_t hot;
	char pad_me;
};

struct with_aligned_member {
	char c;
	int x __attribute__((aligned(16)));
	struct cacheline line;
	short s;
};

struct __attribute__((packed)) packed_bits {
	uint8_t a : 3;
	uint16_t b : 12;
	uint32_t c : 20;
	uint8_t d;
};

union value {
	uint8_t b[3];
	uint16_t h;
};

union __attribute__((packed)) packed_union {
	uint32_t w;
	uint8_t b[5];
};

struct zero_len {
	int n;
	char data[0];
};

struct spdk_scheduler_thread_info {
	uint32_t lcore;
	uint64_t thread_id;
	struct {
		uint64_t busy_tsc;
		uint64_t idle_tsc;
	} current_stats;
	union value v;
	union packed_union pu;
};

/* Keep every type alive in the DWARF. */
struct spdk_nvmf_subsystem g_subsystem;
struct spdk_nvmf_qpair g_qpair;
struct holder g_holder;
struct with_aligned_member g_wam;
struct packed_bits g_pb;
struct zero_len *g_zl;
struct spdk_scheduler_thread_info g_sti;

#ifdef WITH_PROBE
#include <sys/sdt.h>
#endif

int main(int argc, char **argv)
{
	strcpy(g_subsystem.subnqn, "nqn.2016-06.io.spdk:cnode1");
	g_subsystem.id.nsid = 7;
	g_subsystem.state = SPDK_NVMF_SUBSYSTEM_PAUSED;
	g_subsystem.bits_d = 0x123456789aULL;
	g_subsystem.id.hi = 0xabcdef;
	g_qpair.qid = 42;
	g_qpair.state = SPDK_NVMF_SUBSYSTEM_ACTIVE;
	g_holder.hdr.len = 0x11223344;
	g_holder.after = 0x5566;
	g_wam.line.hot = 99;
	g_wam.s = -3;
	if (argc > 1) {
		for (int i = 0; i < 400; i++) {
#ifdef WITH_PROBE
			STAP_PROBE2(test, subsys, &g_subsystem, &g_qpair);
			STAP_PROBE1(test, holder, &g_wam);
			STAP_PROBE2(test, state, (int)g_subsystem.state, &g_holder);
#endif
			usleep(50000);
		}
	}
	return 0;
}
