/*
 * Probes whose arguments land in every operand form a compiler emits:
 * registers, constants, memory through a base (and index) register, and
 * globals (rip-relative on x86_64, GOTOFF on i386, a symbol on aarch64).
 * Built for x86_64, aarch64 and i686 by tests/test_elf_notes.py.
 */
#include <stdint.h>
#include <sys/sdt.h>

struct rec {
	int a;
	long b;
	int arr[8];
};

volatile int g_counter = 3;

__attribute__((noinline)) void fire(struct rec *r, int i, uint16_t q, signed char c, uint64_t u, int64_t neg)
{
	DTRACE_PROBE6(elfargs, fields, r->a, r->b, r->arr[i], q, c, u);
	DTRACE_PROBE3(elfargs, constants, 0, -5, 7);
	DTRACE_PROBE2(elfargs, globals, neg, g_counter);
	DTRACE_PROBE(elfargs, none);
}

__attribute__((noinline)) void twice(int x)
{
	/* The same probe at two sites. */
	DTRACE_PROBE1(elfargs, dup, x);
	if (x > 1)
		DTRACE_PROBE1(elfargs, dup, x + 1);
}

int main(int argc, char **argv)
{
	struct rec r = {1, 2, {0}};
	(void)argv;
	fire(&r, argc, (uint16_t)argc, (signed char)argc, (uint64_t)argc, -argc);
	twice(argc);
	return 0;
}
