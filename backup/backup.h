/* backup/backup.h - WAL archiving and restoring, barman-cloud compatible
 * (issue 25): what `pgop instance wal-archive` (archive_command) and
 * `pgop instance wal-restore` (restore_command) do.
 *
 * Object layout, as barman-cloud 3.19.1 writes and reads it
 * (barman/clients/cloud_walarchive.py, barman/xlog.py hash_dir()):
 *   <prefix>/<server>/wals/<TLI+LOG: first 16 hex>/<segment>[<suffix>]
 *   <prefix>/<server>/wals/<TLI>.history[<suffix>]        (no hash directory)
 *   .partial and .backup files go in the hash directory of their segment.
 * The suffix names the compression: .gz .bz2 .xz .lz4 .zst (.snappy exists
 * in barman but is refused here: no Debian library writes python-snappy's
 * framing format). Streams are the ones barman's Python modules write and
 * read: gzip (one member; more are read), bzip2, xz (.xz container), LZ4
 * frame (lz4.frame), Zstandard frame (zstandard), each through its Debian
 * library (zlib, libbz2, liblzma, liblz4, libzstd); levels are barman's
 * "medium" defaults (gzip 6, bzip2 5, xz 3, lz4 6, zstd 4).
 *
 * Everything is streamed: a segment never needs more than a 64 KiB buffer
 * plus the compressor's state; decompressed output is capped.
 */
#ifndef PGOP_BACKUP_BACKUP_H
#define PGOP_BACKUP_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/objstore.h"
#include "support/buf.h"
#include "support/err.h"

/* The largest WAL segment PostgreSQL allows (wal_segment_size, 1 GiB): the
 * cap on anything decompressed or downloaded for one WAL file. */
#define BK_WAL_MAX_BYTES (1024ull * 1024 * 1024)
/* A WAL file name: 24 hex + ".partial"/".00000028.backup" at most. */
#define BK_WAL_NAME_MAX 40
/* Default path of the configuration file (--config). */
#define BK_CONFIG_DEFAULT "/controller/wal-archive.json"
#define BK_CONFIG_MAX_BYTES (64u * 1024)
#define BK_MAX_PARALLEL 32
/* data.jobs when absent: barman-cloud-backup's own default (-J 2), which
 * CloudNativePG users get */
#define BK_JOBS_DEFAULT 2

/* ---- WAL file names (pure) ---- */

enum bk_wal_kind {
	BK_WAL_SEGMENT, /* 000000010000000A000000FF */
	BK_WAL_HISTORY, /* 00000002.history */
	BK_WAL_PARTIAL, /* 000000010000000A000000FF.partial */
	BK_WAL_BACKUP,  /* 000000010000000A000000FF.00000028.backup */
};

struct bk_wal_name {
	enum bk_wal_kind kind;
	uint32_t tli;
	uint32_t log; /* 0 for a history file */
	uint32_t seg; /* 0 for a history file */
};

/* Parses a WAL file name as PostgreSQL writes it (upper-case hex only);
 * anything else (a path, lower case, other suffixes) is -EINVAL. *ret
 * (optional) written on success. */
OP_MUST_CHECK int bk_wal_name_parse(const char *name, struct bk_wal_name *ret, struct op_err *err);
bool bk_wal_name_valid(const char *name);

/* The segment after seg (24 hex) for a segment size (a power of two, 1 MiB
 * to 1 GiB) into ret[25]. -EINVAL for anything else. */
OP_MUST_CHECK int bk_wal_next_segment(const char *seg, uint64_t seg_size, char ret[25]);

/* ---- compression ---- */

enum bk_compression {
	BK_COMP_NONE,
	BK_COMP_GZIP,
	BK_COMP_BZIP2,
	BK_COMP_XZ,
	BK_COMP_LZ4,
	BK_COMP_ZSTD,
	BK_COMP_SNAPPY, /* recognised (names, suffix), never encoded nor decoded */
};

/* "" / "none" / NULL, gzip, bzip2, xz, lz4, zstd; "snappy" is -ENOTSUP with
 * a message saying so; anything else -EINVAL. */
OP_MUST_CHECK
int bk_compression_parse(const char *name, enum bk_compression *ret, struct op_err *err);
const char *bk_compression_name(enum bk_compression c);   /* "none", "gzip", ... */
const char *bk_compression_suffix(enum bk_compression c); /* "", ".gz", ... */

/* A stored object's base name split into the WAL file name (ret_name,
 * BK_WAL_NAME_MAX + 1 bytes) and the compression its suffix names (at most
 * one suffix, as barman's get_wal_paths()). -EINVAL when it is no WAL file. */
OP_MUST_CHECK
int bk_wal_stored_parse(const char *basename, char *ret_name, enum bk_compression *ret_comp);

