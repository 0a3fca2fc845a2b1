/* A tiny counter library; its probes show where a library fires USDT probes. */
#ifndef COUNTER_H
#define COUNTER_H

#include <stdint.h>

struct counter {
	char name[32];
	int64_t total;
};

void counter_init(struct counter *counter, const char *name);
int64_t counter_add(struct counter *counter, int64_t amount);
void counter_reset(struct counter *counter);
const char *counter_version(void);

#endif
