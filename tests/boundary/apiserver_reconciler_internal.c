/* apiserver/ reads the reconciler through its public header only: must not compile. */
#include "reconciler/internal.h"

int boundary_probe(void);
int boundary_probe(void) { return 0; }