/* A streaming encoder or decoder. Output goes to sink in chunks of at most
 * 64 KiB (0 or -errno to abort). More than out_max bytes of output is -EFBIG
 * (nothing past the cap reaches the sink). */
typedef int (*bk_sink_fn)(void *ud, const void *buf, size_t len);
struct bk_codec;

/* *ret owned by the caller (bk_codec_free). BK_COMP_NONE passes bytes through
 * (with the cap); BK_COMP_SNAPPY is -ENOTSUP. */
OP_MUST_CHECK
int bk_codec_new(enum bk_compression comp, bool decompress, uint64_t out_max, bk_sink_fn sink,
		 void *ud, struct bk_codec **ret, struct op_err *err);
/* An encoder for a base backup's tar stream: the levels barman-cloud-backup
 * uses for it where they differ from barman-cloud-wal-archive's (lz4: 0, the
 * fast level of lz4.frame, where WAL gets 6); otherwise as bk_codec_new. */
OP_MUST_CHECK
int bk_codec_new_tar(enum bk_compression comp, uint64_t out_max, bk_sink_fn sink, void *ud,
		     struct bk_codec **ret, struct op_err *err);
/* Feeds len bytes. Decoding: corrupt input is -EBADMSG; data after the end
 * of the stream (other than another gzip member/bzip2 stream/xz stream/frame)
 * is -EBADMSG. */
OP_MUST_CHECK
int bk_codec_write(struct bk_codec *c, const void *in, size_t len, struct op_err *err);
/* Ends the stream: flushes the encoder; a decoder whose input stopped inside
 * a stream (truncated) is -EBADMSG. */
OP_MUST_CHECK int bk_codec_finish(struct bk_codec *c, struct op_err *err);
uint64_t bk_codec_out_bytes(const struct bk_codec *c);
void bk_codec_free(struct bk_codec *c); /* NULL accepted */

/* ---- configuration: a JSON file (mode 0600, no group/other bits) ----
 * {
 *   "destinationPath": "s3://bucket/prefix",       required
 *   "serverName": "cluster-example",               required
 *   "endpointURL": "https://s3.example:9000",      optional (AWS when absent)
 *   "region": "us-east-1",                         optional
 *   "accessKeyIdFile": "/controller/s3/ACCESS_KEY_ID",        required
 *   "secretAccessKeyFile": "/controller/s3/ACCESS_SECRET_KEY", required
 *   "sessionTokenFile": "/controller/s3/SESSION_TOKEN",       optional
 *   "endpointCAFile": "/controller/s3/ca.crt",                optional (PEM)
 *   "walCompression": "gzip",          optional: none (default), gzip, bzip2, xz, lz4, zstd
 *   "maxParallel": 4,                  optional: 1 (default) .. BK_MAX_PARALLEL
 *   "pgdata": "/var/lib/postgresql/data/pgdata",  optional: the working directory
 *                                      (archive_command runs in PGDATA)
 *   "stateDir": "/controller/run"      required: markers and the restore spool
 *   "dataCompression": "gzip",         optional: base backups' data.tar: none
 *                                      (default), gzip, bzip2, lz4 (snappy, xz and
 *                                      zstd are accepted here and refused by the
 *                                      backup: WAL archiving must not stop for them)
 *   "immediateCheckpoint": false,      optional: pg_backup_start(fast)
 *   "jobs": 2,                         optional: 1..BK_MAX_PARALLEL, parts of
 *                                      base backups uploaded at once
 *                                      (BK_JOBS_DEFAULT, barman-cloud-backup's -J)
 *   "maxArchiveSize": 107374182400,    optional: bytes (at least 1 MiB) of a
 *                                      base backup's tar past which it goes on
 *                                      in data_0001.tar... (barman-cloud-backup's
 *                                      --max-archive-size, 100GB by default)
 *   "minChunkSize": 10485760,          optional: a base backup's upload part at
 *                                      least this (5 MiB..256 MiB; --min-chunk-size)
 *   "walReadTimeout": 60,              optional: seconds a WAL transfer / a base
 *   "dataReadTimeout": 60,             backup's may stall (1..86400; barman-cloud's
 *                                      --read-timeout; default 60)
 *   "tags": {"k": "v"},                optional: S3 object tags of every upload
 *                                      (barman-cloud --tags; os_tag_check, at
 *                                      most OS_TAGS_MAX)
 *   "historyTags": {"k": "v"},         optional: those of .history files instead
 *                                      (--history-tags; else "tags")
 *   "walEncryption": "AES256",         optional: x-amz-server-side-encryption of
 *   "dataEncryption": "aws:kms"        WAL files / of base backups (barman-cloud -e)
 * }
 * Credentials live in their own files (read at each use, so rotated Secrets
 * are picked up), never in argv, the environment or this file. Unknown keys
 * are refused (a typo must not silently change behaviour). */
