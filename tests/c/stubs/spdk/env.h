/* Stand-in for SPDK's spdk/env.h: the clock the _TICKS probes read. */
#include <stdint.h>
uint64_t spdk_get_ticks(void);
