/*
 * A provider file written the way real projects write theirs: comments of
 * both kinds, stability pragmas, #define'd type names (which `dtrace -C`
 * expands), typedefs, a struct declaration, '__' in probe names, argument
 * names on some probes, DTrace's `string`. Only what SystemTap's dtrace
 * (4.8) also reads: it fails on a named 'unsigned long long x' and reads
 * '(void)' as one argument.
 */
#define OrderId unsigned int
#define flag_t unsigned char

typedef unsigned long long shop_time_t;
struct basket { int items; };

provider shop {
	/* an order starts: its id, the customer */
	probe order__start(OrderId, const char *);
	probe order__done(OrderId id, int status, uint64_t elapsed);  // named
	probe basket__add(struct basket *b, int64_t price, uintptr_t cookie);
	probe log(string message, flag_t);
	probe tick(shop_time_t);
	probe total(unsigned long long, long long);
	probe idle();
	probe shutdown();
	probe pay__card__check(const char *card, unsigned short, long, signed char);
};

#pragma D attributes Evolving/Evolving/Common provider shop provider
#pragma D attributes Private/Private/Unknown provider shop module
#pragma D attributes Private/Private/Unknown provider shop function
#pragma D attributes Evolving/Evolving/Common provider shop name
#pragma D attributes Evolving/Evolving/Common provider shop args
