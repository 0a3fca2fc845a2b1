/* Call sites of stdtypes.d, written against dtrace -h's header: the same
 * file builds with SystemTap's dtrace and with probegen-dtrace. */
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <time.h>
#include "stdtypes.h"

int fire(int n);

int fire(int n)
{
	const char *key = "alpha!";
	uint8_t nkey = (uint8_t)(5 + n);
	if (STDT_STORE_ENABLED() || n > 100)
		STDT_STORE(key, nkey, (size_t)n * 3);
	STDT_WIDTHS((uintmax_t)n, (intmax_t)-n, (time_t)n, (ssize_t)-n, (off_t)n, (pid_t)n, (u_int32_t)n, (unsigned int)n);
	STDT_POSIX((uid_t)n, (gid_t)n, (u_int8_t)n, (u_int16_t)n, (u_int64_t)n, (clock_t)n, (mode_t)n, (unsigned long long)n);
	STDT_FIXED((int_least16_t)n, (uint_fast32_t)n, (socklen_t)n, (intptr_t)n, (ptrdiff_t)n, (unsigned)n);
	STDT_NONE();
	return n;
}
