/* backup/internal.h - what backup/'s files share (not a public header). */
#ifndef PGOP_BACKUP_INTERNAL_H
#define PGOP_BACKUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backup/backup.h"
#include "objstore/objstore.h"
#include "support/buf.h"
#include "support/dl.h"

/* ---- dl_zlib.c, dl_deflate.c, dl_bz2.c, dl_lzma.c, dl_lz4.c, dl_zstd.c ---- */
/* The compression libraries, loaded on first use (support/dl.h): their
 * functions are the dl_*.c wrappers; bk_codec_new() loads the one its
 * compression needs first so a missing library is its error. The sonames are
 * the runtime libraries of the -dev packages built against. */
#define BK_DL_ZLIB_SONAME "libz.so.1"     /* zlib1g (gzip but WAL's encoder) */
#define BK_DL_DEFLATE_SONAME "libdeflate.so.0" /* libdeflate0 (WAL's gzip encoder) */
#define BK_DL_BZ2_SONAME "libbz2.so.1.0"  /* libbz2-1.0 (bzip2) */
#define BK_DL_LZMA_SONAME "liblzma.so.5"  /* liblzma5 (xz) */
#define BK_DL_LZ4_SONAME "liblz4.so.1"    /* liblz4-1 (lz4 frame) */
#define BK_DL_ZSTD_SONAME "libzstd.so.1"  /* libzstd1 (zstd) */
/* libarchive13: base backup tars (tar.c), read back by tests and restore */
#define BK_DL_ARCHIVE_SONAME "libarchive.so.13"
extern struct op_dl_lib bk_dl_archive;
extern struct op_dl_lib bk_dl_zlib, bk_dl_deflate, bk_dl_bz2, bk_dl_lzma, bk_dl_lz4, bk_dl_zstd;
/* The library comp's decoder (decompress), tar encoder (tar) or WAL encoder
 * needs; NULL for none (and snappy, never coded). Only gzip's differ:
 * libdeflate writes WAL files, zlib reads and writes tars (codec.c). */
struct op_dl_lib *bk_codec_lib(enum bk_compression comp, bool decompress, bool tar);
/* The gzip encoder's input per gzip member (codec.c): what it buffers. */
#define BK_GZ_CHUNK (1024u * 1024)

/* ---- gz_lanes.c: the WAL gzip encoder, members compressed in parallel ---- */
#define BK_GZ_LANES_MAX 4u
struct bk_gz_lanes;
/* Where compressed members go, in input order: 0 or -errno with err set. */
typedef int (*bk_gz_emit_fn)(void *ud, const void *p, size_t n, struct op_err *err);
/* The lanes this process may use: the CPUs it may run on, at most
 * BK_GZ_LANES_MAX. */
unsigned bk_gz_lanes_default(void);
/* An encoder of lanes (1..BK_GZ_LANES_MAX) members at once; *ret owned by
 * the caller (bk_gz_lanes_free). -ENOMEM. libdeflate must be loaded. */
OP_MUST_CHECK int bk_gz_lanes_new(unsigned lanes, struct bk_gz_lanes **ret);
/* Takes in (len bytes); each batch of lanes whole chunks is compressed and
 * emitted; finish emits the rest (an empty input: one empty member). */
OP_MUST_CHECK int bk_gz_lanes_write(struct bk_gz_lanes *g, const void *in, size_t len, bool finish,
				    bk_gz_emit_fn emit, void *ud, struct op_err *err);
void bk_gz_lanes_free(struct bk_gz_lanes *g); /* NULL accepted */

#define BK_SECRET_MAX (16u * 1024)  /* one credential file */
#define BK_CA_MAX (1024u * 1024)    /* the endpoint CA bundle */
#define BK_MARKERS_DIR "wal-archived"
#define BK_SPOOL_DIR "wal-spool"
#define BK_CHECK_MARKER "wal-archive-checked"
/* A WAL transfer: 16 MiB usually, 1 GiB at most; fail rather than hang. */
#define BK_TRANSFER_TIMEOUT_MS (15L * 60 * 1000)

/* Credentials and the CA read from their files; wiped by bk_secrets_done. */
struct bk_secrets {
	struct op_buf access, secret, token, ca;
};
OP_MUST_CHECK
int bk_secrets_load(const struct bk_config *cfg, struct bk_secrets *ret, struct op_err *err);
void bk_secrets_done(struct bk_secrets *s);
/* A client for cfg's bucket with s's credentials (copied by the client),
 * for WAL files (walReadTimeout) / for base backups (dataReadTimeout). */
