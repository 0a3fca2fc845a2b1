/*
 * A stand-in for SPDK's own include/spdk_internal/usdt.h, written from what
 * it does (not copied): untyped SPDK_DTRACE_PROBE*(name, ...) macros that
 * call <sys/sdt.h>'s DTRACE_PROBE* with provider spdk and one extra first
 * argument, the literal 0 or, for the _TICKS forms, spdk_get_ticks(). No
 * semaphores, so any probe name compiles. Tests build SPDK-shaped programs
 * with it to see what verify says of a binary built without probegen.
 */
#ifndef SPDK_INTERNAL_USDT_H
#define SPDK_INTERNAL_USDT_H

#include "spdk/config.h"
#include "spdk/env.h"

#if defined(SPDK_CONFIG_USDT) && !defined(SPDK_UNIT_TEST)

#include <sys/sdt.h>

#define SPDK_DTRACE_PROBE(name) DTRACE_PROBE1(spdk, name, 0)
#define SPDK_DTRACE_PROBE1(name, a1) DTRACE_PROBE2(spdk, name, 0, a1)
#define SPDK_DTRACE_PROBE2(name, a1, a2) DTRACE_PROBE3(spdk, name, 0, a1, a2)
#define SPDK_DTRACE_PROBE3(name, a1, a2, a3) DTRACE_PROBE4(spdk, name, 0, a1, a2, a3)
#define SPDK_DTRACE_PROBE4(name, a1, a2, a3, a4) DTRACE_PROBE5(spdk, name, 0, a1, a2, a3, a4)

#define SPDK_DTRACE_PROBE_TICKS(name) DTRACE_PROBE1(spdk, name, spdk_get_ticks())
#define SPDK_DTRACE_PROBE1_TICKS(name, a1) DTRACE_PROBE2(spdk, name, spdk_get_ticks(), a1)
#define SPDK_DTRACE_PROBE2_TICKS(name, a1, a2) DTRACE_PROBE3(spdk, name, spdk_get_ticks(), a1, a2)
#define SPDK_DTRACE_PROBE3_TICKS(name, a1, a2, a3) DTRACE_PROBE4(spdk, name, spdk_get_ticks(), a1, a2, a3)
#define SPDK_DTRACE_PROBE4_TICKS(name, a1, a2, a3, a4) DTRACE_PROBE5(spdk, name, spdk_get_ticks(), a1, a2, a3, a4)

#else

#define SPDK_DTRACE_PROBE(...)
#define SPDK_DTRACE_PROBE1(...)
#define SPDK_DTRACE_PROBE2(...)
#define SPDK_DTRACE_PROBE3(...)
#define SPDK_DTRACE_PROBE4(...)
#define SPDK_DTRACE_PROBE_TICKS(...)
#define SPDK_DTRACE_PROBE1_TICKS(...)
#define SPDK_DTRACE_PROBE2_TICKS(...)
#define SPDK_DTRACE_PROBE3_TICKS(...)
#define SPDK_DTRACE_PROBE4_TICKS(...)

#endif

#endif /* SPDK_INTERNAL_USDT_H */
