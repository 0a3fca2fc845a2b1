/*
 * Fires every probe of tests/catalogs/members.yaml with known values,
 * through the header probegen generates for it (members.h). Built with -g:
 * the scripts are generated with --binary and read the structs' members
 * at the offsets the DWARF gives, and the names of enum pgm_state (which
 * the catalog leaves out) from it.
 *
 * Protocol of tracing_types.c: READY, wait for a line on stdin, then for
 * each hit "EXPECT <line>" (formatted here by hand, an independent oracle)
 * and the probe; DONE at the end.
 */
#include "members.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* PGM_STATE_DRAINING and PGM_STATE_FAILED are named nowhere in the
 * catalog: a tracer prints them only if it read this enum's DWARF. */
enum pgm_state { PGM_STATE_IDLE, PGM_STATE_RUNNING, PGM_STATE_DRAINING = 7, PGM_STATE_FAILED = -2 };
/* One byte wide: a reader of 4 bytes would take the next member's bytes. */
enum __attribute__((packed)) pgm_prio { PGM_PRIO_LOW = 1, PGM_PRIO_HIGH = 200 };
/* Anonymous, named by its typedef in DWARF only. */
typedef enum { PGM_KIND_READ = 1, PGM_KIND_WRITE = 2 } pgm_kind_t;
typedef uint16_t pgm_qid_t;

struct pgm_device {
	char name[32];
	char serial[80];
	uint64_t capacity;
	const char *label;
	enum pgm_state state;
};

struct pgm_request {
	uint8_t opcode;
	pgm_qid_t qid;
	int32_t delta;
	int8_t bias;
	int16_t skew;
	struct {
		uint32_t nsid;
		union {
			uint64_t raw;
			struct { uint32_t lo, hi; };
		};
	} id;
	union {
		int64_t as_signed;
		uint64_t as_unsigned;
	};
	struct pgm_device *dev;
	enum pgm_state state;
	enum pgm_prio prio;
	uint8_t after_prio; /* next to prio: must not leak into it */
	pgm_kind_t kind;
	bool urgent;
	char tag[12];
};

union pgm_value {
	uint32_t u32;
	int16_t s16;
	char text[8];
};

static const char *state_name(enum pgm_state s)
{
	switch (s) {
	case PGM_STATE_IDLE: return "IDLE";
	case PGM_STATE_RUNNING: return "RUNNING";
	case PGM_STATE_DRAINING: return "DRAINING";
	case PGM_STATE_FAILED: return "FAILED";
	}
	return NULL;
}

static const char *prio_name(enum pgm_prio p)
{
	return p == PGM_PRIO_LOW ? "PGM_PRIO_LOW" : p == PGM_PRIO_HIGH ? "PGM_PRIO_HIGH" : NULL;
}

static const char *kind_name(pgm_kind_t k)
{
	return k == PGM_KIND_READ ? "PGM_KIND_READ" : k == PGM_KIND_WRITE ? "PGM_KIND_WRITE" : NULL;
}

/* " label=NAME" or " label=UNKNOWN(n)" */
static void print_enum(const char *label, const char *name, int value)
{
	if (name)
		printf(" %s=%s", label, name);
	else
		printf(" %s=UNKNOWN(%d)", label, value);
}

static void submit(struct pgm_request *req, uint32_t len)
{
	printf("EXPECT submit req=%p req->opcode=%u req->qid=%u req->delta=%" PRId32 " req->id.nsid=%" PRIu32
	       " req->id.hi=%" PRIu32 " req->as_signed=%" PRId64,
	       (void *)req, req->opcode, req->qid, req->delta, req->id.nsid, req->id.hi, req->as_signed);
	print_enum("req->state", state_name(req->state), req->state);
	print_enum("req->prio", prio_name(req->prio), req->prio);
	print_enum("req->kind", kind_name(req->kind), req->kind);
	printf(" req->urgent=%u req->tag=%s len=%" PRIu32 "\n", req->urgent, req->tag, len);
	PGMEM_SUBMIT(req, len);
}

