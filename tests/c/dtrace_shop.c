/* Call sites of tests/d/shop.d exactly as a project writes them against
 * `dtrace -h`'s header: built unchanged against that header and against
 * probegen's. PROBES_H names the header to include. */
#include <stdint.h>
#include <stdio.h>
#include PROBES_H

struct basket { int items; };

static volatile unsigned int g_order = 7;

int main(int argc, char **argv)
{
	struct basket b = { argc };
	unsigned int order = g_order + (unsigned int)argc;
	const char *customer = argc > 5 ? argv[1] : "alice";
	unsigned long long elapsed = (unsigned long long)argc * 1000ull;
	int64_t price = -(int64_t)argc * 250;
	uintptr_t cookie = (uintptr_t)&b;
	char message[16];
	unsigned char flag = (unsigned char)argc;

	snprintf(message, sizeof(message), "hello %d", argc);
	if (SHOP_ORDER_START_ENABLED())
		fprintf(stderr, "order__start is traced\n");
	SHOP_ORDER_START(order, customer);
	SHOP_BASKET_ADD(&b, price, cookie);
	SHOP_LOG(message, flag);
	SHOP_TICK(elapsed + 1);
	SHOP_IDLE();
	SHOP_SHUTDOWN();
	SHOP_PAY_CARD_CHECK(customer, (unsigned short)argc, (long)argc, (signed char)-argc);
	SHOP_TOTAL(elapsed, (long long)price);
	SHOP_ORDER_DONE(order, argc - 1, (uint64_t)elapsed);
	return b.items == 0;
}