struct bk_config {
	/* all owned */
	char *destination_path, *server_name, *endpoint_url, *region;
	char *access_key_file, *secret_key_file, *session_token_file, *ca_file;
	char *pgdata, *state_dir;
	enum bk_compression compression;
	unsigned max_parallel;
	struct os_dest dest; /* destination_path parsed */
	/* base backups (instance/basebackup.c) */
	enum bk_compression data_compression; /* none, gzip, bzip2, lz4 */
	bool immediate_checkpoint;
	unsigned jobs; /* BK_JOBS_DEFAULT when absent */
	uint64_t max_archive_size; /* BK_TAR_MAX_ARCHIVE_DEFAULT when absent */
	uint64_t min_chunk_size;   /* a base backup's upload part at least this; 0: none */
	/* seconds a transfer may stall (barman-cloud's --read-timeout) for WAL
	 * files and for base backups; 0: objstore's default (60 s) */
	long wal_read_timeout_s, data_read_timeout_s;
	/* tags and encryption (bk_client_set_attrs): encoded x-amz-tagging
	 * values (os_tagging_add), NULL when none; AES256 | aws:kms, NULL: none */
	char *tagging, *history_tagging;        /* owned */
	char *wal_encryption, *data_encryption; /* owned */
};

/* What an upload is, for its tags and encryption. */
enum bk_put_kind {
	BK_PUT_WAL,     /* a segment, .partial or .backup file: tags, walEncryption */
	BK_PUT_HISTORY, /* a .history file: historyTags (else tags), walEncryption */
	BK_PUT_DATA,    /* a base backup's objects: tags, dataEncryption */
};
/* Sets c's put attributes (os_client_set_put_attrs) for uploads of kind. */
OP_MUST_CHECK int bk_client_set_attrs(struct os_client *c, const struct bk_config *cfg,
				      enum bk_put_kind kind, struct op_err *err);

/* Parses the JSON text. On failure nothing is owned by *ret. */
OP_MUST_CHECK
int bk_config_parse(const char *json, size_t len, struct bk_config *ret, struct op_err *err);
/* Reads path (regular file, no group/other permission bits, <= BK_CONFIG_MAX_BYTES). */
OP_MUST_CHECK int bk_config_load(const char *path, struct bk_config *ret, struct op_err *err);
void bk_config_done(struct bk_config *c);

/* "<prefix>/<server>/wals/" (the prefix part omitted when empty) into out. */
OP_MUST_CHECK int bk_wals_prefix(const struct bk_config *cfg, struct op_buf *out);
/* The object key of a WAL file stored with compression comp. */
OP_MUST_CHECK
int bk_wal_key(const struct bk_config *cfg, const char *walname, enum bk_compression comp,
	       struct op_buf *out, struct op_err *err);

/* ---- PostgreSQL system identifiers ---- */

/* From the first bytes of pg_control (system_identifier is its first
 * member, uint64 in the server's byte order, i.e. this machine's). */
OP_MUST_CHECK
int bk_sysid_from_pg_control(const void *data, size_t len, uint64_t *ret, struct op_err *err);
/* From the first page of a WAL segment (XLogLongPageHeaderData: xlp_sysid at
 * offset 24, after the 24-byte short header; XLP_LONG_HEADER must be set). */
OP_MUST_CHECK
int bk_sysid_from_wal(const void *data, size_t len, uint64_t *ret, struct op_err *err);

/* ---- base backups: barman-cloud's layout and backup.info (pure) ----
 * As barman-cloud-backup 3.19.1 writes them (barman/cloud.py
 * CloudBackupUploader, barman/infofile.py BackupInfo):
 *   <prefix>/<server>/base/<backupId>/backup.info
 *   <prefix>/<server>/base/<backupId>/data.tar[.gz|.bz2|.lz4|.snappy]
 *   <prefix>/<server>/base/<backupId>/<tablespace oid>.tar[...]
 * The backup id is the start time, strftime("%Y%m%dT%H%M%S"). Tars are
 * compressed whole (tarfile "w|gz", "w|bz2"; lz4 and snappy by barman's own
 * stream compressor); barman-cloud-backup offers no xz or zstd for them and
 * barman-cloud-restore recognises only these suffixes. */
#define BK_BACKUP_ID_LEN 15                   /* 20240102T030405 */
#define BK_BACKUP_INFO_MAX (1024u * 1024)     /* a backup.info read or written */
#define BK_BACKUP_INFO_NAME "backup.info"

/* Formats epoch seconds (UTC) as a backup id into ret[BK_BACKUP_ID_LEN + 1]. */
OP_MUST_CHECK int bk_backup_id_format(int64_t epoch_s, char ret[BK_BACKUP_ID_LEN + 1]);
/* True for "YYYYMMDDTHHMMSS" with a plausible date and time. */
bool bk_backup_id_valid(const char *id);
/* "<prefix>/<server>/base/" (the prefix part omitted when empty) into out. */
OP_MUST_CHECK int bk_base_prefix(const struct bk_config *cfg, struct op_buf *out);
/* The tar name barman gives a compression: "data" -> "data.tar.gz" into
 * out. -ENOTSUP (err says why) for xz and zstd, which barman cannot restore. */
