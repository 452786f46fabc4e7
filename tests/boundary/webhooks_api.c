/* Control probe: webhooks/ lists api/ in its DEPS, so this compiles. */
#include "api/cluster.h"
#include "webhooks/rules.h"

int boundary_probe(void);
int boundary_probe(void) { return (int)sizeof(struct api_cluster); }
