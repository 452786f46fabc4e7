/* instance/stop.c - shutdown timeouts from the Cluster spec (instance.h). */
#include "instance/instance.h"

#define FAST_MIN_S 30 /* CNPG: the fast shutdown always gets at least this */
#define MAX_S 86400   /* a day: anything longer is a typo, not a wish */

static unsigned clamp(int64_t v)
{
	return v <= 0 ? 0 : v > MAX_S ? MAX_S : (unsigned)v;
}

void inst_stop_timeouts(const struct api_cluster *c, bool demotion, unsigned smart_override_s,
			struct inst_stop_timeouts *ret)
{
	if (demotion) {
		unsigned sw = clamp(c->spec.switchover_delay);
		*ret = (struct inst_stop_timeouts){ .smart_s = 0, .fast_s = sw ? sw : 1 };
		return;
	}
	unsigned smart = smart_override_s ? clamp(smart_override_s)
					  : clamp(c->spec.smart_shutdown_timeout);
	int64_t rest = c->spec.stop_delay - (int64_t)smart;
	*ret = (struct inst_stop_timeouts){ .smart_s = smart,
					    .fast_s = rest > FAST_MIN_S ? clamp(rest) : FAST_MIN_S };
}