OP_MUST_CHECK int bk_backup_tar_name(const char *name, enum bk_compression comp,
				     struct op_buf *out, struct op_err *err);
/* The same for a split tar's part: part 0 is "data.tar", part n > 0
 * "data_%04u.tar" (barman-cloud-backup's _build_dest_name). */
OP_MUST_CHECK int bk_backup_tar_part_name(const char *name, unsigned part, enum bk_compression comp,
					  struct op_buf *out, struct op_err *err);
/* The object key of file (BK_BACKUP_INFO_NAME, a tar name) of backup id. */
OP_MUST_CHECK int bk_backup_key(const struct bk_config *cfg, const char *id, const char *file,
				struct op_buf *out, struct op_err *err);

enum bk_backup_status {
	BK_STATUS_EMPTY, /* barman's default */
	BK_STATUS_STARTED,
	BK_STATUS_WAITING_FOR_WALS,
	BK_STATUS_DONE,
	BK_STATUS_SYNCING,
	BK_STATUS_FAILED,
};
const char *bk_backup_status_name(enum bk_backup_status s); /* "DONE", ... */

/* An optional integer (barman's None when !set). */
struct bk_opt_int {
	bool set;
	int64_t v;
};
/* An optional timezone-aware time: Python's str(datetime), e.g.
 * "2024-01-02 03:04:05.123456+00:00" (no fraction when it is 0). */
struct bk_time {
	bool set;
	int64_t epoch_us;     /* microseconds since 1970-01-01 UTC */
	int32_t utc_offset_s; /* the offset it is written with */
};
struct bk_tablespace {
	char *name;     /* owned */
	uint32_t oid;
	char *location; /* owned */
};

/* Every field of barman's BackupInfo; NULL / !set is Python's None. The
 * backup id itself is no field: it is the directory name. */
struct bk_backup_info {
	/* all strings owned, NULL for None; one line each (no CR/LF) except
	 * backup_label, written as a Python string literal */
	char *backup_label, *backup_name, *begin_wal, *begin_xlog, *end_wal, *end_xlog;
	char *children_backup_ids, *compression, *config_file, *hba_file, *ident_file;
	char *data_checksums, *encryption, *error, *mode, *parent_backup_id, *pgdata;
	char *server_name, *summarize_wal, *systemid;
	/* Python literals kept verbatim (owned, NULL for None): dicts and lists
	 * pgop writes itself or never interprets */
	char *copy_stats, *included_files, *snapshots_info;
	struct bk_opt_int begin_offset, end_offset, size, deduplicated_size, cluster_size;
	struct bk_opt_int timeline, version, xlog_segment_size;
	struct bk_time begin_time, end_time;
	enum bk_backup_status status;
	struct bk_tablespace *tablespaces; /* owned, n_tablespaces of them; NULL for None */
	size_t n_tablespaces;
};

/* A fresh info as barman's BackupInfo(): status EMPTY, xlog_segment_size
 * 16 MiB, everything else None. */
void bk_backup_info_init(struct bk_backup_info *bi);
void bk_backup_info_done(struct bk_backup_info *bi); /* frees every member */

/* Renders bi as barman's save() does: "key=value\n" for every field in
 * sorted order, None for an absent one (backup_name and snapshots_info are
 * left out when absent). -EINVAL (err names the field) for a line break in
 * a one-line field; -EMSGSIZE past out's cap. */
OP_MUST_CHECK int bk_backup_info_render(const struct bk_backup_info *bi, struct op_buf *out,
					struct op_err *err);
/* Parses a backup.info (at most BK_BACKUP_INFO_MAX bytes) as barman's load()
 * does: blank and '#' lines skipped, "key = value" stripped, "None" is
 * absent, later lines win, unknown keys ignored (written by a newer barman).
 * A naive time (no offset) is taken as UTC. -EBADMSG (err names the line)
 * for anything malformed. On success *ret owns everything; on failure
 * nothing. */
OP_MUST_CHECK int bk_backup_info_parse(const char *text, size_t len, struct bk_backup_info *ret,
				       struct op_err *err);