static void complete(int status, uint64_t flags, struct pgm_request *req)
{
	printf("EXPECT complete status=%d flags=0x%" PRIx64 " req=%p req->qid=%u req->bias=%d req->skew=%d"
	       " req->id.lo=%" PRIu32 " req->id.raw=%" PRIu64 " req->as_unsigned=%" PRIu64 " req->dev=%p\n",
	       status, flags, (void *)req, req->qid, req->bias, req->skew, req->id.lo, req->id.raw, req->as_unsigned,
	       (void *)req->dev);
	PGMEM_COMPLETE(status, flags, req);
}

static void value(union pgm_value *val, const struct pgm_request *req)
{
	printf("EXPECT value val=%p val->u32=%" PRIu32 " val->s16=%d val->text=%.8s req=%p req->opcode=%u\n",
	       (void *)val, val->u32, val->s16, val->text, (const void *)req, req->opcode);
	PGMEM_VALUE(val, req);
}

static void device(struct pgm_device *dev, enum pgm_state from, enum pgm_state to)
{
	printf("EXPECT device dev=%p dev->name=%s dev->capacity=%" PRIu64 " dev->label=%.63s",
	       (void *)dev, dev->name, dev->capacity, dev->label ? dev->label : "");
	print_enum("dev->state", state_name(dev->state), dev->state);
	print_enum("from", state_name(from), from);
	print_enum("to", state_name(to), to);
	printf("\n");
	PGMEM_DEVICE(dev, from, to);
}

static void identify(struct pgm_device *dev, uint16_t lun)
{
	printf("EXPECT identify dev=%p dev->serial=%s lun=%u\n", (void *)dev, dev->serial, lun);
	PGMEM_IDENTIFY(dev, lun);
}

int main(void)
{
	static struct pgm_device dev = {
		.capacity = UINT64_MAX - 5, .state = PGM_STATE_RUNNING,
		/* 70 characters: both tools print the first 63 of a char pointer member */
		.label = "fast ssd, rack 7, slot 12; this label is longer than sixty-three chars",
	};
	static struct pgm_request req;
	static union pgm_value val;
	char line[16];

	strcpy(dev.name, "nvme0n1");
	for (int i = 0; i < (int)sizeof(dev.serial) - 1; i++)
		dev.serial[i] = (char)('A' + i % 26);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;

	req.opcode = 0xfe;
	req.qid = 65000;
	req.delta = -123456;
	req.bias = INT8_MIN;
	req.skew = INT16_MIN;
	req.id.nsid = 7;
	req.id.lo = 0x11223344;
	req.id.hi = 0xabcdef;
	req.as_signed = INT64_MIN + 9;
	req.dev = &dev;
	req.state = PGM_STATE_DRAINING;
	req.prio = PGM_PRIO_HIGH;
	req.after_prio = 0x5a;
	req.kind = PGM_KIND_WRITE;
	req.urgent = true;
	strcpy(req.tag, "tag-0123456");
	submit(&req, 4096);
	memcpy(val.text, "AZbcdefg", 8); /* all 8 bytes, no NUL */
	value(&val, &req);
	complete(-5, 0xdeadbeef00ULL, &req);

	req.opcode = 0;
	req.qid = 1;
	req.delta = 77;
	req.bias = -1;
	req.skew = 300;
	req.id.raw = UINT64_MAX;
	req.as_unsigned = 42;
	req.state = PGM_STATE_FAILED;
	req.prio = PGM_PRIO_LOW;
	req.after_prio = 0xff;
	req.kind = (pgm_kind_t)9;
	req.urgent = false;
	strcpy(req.tag, "");
	req.dev = NULL;
	submit(&req, 0);
	complete(0, 0, &req);

	req.state = (enum pgm_state)3;
	req.prio = (enum pgm_prio)0;
	req.kind = PGM_KIND_READ;
	submit(&req, UINT32_MAX);

	identify(&dev, 3);
	device(&dev, PGM_STATE_IDLE, PGM_STATE_RUNNING);
	dev.state = PGM_STATE_FAILED;
	dev.label = NULL;
	strcpy(dev.name, "");
	device(&dev, PGM_STATE_DRAINING, (enum pgm_state)12);

	dev.serial[5] = '\0';
	identify(&dev, UINT16_MAX);

	printf("DONE\n");
	return 0;
}
