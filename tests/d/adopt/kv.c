/* Passes what memcached passes: a uint8_t length at one site, a size_t at
 * another, where the .d says int; a uint64_t where it says int64_t. */
#include <stddef.h>
#include <stdint.h>
#include "kv.h"

int main(int argc, char **argv)
{
	const char *key = argv[0];
	uint8_t nkey = (uint8_t)argc;
	size_t len = (size_t)argc * 2;
	uint64_t cas = (uint64_t)argc;
	KV_START();
	KV_GET(key, nkey, cas);
	if (argc > 1)
		KV_GET(key, len, cas);
	return 0;
}
