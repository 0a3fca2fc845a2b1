/*
 * SPDK's string probes with strings of every length up to SPDK's limits
 * (NQNs of 223 characters, transport addresses of 256), fired from two
 * threads at once so that two CPUs print long lines at the same moment.
 * Protocol as tracing_types.c: READY, a line on stdin, "EXPECT <line>"
 * for each distinct line (with "COUNT n" hits of it), DONE.
 */
#include "spdk_internal/usdt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HITS 400
static const int lengths[] = { 0, 1, 62, 63, 64, 68, 125, 126, 127, 188, 189, 190, 222, 223 };
#define NLEN (int)(sizeof(lengths) / sizeof(lengths[0]))

struct thread_strings {
	char subnqn[NLEN][224];
	char hostnqn[NLEN][224];
	char traddr[257];
};

static struct thread_strings g_strings[2];

static void fill(char *out, int length, char first, int salt)
{
	for (int i = 0; i < length; i++)
		out[i] = (char)(first + (i + salt) % 26);
	out[length] = '\0';
	/* bytes after the NUL are not part of the string: a reader must stop */
	memset(out + length + 1, 'Z', 223 - length > 0 ? (size_t)(222 - length) : 0);
}

static void *fire(void *arg)
{
	struct thread_strings *s = arg;

	for (int hit = 0; hit < HITS; hit++) {
		int n = hit % NLEN;
		SPDK_DTRACE_PROBE2(nvmf_subsystem_add_host, s->subnqn[n], s->hostnqn[n]);
		SPDK_DTRACE_PROBE4(nvmf_subsystem_add_listener, s->subnqn[n], 3, s->traddr, "4420");
		SPDK_DTRACE_PROBE1(nvmf_subsystem_create, s->hostnqn[n]);
	}
	return NULL;
}

int main(void)
{
	pthread_t threads[2];
	char line[16];

	for (int t = 0; t < 2; t++) {
		for (int n = 0; n < NLEN; n++) {
			char *sub = g_strings[t].subnqn[n], *host = g_strings[t].hostnqn[n];
			fill(sub, lengths[n], t ? 'A' : 'a', n);
			fill(host, lengths[n], t ? 'a' : 'A', n + 7);
		}
		fill(g_strings[t].traddr, 223, '0' + t, 0);
		memset(g_strings[t].traddr, t ? 'x' : 'y', 256);
		g_strings[t].traddr[256] = '\0';
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int t = 0; t < 2; t++) {
		for (int n = 0; n < NLEN; n++) {
			struct thread_strings *s = &g_strings[t];
			int times = HITS / NLEN + (n < HITS % NLEN);

			printf("EXPECT nvmf_subsystem_add_host subnqn=%s hostnqn=%s\nCOUNT %d\n", s->subnqn[n], s->hostnqn[n], times);
			printf("EXPECT nvmf_subsystem_add_listener subnqn=%s trtype=TCP traddr=%s trsvcid=4420\nCOUNT %d\n",
			       s->subnqn[n], s->traddr, times);
			printf("EXPECT nvmf_subsystem_create subnqn=%s\nCOUNT %d\n", s->hostnqn[n], times);
		}
	}
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int t = 0; t < 2; t++)
		pthread_create(&threads[t], NULL, fire, &g_strings[t]);
	for (int t = 0; t < 2; t++)
		pthread_join(threads[t], NULL);
	printf("DONE\n");
	return 0;
}
