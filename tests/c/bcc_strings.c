/*
 * Fires subsystem_add of tests/catalogs/bcc_strings.yaml with two NQNs
 * in char[224] arrays as SPDK keeps them: one of 223 characters (the most
 * NVMe allows), one short. Protocol of tests/helpers/tracing.py: READY,
 * a line on stdin, then EXPECT lines and DONE.
 */
#include "bcc_strings.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
	static char subnqn[224], hostnqn[224] = "nqn.2014-08.org.nvmexpress:uuid:host-1";
	char line[16];
	const char *prefix = "nqn.2016-06.io.spdk:";

	memcpy(subnqn, prefix, strlen(prefix));
	for (size_t i = strlen(prefix); i < sizeof(subnqn) - 1; i++)
		subnqn[i] = (char)('a' + i % 26);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("EXPECT subsystem_add subnqn=%s hostnqn=%s\n", subnqn, hostnqn);
	STRTEST_SUBSYSTEM_ADD(subnqn, hostnqn);
	printf("DONE\n");
	return 0;
}
