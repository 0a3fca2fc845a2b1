/* An executable whose probes all live in a shared library it loads. */
#include <stdint.h>

struct qp;
void pg_fire(struct qp *qp, const char *name, int state);

int main(int argc, char **argv)
{
	uint16_t qid = (uint16_t)argc;
	pg_fire((struct qp *)&qid, argv[0], argc);
	return 0;
}
