/* A shared library holding a probe, for `probegen trace` to find in
 * /proc/PID/maps. */
#include <sys/sdt.h>

void tracing_lib_fire(int value);

void tracing_lib_fire(int value)
{
	DTRACE_PROBE1(pglib, lib_hit, value);
}
