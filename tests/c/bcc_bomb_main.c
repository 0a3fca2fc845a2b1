/* Calls into the three libraries of tests/c/bcc_bomb_lib.c after READY
 * and a line on stdin; built without debug info. */
#include <stdio.h>

void bomb_fire_1(void);
void bomb_fire_2(void);
void bomb_fire_3(void);

int main(void)
{
	char line[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	bomb_fire_1();
	bomb_fire_2();
	bomb_fire_3();
	printf("DONE\n");
	return 0;
}