/* ---- base backups: PGDATA as a streamed tar ----
 * The tar barman-cloud-backup writes for PGDATA (CloudBackupUploader
 * ._backup_data_files): a POSIX tar (pax) of the directory walked top-down,
 * entries named as os.walk/tarfile name them ("./PG_VERSION" at the top,
 * "base/1/112" below), minus barman's exclusions (postgres_plumbing.py
 * PGDATA_EXCLUDE_LIST + EXCLUDE_LIST: the contents of pg_wal, pg_xlog, log,
 * pg_log, pg_dynshmem, pg_notify, pg_replslot, pg_serial, pg_stat_tmp,
 * pg_snapshots, pg_subtrans; postmaster.pid/.opts, pgsql_tmp*,
 * pg_internal.init, recovery.conf, standby.signal, *.tmp of the server,
 * temporary relations), then global/pg_control last, then backup_label
 * (the text pg_backup_stop returned). Symbolic links to directories are
 * left out as os.walk leaves them (tablespaces travel in their own tar),
 * except a pg_wal link, written as an empty directory so the restored
 * PGDATA has one. A file that vanishes during the walk is skipped; one that
 * shrinks is padded with zeros to its size in the header (postgres's WAL
 * replay repairs both, as barman's TarFileIgnoringTruncate relies on). */
/* Called once the walk and global/pg_control are in the tar, before
 * ./backup_label: where an online backup calls pg_backup_stop, whose label
 * only exists then. 0 with *ret_label (borrowed from ud until the stream is
 * freed; NULL: no backup_label) or -errno with err set (the tar fails). */
typedef int (*bk_tar_label_fn)(void *ud, const char **ret_label, struct op_err *err);
struct bk_tar_opts {
	const char *pgdata;       /* borrowed: the directory */
	const char *backup_label; /* borrowed: added as ./backup_label; NULL: none */
	bk_tar_label_fn label_fn; /* optional: asked for the label instead of backup_label */
	void *label_ud;           /* borrowed: label_fn's */
	const _Atomic bool *cancel; /* borrowed, optional: true makes the next read -ECANCELED */
	enum bk_compression compression; /* none, gzip, bzip2, lz4 */
	size_t part_size;         /* upload part (0: bk_tar_part_size(jobs)) */
	unsigned jobs;            /* parts uploaded at once (0: 1), <= BK_MAX_PARALLEL */
	/* borrowed, optional: a tablespace's tar instead (pgdata is then its
	 * location): only the top directories named with this prefix
	 * ("PG_16_", barman's include "/PG_<major>_*") and what is below them,
	 * no "." entry, no pg_control, no label */
	const char *tablespace_prefix;
	/* a part's compressed size past which the next entry starts a new tar
	 * (barman-cloud-backup's --max-archive-size, checked as it does: before
	 * each entry, so a part ends on an entry's boundary and is a whole tar);
	 * 0: BK_TAR_MAX_ARCHIVE_DEFAULT */
	uint64_t max_archive_size;
};
/* barman-cloud-backup's default --max-archive-size (100GB). With it no
 * part needs more than 10,000 upload parts of BK_TAR_PART_FLOOR (156 GiB),
 * whatever the database's size. */
#define BK_TAR_MAX_ARCHIVE_DEFAULT (100ull * 1024 * 1024 * 1024)
#define BK_TAR_MAX_ARCHIVE_MIN (1024u * 1024) /* the smallest accepted */
/* The upload holds jobs + 1 part buffers (jobs uploading, one being read):
 * BK_TAR_UPLOAD_MEM in all, so parts are BK_TAR_UPLOAD_MEM / (jobs + 1),
 * at most BK_TAR_PART_DEFAULT and at least BK_TAR_PART_FLOOR. S3 allows
 * 10,000 parts: 64 MiB parts (jobs 1) carry a tar of 625 GiB, 42 MiB (jobs
 * 2) 416 GiB, 16 MiB (jobs 7 and more, which then hold (jobs + 1) x 16 MiB)
 * 156 GiB. */
#define BK_TAR_PART_DEFAULT (64u * 1024 * 1024)
#define BK_TAR_PART_FLOOR (16u * 1024 * 1024)
#define BK_TAR_UPLOAD_MEM (128u * 1024 * 1024)
/* The part size of a tar uploaded with jobs parallel uploads (jobs >= 1). */
size_t bk_tar_part_size(unsigned jobs);

struct bk_tar_stats {
	uint64_t files, dirs, symlinks, skipped; /* skipped: vanished or special files */
	uint64_t data_bytes;   /* file contents read */
	uint64_t tar_bytes;    /* the tar before compression */
	uint64_t stored_bytes; /* what was uploaded (compressed) */
	unsigned parts;        /* tars written: 1, more when split */
};

struct bk_tar_stream;
/* A pull stream of the compressed tar: each read walks as far as needed to
 * fill the caller's buffer, holding one 64 KiB chunk of a file and the
 * compressor's state, never the tar. *ret owned by the caller
 * (bk_tar_stream_free); opts and its strings borrowed until then. */
OP_MUST_CHECK int bk_tar_stream_new(const struct bk_tar_opts *opts, struct bk_tar_stream **ret,
				    struct op_err *err);
/* An os_read_fn (ud: the stream): bytes, 0 at the end of the tar or of a
 * part (bk_tar_stream_next_part), -errno on failure (bk_tar_stream_finish
 * says what failed). */
