/* cmd/main.c - placeholder until subcommands land. */
#include <stdio.h>
int main(void)
{
	puts("pgop " PGOP_VERSION);
	return 0;
}
