/* Probes the way projects in the wild write them: <sys/sdt.h> macros with
 * no casts, so a site that passes a literal records the literal's own type
 * (false is the int 0, NULL is a pointer or an int 0) while the other sites
 * record the variable's. Built for x86_64, i686 and aarch64 by
 * tests/test_import_verify_roundtrip.py, imported and verified. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/sdt.h>

volatile int sink_int = 7;
volatile bool sink_bool = true;
volatile unsigned sink_unsigned = 3;
volatile char sink_char = 'x';
volatile long sink_long = -5;
volatile size_t sink_size = 4096;
volatile uint64_t sink_u64 = 1;
static char buffer[16];

/* PostgreSQL's sort__start: arg1 is the bool randomAccess, passed as the
 * literal false at three sites and as a variable at one. */
__attribute__((noinline)) static void sorts(void)
{
    DTRACE_PROBE2(rt, sort__start, sink_int, false);
    DTRACE_PROBE2(rt, sort__start, sink_int + 1, false);
    DTRACE_PROBE2(rt, sort__start, sink_int + 2, false);
    bool random_access = sink_bool;
    DTRACE_PROBE2(rt, sort__start, sink_int + 3, random_access);
}

/* A pointer (NULL at one site), a size_t (a literal at one), a long, an
 * unsigned given the sentinel -1 at one site, a plain char, a uint64_t. */
__attribute__((noinline)) static void mixed(void)
{
    void *p = buffer + sink_int;
    size_t n = sink_size;
    long l = sink_long;
    unsigned u = sink_unsigned;
    char c = sink_char;
    uint64_t w = sink_u64;
    DTRACE_PROBE6(rt, mixed, p, n, l, u, c, w);
    DTRACE_PROBE6(rt, mixed, NULL, 16, l, -1, c, w);
}

/* Only literals ever: the widest size seen, signed if any is negative. */
__attribute__((noinline)) static void literals(void)
{
    DTRACE_PROBE2(rt, literals, 0, 5);
    DTRACE_PROBE2(rt, literals, -3, 70000);
}

/* libstdc++ names its probes throw, rethrow and catch. */
__attribute__((noinline)) static void keywords(void)
{
    void *p = buffer + sink_int;
    DTRACE_PROBE2(rt, throw, p, sink_int);
    DTRACE_PROBE2(rt, catch, p, sink_int);
}

int main(void)
{
    sorts();
    mixed();
    literals();
    keywords();
    return 0;
}
