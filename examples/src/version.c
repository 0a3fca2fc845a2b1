/* No probes here: this object must never recompile when the catalog changes. */
#include "counter.h"

const char *
counter_version(void)
{
	return "1.0";
}