ssize_t bk_tar_stream_read(void *ud, void *buf, size_t len);
/* After a read returned 0: true when that was the end of a part only, the
 * rest of the walk going into the next part. */
bool bk_tar_stream_part_ended(const struct bk_tar_stream *s);
/* Starts the next part (a new tar from the next entry on): 0 or -errno. */
OP_MUST_CHECK int bk_tar_stream_next_part(struct bk_tar_stream *s, struct op_err *err);
/* After the last read: 0, or the failure the reads met (err says which
 * file). ret (optional) filled on success. */
OP_MUST_CHECK int bk_tar_stream_finish(struct bk_tar_stream *s, struct bk_tar_stats *ret,
				       struct op_err *err);
void bk_tar_stream_free(struct bk_tar_stream *s); /* NULL accepted */

/* Streams opts->pgdata's tar to base/<backup_id>/data.tar[suffix] of cfg's
 * destination (os_put_from_reader_jobs: multipart in part_size pieces,
 * opts->jobs of them uploaded at once while the next is read, aborted on
 * failure; nothing is written to disk). A tar whose compressed size passes
 * opts->max_archive_size goes on in data_0001.tar[suffix], data_0002...,
 * each a whole tar, uploaded one after the other (barman-cloud-backup's
 * split; barman-cloud-restore extracts them in order). ret (optional) on
 * success. */
OP_MUST_CHECK int bk_upload_pgdata_tar(const struct bk_config *cfg, const char *backup_id,
				       const struct bk_tar_opts *opts, struct bk_tar_stats *ret,
				       struct op_err *err);
/* The same for tablespace oid: opts->pgdata is its location and
 * opts->tablespace_prefix must be set; the object is
 * base/<backup_id>/<oid>.tar[suffix], barman-cloud-backup's name for it
 * (CloudBackupUploader._backup_data_files, uploaded before data.tar). */
OP_MUST_CHECK int bk_upload_tablespace_tar(const struct bk_config *cfg, const char *backup_id,
					   uint32_t oid, const struct bk_tar_opts *opts,
					   struct bk_tar_stats *ret, struct op_err *err);
/* "PG_<major>_" for server_version_num (14+: major = version / 10000),
 * the tablespace directory prefix of that server, into ret. */
void bk_tablespace_prefix(int server_version_num, char ret[16]);

/* ---- the commands ---- */

/* archive_command: stores the WAL file at path (%p, relative to PGDATA or
 * absolute) at its barman key. 0 only when it is stored (or a marker says a
 * previous call stored it ahead). With maxParallel > 1 the next .ready
 * files of pg_wal/archive_status are uploaded in parallel too and recorded
 * in <stateDir>/wal-archived/. Before the first archive into a destination
 * its wals/ must be empty or hold WAL of this system (pg_control's system
 * identifier); otherwise -EEXIST naming both identifiers. */
OP_MUST_CHECK int bk_wal_archive(const struct bk_config *cfg, const char *path, struct op_err *err);

/* bk_wal_archive records the error of a failed call in
 * <stateDir>/BK_ARCHIVE_ERROR_FILE and removes it on success, so the instance
 * manager can show the store's own error (403, no such bucket, TLS) in its
 * status. 1 with *ret (owned) the last failure's message, 0 when the last
 * call succeeded (or none failed yet), -errno when it cannot be read. */
#define BK_ARCHIVE_ERROR_FILE "wal-archive-error"
OP_MUST_CHECK int bk_archive_error_read(const char *state_dir, char **ret);

/* restore_command: the WAL file walname (%f) decompressed to dest (%p).
 * -ENOENT (err set, nothing to log: postgres probes for files that do not
 * exist) when the store holds no such file. With maxParallel > 1 the next
 * segments are fetched in parallel into <stateDir>/wal-spool/ and later
 * requests are served from there. */
OP_MUST_CHECK int bk_wal_restore(const struct bk_config *cfg, const char *walname, const char *dest,
				 struct op_err *err);

/* ---- base backups: the catalog and the choice of a recovery's backup ----
 * (catalog.c) Every <prefix>/<server>/base/<id>/backup.info of a store,
 * parsed; the choice barman-cloud-restore and CloudNativePG make for a
 * recovery target (the latest DONE backup, by end time, ending at or before
 * the target). Usable for retention too: each entry keeps the whole info
 * (begin_wal/end_wal, begin/end times, status, timeline). */
#define BK_CATALOG_MAX 10000u /* backups of one server listed at most */

