/* cmd/cmd.h - subcommand entry points; each returns the process exit code
 * (0 success, 1 failure, 2 usage error). argv[0] is the subcommand name. */
#ifndef PGOP_CMD_CMD_H
#define PGOP_CMD_CMD_H

/* `pgop crd [-o yaml|json]`: prints the Cluster CustomResourceDefinition
 * (cmd/crd.c). */
int cmd_crd(int argc, char **argv);

#endif
