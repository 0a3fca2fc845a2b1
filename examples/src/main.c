#include <stdio.h>
#include <stdlib.h>

#include "counter.h"
#include "counter_probes.h"

int
main(int argc, char **argv)
{
	uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 3;
	struct counter counter;

	counter_init(&counter, "demo");
	COUNTER_PROBE_DEMO_START(rounds);
	for (uint32_t i = 1; i <= rounds; i++) {
		counter_add(&counter, i);
	}
	COUNTER_PROBE_DEMO_DONE(counter.total);
	printf("counter %s %s: total %lld\n", counter.name, counter_version(), (long long)counter.total);
	counter_reset(&counter);
	return 0;
}
