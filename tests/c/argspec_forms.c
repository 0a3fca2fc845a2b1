/*
 * Probes whose arguments make gcc print every operand form it has for
 * <sys/sdt.h>: constants (small, negative, 64-bit, floating point), locals
 * in registers and on the stack, static, global, extern and thread-local
 * variables, struct members, array elements (constant and variable index),
 * pointers and address constants. Built with -c for every Debian
 * architecture at -O0 and -O2 by tests/test_argspec.py.
 */
#include <stdint.h>
#include <sys/sdt.h>

struct rec {
	int a;
	long b;
	int arr[8];
	char name[4];
};

static volatile int s_counter = 3;
static struct rec s_rec;
static volatile long s_vals[10];
static __thread int t_static;
volatile long g_total = 9;
struct rec g_rec;
int g_array[16];
__thread long t_global;
const char *g_msg = "hi";
extern volatile int e_flag;
extern struct rec e_rec;
extern __thread int t_extern;

void constants(void)
{
	DTRACE_PROBE4(forms, consts, 0, -1, 5, 1000000);
	DTRACE_PROBE3(forms, bigconsts, (int64_t)0x123456789LL, (uint64_t)-2, (int64_t)-100000);
	DTRACE_PROBE2(forms, smallconsts, (char)1, (short)-7);
	DTRACE_PROBE2(forms, hexconsts, 0x10, -0x10);
	DTRACE_PROBE2(forms, extremes, 0x7fffffffffffffffLL, 0xffffffffffffffffULL);
	DTRACE_PROBE3(forms, floatconsts, 1.5, -2.0, 0.125f);
}

void variables(int i)
{
	DTRACE_PROBE4(forms, globals, s_counter, g_total, e_flag, e_rec.b);
	DTRACE_PROBE4(forms, statics, s_rec.b, s_rec.arr[2], s_vals[3], s_vals[i]);
	DTRACE_PROBE4(forms, arrays, g_array[3], g_array[i], e_rec.arr[i], g_rec.arr[5]);
	DTRACE_PROBE4(forms, addresses, &g_total, &e_rec.arr[2], &s_rec, (long)&g_rec.b);
	DTRACE_PROBE3(forms, tls, t_static, t_global, t_extern);
	DTRACE_PROBE2(forms, strings, "literal", g_msg);
}

void locals(struct rec *r, int i, uint16_t q, signed char c, uint64_t u, long *p)
{
	volatile int local = i * 3;
	volatile long larr[4] = {1, 2, 3, 4};
	DTRACE_PROBE6(forms, fields, r->a, r->b, r->arr[i], q, c, u);
	DTRACE_PROBE4(forms, locals, local, larr[i & 3], p[-1], p[i - 2]);
	DTRACE_PROBE3(forms, pointers, r, p, r->name);
}

void floats(double d, float f)
{
	DTRACE_PROBE2(forms, floats, d, f);
}

void many(long a, long b, long c, long d, long e, long f, long g, long h, long k, long l)
{
	DTRACE_PROBE10(forms, many, a, b, c, d, e, f, g, h, k, l);
}