struct bk_catalog_entry {
	char id[BK_BACKUP_ID_LEN + 1];
	uint64_t size;              /* the backup.info object's size */
	bool ok;                    /* backup.info read and parsed */
	struct bk_backup_info info; /* owned; meaningful when ok */
	char *error;                /* owned; why not ok (the store's or the parser's words) */
};
struct bk_catalog {
	struct bk_catalog_entry *v; /* owned, n entries, sorted by id (= begin time) */
	size_t n;
};
/* Lists and parses every backup.info of cfg's server (one LIST, one GET of at
 * most BK_BACKUP_INFO_MAX bytes each). A backup.info missing, too large or
 * unparsable is an entry with !ok and its reason (the caller logs it), not a
 * failure; the store unreachable or refusing is. *ret owned (bk_catalog_free). */
OP_MUST_CHECK int bk_catalog_list(const struct bk_config *cfg, struct bk_catalog *ret,
				  struct op_err *err);
/* The same with a client the caller owns (borrowed). */
OP_MUST_CHECK int bk_catalog_list_client(struct os_client *c, const struct bk_config *cfg,
					 struct bk_catalog *ret, struct op_err *err);
void bk_catalog_free(struct bk_catalog *cat); /* the contents; NULL accepted */
/* A client for cfg's store, the credentials read from their files now. *ret owned. */
OP_MUST_CHECK int bk_client_open(const struct bk_config *cfg, struct os_client **ret,
				 struct op_err *err);

enum bk_target_kind {
	BK_TARGET_NONE,      /* the end of the archived WAL */
	BK_TARGET_TIME,      /* recovery_target_time */
	BK_TARGET_LSN,       /* recovery_target_lsn */
	BK_TARGET_XID,       /* recovery_target_xid */
	BK_TARGET_NAME,      /* recovery_target_name (a restore point) */
	BK_TARGET_IMMEDIATE, /* recovery_target = 'immediate' */
};
/* What the choice needs. */
struct bk_selection {
	enum bk_target_kind kind;
	int64_t time_us;       /* BK_TARGET_TIME: epoch microseconds, UTC */
	uint64_t lsn;          /* BK_TARGET_LSN */
	uint32_t tli;          /* a numeric target timeline; 0: latest/current (no filter) */
	const char *backup_id; /* borrowed; non-NULL: exactly this one (must be DONE) */
};
/* The backup a recovery to s starts from: with backup_id that backup (-ENOENT
 * when absent, -EINVAL when not DONE or unparsable); else among the DONE
 * backups (on a timeline <= s->tli when set) the one with the latest end
 * time that ends at or before the target: end_time <= time, end_xlog <= lsn;
 * for xid, name, immediate and none, the latest. -ENOENT (err says which
 * case) when there is none. *ret borrowed from cat. */
OP_MUST_CHECK int bk_catalog_select(const struct bk_catalog *cat, const struct bk_selection *s,
				    const struct bk_catalog_entry **ret, struct op_err *err);
/* The first recoverability point: the end time of the oldest DONE backup
 * (epoch microseconds), the earliest time a recovery can reach (a backup is
 * consistent only once replayed to its end). -ENOENT when there is none. */
OP_MUST_CHECK int bk_catalog_first_point(const struct bk_catalog *cat, int64_t *ret_us);

/* A recovery target time: RFC 3339 ("2024-01-02T03:04:05.5Z", "+02:00") or
 * PostgreSQL's timestamptz text ("2024-01-02 03:04:05.123456+02", "+0530",
 * seconds optional); no offset means UTC. Epoch microseconds; -EINVAL. */
OP_MUST_CHECK int bk_target_time_parse(const char *s, int64_t *ret_us);
/* The normalised form written for postgres: "YYYY-MM-DD HH:MM:SS.ffffff+00". */
#define BK_TARGET_TIME_LEN 29
OP_MUST_CHECK int bk_target_time_format(int64_t epoch_us, char ret[BK_TARGET_TIME_LEN + 1]);

/* ---- base backups: restore (restore_base.c) ----
 * base/<id>/data.tar[.gz|.bz2|.lz4] streamed: GET -> bk_codec decoder ->
 * a socket pair -> libarchive's tar reader -> files under a directory.
 * Never the whole tar in memory nor on disk. Every entry's path is checked
 * before anything is written: absolute paths, "..", devices, FIFOs and
 * symbolic or hard links leaving the directory are refused (-EPERM naming
 * the entry); no component is ever followed through a link (openat with
 * O_NOFOLLOW at every level), so an earlier entry cannot redirect a later
 * one. Modes kept (permission bits only: no set-id bits), owner not
 * changed (the caller's), entry and total sizes capped. */
#define BK_RESTORE_ENTRY_MAX (64ull << 30)    /* one file (relation segments are 1 GiB) */
#define BK_RESTORE_TOTAL_MAX (64ull << 40)    /* a whole PGDATA */
#define BK_RESTORE_ENTRIES_MAX 20000000u      /* entries of one tar */
#define BK_RESTORE_TIMEOUT_MS (24L * 3600 * 1000) /* the whole download (stalls: 60 s) */
/* Where a restore puts a tablespace of the backup, found by its name (as
 * barman-cloud-restore's --tablespace NAME:LOCATION; CloudNativePG passes
 * the restoring Cluster's spec.tablespaces). Both borrowed. */
