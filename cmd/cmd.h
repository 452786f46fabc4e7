/* cmd/cmd.h - subcommand entry points, one per row of the table in main.c.
 * Each returns the process exit code (0 success, 1 failure or denial, 2 usage
 * or input error). argv[0] is the subcommand name; argv is borrowed. */
#ifndef PGOP_CMD_CMD_H
#define PGOP_CMD_CMD_H

/* `pgop controller --tls-cert-file F --tls-key-file F [--listen ADDR:PORT]
 * [--log-level L] [--threads N] [--kubeconfig F]`: serves the admission
 * webhooks, /healthz, /readyz and /metrics over HTTPS until SIGTERM/SIGINT
 * (cmd/controller.c). */
int cmd_controller(int argc, char **argv);

/* `pgop validate -f FILE [-f FILE...] [--old FILE] [-o text|json]`: admission
 * offline, on YAML or JSON manifests or AdmissionReviews (cmd/validate.c). */
int cmd_validate(int argc, char **argv);

/* `pgop selftest [-n NS] [--kubeconfig F] [--timeout S]`: server-side dry-run
 * create of an invalid and a valid Cluster through the API server; 0 when
 * admission answers as pgop (the chart's helm test hook; cmd/selftest.c). */
int cmd_selftest(int argc, char **argv);

/* `pgop version` (cmd/main.c). */
int cmd_version(int argc, char **argv);

/* `pgop crd [--kind K] [-o yaml|json] [--output-dir DIR]`: prints or writes
 * the CustomResourceDefinitions (cmd/crd.c). */
int cmd_crd(int argc, char **argv);

/* `pgop instance init|join|run|status`, `pgop bootstrap DEST` (cmd/instance.c). */
int cmd_instance(int argc, char **argv);
int cmd_bootstrap(int argc, char **argv);
/* `pgop instance wal-archive|wal-restore` (cmd/wal.c; argv[0] is the
 * sub-subcommand): the exit code, or -1 when argv[0] is neither. */
int cmd_instance_wal(int argc, char **argv);
/* `pgop instance restore` (cmd/restore.c; argv[0] is the sub-subcommand):
 * the exit code, or -1 when argv[0] is not "restore". */
int cmd_instance_restore(int argc, char **argv);
/* `pgop instance backup` (cmd/backup.c; argv[0] is the sub-subcommand): the
 * exit code, or -1 when argv[0] is not "backup". */
int cmd_instance_backup(int argc, char **argv);

#endif
