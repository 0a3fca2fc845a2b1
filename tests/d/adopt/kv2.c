/* The next version: get passes two arguments. */
#include "kv.h"

#undef KV_GET
#define KV_GET(a, b) DTRACE_PROBE2(kv, get, a, b)

int main(int argc, char **argv)
{
	KV_START();
	KV_GET(argv[0], argc);
	return 0;
}