OP_MUST_CHECK int bk_client_new(const struct bk_config *cfg, const struct bk_secrets *s,
				struct os_client **ret, struct op_err *err);
OP_MUST_CHECK int bk_client_new_data(const struct bk_config *cfg, const struct bk_secrets *s,
				     struct os_client **ret, struct op_err *err);

/* path's contents into out (its cap applies; -EFBIG past it). */
OP_MUST_CHECK int bk_read_file(const char *path, struct op_buf *out, struct op_err *err);
/* A bk_sink_fn writing everything to the fd *(int *)ud. */
OP_MUST_CHECK int bk_sink_to_fd(void *ud, const void *buf, size_t len);
/* Writes data to path atomically (temp file + rename), mode 0600. */
OP_MUST_CHECK int bk_write_file(const char *path, const void *data, size_t len, struct op_err *err);

/* A WAL file made ready to go up (bk_wal_prepare): its key, what it is
 * (history or not), and the bytes to send (the file, or its compressed copy
 * in an unlinked temp file) at offset 0. */
struct bk_wal_upload {
	struct op_buf key;
	enum bk_put_kind kind;
	int fd;        /* owned, -1 when none */
	uint64_t size; /* bytes at fd */
};
/* The WAL file at path (its base name is the WAL name) compressed as cfg
 * says, through an unlinked temp file in tmpdir, so that the upload is one
 * PUT of a known size. Needs no client: the compression can run while one
 * is made. *ret released by bk_wal_upload_done (on failure too). */
OP_MUST_CHECK int bk_wal_prepare(const struct bk_config *cfg, const char *path, const char *tmpdir,
				 struct bk_wal_upload *ret, struct op_err *err);
/* PUTs what bk_wal_prepare made ready with c. */
OP_MUST_CHECK int bk_wal_put(struct os_client *c, const struct bk_config *cfg,
			     struct bk_wal_upload *u, struct op_err *err);
void bk_wal_upload_done(struct bk_wal_upload *u);
/* bk_wal_prepare then bk_wal_put. */
OP_MUST_CHECK int bk_upload_wal(struct os_client *c, const struct bk_config *cfg, const char *path,
				const char *tmpdir, struct op_err *err);
/* GETs key, decompresses (comp) into dest through dest.pgop-tmp + rename;
 * output capped at BK_WAL_MAX_BYTES. ret_size (optional): bytes written. */
OP_MUST_CHECK
int bk_download(struct os_client *c, const char *key, enum bk_compression comp, const char *dest,
		uint64_t *ret_size, struct op_err *err);

/* The empty-archive check (archive.c's first call into a destination). */
OP_MUST_CHECK
int bk_check_archive(struct os_client *c, const struct bk_config *cfg, struct op_err *err);

/* ---- pylit.c: the Python literals of backup.info ---- */
/* repr(s) for a UTF-8 string s appended to out; -EINVAL for invalid UTF-8. */
OP_MUST_CHECK int bk_py_repr_str(const char *s, struct op_buf *out);
/* A cursor over a literal's text: [p, end), both borrowed. */
struct bk_pylit {
	const char *p, *end;
};
void bk_pylit_ws(struct bk_pylit *c);
/* Skips blanks, then consumes ch when it is next. */
bool bk_pylit_eat(struct bk_pylit *c, char ch);
/* A str literal ('...' or "...", Python's escapes) decoded into out as
 * UTF-8; -EBADMSG when malformed or holding NUL. */
OP_MUST_CHECK int bk_pylit_str(struct bk_pylit *c, struct op_buf *out);
/* A decimal integer <= max; -EBADMSG, -ERANGE. */
OP_MUST_CHECK int bk_pylit_uint(struct bk_pylit *c, uint64_t max, uint64_t *ret);

/* ---- restore_base.c: tar entry names (pure) ---- */
/* name normalised into out (leading "./", "." and empty components dropped):
 * 1 when it is the directory itself, 0 below it, -EPERM absolute or "..",
 * -ENAMETOOLONG. */
OP_MUST_CHECK int bk_entry_path(const char *name, char *out, size_t outlen);
/* Whether a symbolic link at path (normalised) pointing to target stays
 * inside the directory (relative, never above the top lexically). */
bool bk_link_inside(const char *path, const char *target);


#endif
