/* Calls into libtracing_lib.so after READY and a line on stdin. */
#include <stdio.h>

void tracing_lib_fire(int value);

int main(void)
{
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("EXPECT lib_hit value=-42\n");
	tracing_lib_fire(-42);
	printf("DONE\n");
	return 0;
}