struct bk_tablespace_target {
	const char *name;
	const char *location; /* absolute; created (0700) when absent, must be empty */
};
/* The location of backup tablespace t among v[n] (the first of its name);
 * -ENOENT with err naming the tablespace when it has none. Pure. */
OP_MUST_CHECK int bk_tablespace_locate(const struct bk_tablespace *t,
				       const struct bk_tablespace_target *v, size_t n,
				       const char **ret, struct op_err *err);
/* Splits rule "NAME:LOCATION" in place (at the first ':') into ret (both
 * pointing into rule); -EINVAL with err for no ':', an empty name or a
 * location that is not absolute. Pure. */
OP_MUST_CHECK int bk_tablespace_rule_parse(char *rule, struct bk_tablespace_target *ret,
					   struct op_err *err);
/* A backup's tar object "<base>[_NNNN].tar[suffix]", base "data" (*ret_oid
 * 0) or a tablespace's oid: the oid, the split part (0 for no "_NNNN"; NNNN
 * four digits or more, from 1) and the compression; -EINVAL for any other
 * name. Pure. */
OP_MUST_CHECK int bk_tar_object_parse(const char *name, uint32_t *ret_oid, unsigned *ret_part,
				      enum bk_compression *ret_comp);
struct bk_restore_opts {
	const char *target;     /* borrowed: an existing, empty directory */
	/* borrowed: where the backup's tablespaces go; each of them must be here */
	const struct bk_tablespace_target *tablespaces;
	size_t n_tablespaces;
	uint64_t max_entry;     /* 0: BK_RESTORE_ENTRY_MAX */
	uint64_t max_total;     /* 0: BK_RESTORE_TOTAL_MAX (file contents) */
	long timeout_ms;        /* 0: BK_RESTORE_TIMEOUT_MS */
};
struct bk_restore_stats {
	uint64_t files, dirs, symlinks, hardlinks, bytes; /* bytes: file contents written */
	uint64_t stored_bytes;  /* what was downloaded */
	char tar_name[48];      /* "data.tar.gz" */
	unsigned parts;         /* data tar parts extracted (data.tar, data_0001.tar...) */
	size_t tablespaces;     /* <oid>.tar restored, each linked from pg_tblspc/<oid> */
};
/* Extracts an uncompressed tar read from fd (borrowed) under opts->target as
 * described above (tests, and the second half of bk_restore_base). */
OP_MUST_CHECK int bk_restore_tar_fd(int fd, const struct bk_restore_opts *opts,
				    struct bk_restore_stats *ret, struct op_err *err);
/* Restores backup id's PGDATA tar from cfg's store into opts->target. The
 * tar's compression is found from its object name (data.tar, .gz, .bz2,
 * .lz4; snappy is -ENOTSUP). Each tablespace of its backup.info is
 * extracted from <oid>.tar[suffix] into the location opts gives its name
 * (none: -ENOENT naming it, before anything is downloaded) and
 * <target>/pg_tblspc/<oid> made a symbolic link to that location, as
 * barman-cloud-restore does (data.tar has no pg_tblspc/<oid>: barman leaves
 * them out). A <oid>.tar that backup.info does not list is -EBADMSG. A
 * split tar's parts (data.tar, data_0001.tar, ...: barman-cloud-backup's
 * --max-archive-size) are extracted in order; a missing part, or parts of
 * different compressions, are -EBADMSG before anything is downloaded.
 * ret (optional) on success. */
OP_MUST_CHECK int bk_restore_base(const struct bk_config *cfg, const char *id,
				  const struct bk_restore_opts *opts, struct bk_restore_stats *ret,
				  struct op_err *err);

/* ---- base backups: what an online backup needs besides the tar ---- */

/* barman's location_to_xlogfile_name_offset: the WAL file holding lsn on
 * timeline tli (ret_name, 25 bytes) and lsn's offset in it, for a segment
 * size that is a power of two from 1 MiB to 1 GiB; -EINVAL otherwise. */
OP_MUST_CHECK int bk_lsn_to_wal(uint64_t lsn, uint32_t tli, uint64_t seg_size, char ret_name[25],
				uint64_t *ret_offset);
/* Renders bi and PUTs it as base/<backup_id>/backup.info of cfg's
 * destination (credentials read now). */
OP_MUST_CHECK int bk_backup_info_upload(const struct bk_config *cfg, const char *backup_id,
					const struct bk_backup_info *bi, struct op_err *err);

/* Python's repr() of a list of str, "['a', 'b']" ("[]" for none), appended
 * to out (backup.info's included_files); -EINVAL for invalid UTF-8. */
OP_MUST_CHECK int bk_py_repr_strv(const char *const *v, size_t n, struct op_buf *out);

#endif
