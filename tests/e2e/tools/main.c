/* tests/e2e/tools/main.c - pgop-writer: dispatch to the write and poll modes (tools.h). */
#include <stdio.h>
#include <string.h>

#include "support/log.h"
#include "tests/e2e/tools/tools.h"

int main(int argc, char **argv)
{
	op_log_set_component("pgop-writer");
	pw_signals_setup();
	if (argc >= 2 && strcmp(argv[1], "write") == 0)
		return pw_writer_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "poll") == 0)
		return pw_poller_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: pgop-writer write|poll ... (see tests/e2e/tools/tools.h)\n");
	return 2;
}
