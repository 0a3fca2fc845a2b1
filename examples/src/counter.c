#include <string.h>

#include "counter.h"
#include "counter_probes.h"

void
counter_init(struct counter *counter, const char *name)
{
	memset(counter, 0, sizeof(*counter));
	strncpy(counter->name, name, sizeof(counter->name) - 1);
}

int64_t
counter_add(struct counter *counter, int64_t amount)
{
	counter->total += amount;
	COUNTER_PROBE_COUNTER_ADD(counter, amount, counter->total);
	return counter->total;
}

void
counter_reset(struct counter *counter)
{
	COUNTER_PROBE_COUNTER_RESET(counter->name, counter->total);
	counter->total = 0;
}
