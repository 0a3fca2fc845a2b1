/*
 * Fires every probe of tests/catalogs/tracing_types.yaml with known values,
 * through the header probegen generates for it (tracing_types.h).
 *
 * Waits for a line on stdin (the test writes one once the tracers are
 * attached), then for each hit prints "EXPECT <line>": the line a tracer
 * must print for it, without the timestamp, formatted here by hand with
 * printf so it is an independent oracle. Ends with "DONE".
 */
#include "tracing_types.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

enum color { COLOR_RED, COLOR_GREEN, COLOR_BLUE = 5, COLOR_DARK = -3 };
enum mode { MODE_OFF, MODE_ON };
struct thing { int x; };
typedef int (*callback_fn)(void *);

static struct thing g_thing = { 42 };
static int callback(void *ctx) { return ctx != NULL; }

static const char *color_name(enum color c)
{
	switch (c) {
	case COLOR_RED: return "RED";
	case COLOR_GREEN: return "GREEN";
	case COLOR_BLUE: return "BLUE";
	case COLOR_DARK: return "DARK";
	}
	return NULL;
}

/* "name=VALUE" or "name=UNKNOWN(n)" */
static void print_enum(const char *label, const char *name, int value)
{
	if (name) {
		printf(" %s=%s", label, name);
	} else {
		printf(" %s=UNKNOWN(%d)", label, value);
	}
}

static void narrow(int8_t i8, uint8_t u8, int16_t i16, uint16_t u16, int32_t i32, uint32_t u32)
{
	printf("EXPECT narrow i8=%d u8=%u i16=%d u16=%u i32=%" PRId32 " u32=%" PRIu32 "\n",
	       i8, u8, i16, u16, i32, u32);
	PGTEST_NARROW(i8, u8, i16, u16, i32, u32);
}

static void wide(int64_t i64, uint64_t u64, long l, unsigned long ul, size_t sz, ssize_t ssz)
{
	printf("EXPECT wide i64=%" PRId64 " u64=%" PRIu64 " l=%ld ul=%lu sz=%zu ssz=%zd\n",
	       i64, u64, l, ul, sz, ssz);
	PGTEST_WIDE(i64, u64, l, ul, sz, ssz);
}

static void other_ints(bool b, char c, unsigned char uc, short s, long long ll, unsigned long long ull)
{
	printf("EXPECT other_ints b=%u c=%d uc=%u s=%d ll=%lld ull=%llu\n", b, c, uc, s, ll, ull);
	PGTEST_OTHER_INTS(b, c, uc, s, ll, ull);
}

static void hexes(uint8_t h8, int16_t h16, uint32_t h32, uint64_t h64, int hneg, enum color henum)
{
	printf("EXPECT hexes h8=0x%x h16=0x%x h32=0x%" PRIx32 " h64=0x%" PRIx64 " hneg=0x%x henum=0x%x\n",
	       h8, (uint16_t)h16, h32, h64, (unsigned)hneg, (unsigned)henum);
	PGTEST_HEXES(h8, h16, h32, h64, hneg, henum);
}

static void enums(enum color c, enum mode m)
{
	printf("EXPECT enums");
	print_enum("col", color_name(c), c);
	print_enum("md", m == MODE_OFF ? "MODE_OFF" : m == MODE_ON ? "MODE_ON" : NULL, (int)m);
	printf("\n");
	PGTEST_ENUMS(c, m);
}

int main(void)
{
	static char long_string[101], wide_string[151];
	const char *special = "100% \"q\" back\\slash %s %d \\n";
	char line[16];

	for (int i = 0; i < 100; i++)
		long_string[i] = (char)('a' + i % 26);
	for (int i = 0; i < 150; i++)
		wide_string[i] = (char)('A' + i % 26);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	narrow(INT8_MIN, UINT8_MAX, INT16_MIN, UINT16_MAX, INT32_MIN, UINT32_MAX);
	narrow(INT8_MAX, 0, INT16_MAX, 0, INT32_MAX, 0);
	narrow(-1, 1, -1, 1, -1, 1);
	wide(INT64_MIN, UINT64_MAX, -1, 0, SIZE_MAX, -9);
	wide(INT64_MAX, 0, 123456789012345L, 98765432109876UL, 0, (ssize_t)(SIZE_MAX >> 1));
	other_ints(true, -100, 200, -32000, LLONG_MIN, ULLONG_MAX);
	other_ints(false, 'A', 0, 7, LLONG_MAX, 5);
	hexes(0xab, -2, 0xdeadbeef, UINT64_MAX, -1, COLOR_DARK);
	hexes(0, 0x7f00, 0, 0x1234567890abcdefULL, 0x10, COLOR_BLUE);

	printf("EXPECT pointers p=%p obj=%p fn=%p nil=(nil)\n", (void *)0x1234abcd, (void *)&g_thing, (void *)callback);
	PGTEST_POINTERS((void *)0x1234abcd, &g_thing, callback, NULL);

	printf("EXPECT strings long_default=%.63s empty= short_bound=%.8s special=%s absent=\n",
	       long_string, wide_string, special);
	PGTEST_STRINGS(long_string, "", wide_string, special, NULL);

	printf("EXPECT big_string wide_bound=%.100s\n", wide_string);
	PGTEST_BIG_STRING(wide_string);

	enums(COLOR_RED, MODE_OFF);
	enums(COLOR_GREEN, MODE_ON);
	enums(COLOR_BLUE, 9);
	enums(COLOR_DARK, MODE_ON);
	enums(7, MODE_OFF);
	enums(-1, 2);

	printf("EXPECT nothing\n");
	PGTEST_NOTHING();

	printf("EXPECT most a0=-5 a1=200 a2=-300 a3=%" PRIu64 " a4=-7 a5=five a6=6 a7=65535 a8=BLUE a9=nine a10=%p a11=%" PRId64 "\n",
	       UINT64_MAX - 1, (void *)&g_thing, INT64_MIN + 1);
	PGTEST_MOST(-5, 200, -300, UINT64_MAX - 1, -7L, "five", 6, 65535, COLOR_BLUE, "nine", &g_thing, INT64_MIN + 1);

	printf("DONE\n");
	return 0;
}
