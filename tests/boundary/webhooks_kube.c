/* webhooks/ does not list kube/ in its DEPS: this must not compile. */
#include "kube/kube.h"

int boundary_probe(void);
int boundary_probe(void) { return 0; }
