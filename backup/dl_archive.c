/* backup/dl_archive.c - libarchive through op_dl (support/dl.h): the table
 * of every archive_* function pgop calls (backup/tar.c writes base backup
 * tars; the read side, backup/restore_base.c, extracts them), and their wrappers. A
 * function returning a status fails with ARCHIVE_FATAL, a constructor with
 * NULL, a count with -1.
 *
 * Why libarchive: barman's data.tar is a POSIX tar (Python's tarfile, PAX
 * format); its headers (ustar fields, pax extended records for long names
 * and large sizes, checksums, block padding) are exactly what the project
 * does not write by hand. */
#include <archive.h>
#include <archive_entry.h>

#include "backup/internal.h"
#include "support/dl.h"

#define ARCHIVE_FNS(F, V, N)                                                                       \
	F(struct archive *, archive_write_new, (void), (), NULL)                                   \
	F(int, archive_write_set_format_pax_restricted, (struct archive * a), (a), ARCHIVE_FATAL) \
	F(int, archive_write_set_bytes_per_block, (struct archive * a, int n), (a, n),             \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_write_open,                                                                 \
	  (struct archive * a, void *ud, archive_open_callback *o, archive_write_callback *w,      \
	   archive_close_callback *c),                                                             \
	  (a, ud, o, w, c), ARCHIVE_FATAL)                                                         \
	F(int, archive_write_header, (struct archive * a, struct archive_entry * e), (a, e),       \
	  ARCHIVE_FATAL)                                                                           \
	F(la_ssize_t, archive_write_data, (struct archive * a, const void *buf, size_t len),       \
	  (a, buf, len), -1)                                                                       \
	F(int, archive_write_finish_entry, (struct archive * a), (a), ARCHIVE_FATAL)               \
	F(int, archive_write_close, (struct archive * a), (a), ARCHIVE_FATAL)                      \
	F(int, archive_write_free, (struct archive * a), (a), ARCHIVE_FATAL)                       \
	F(struct archive *, archive_read_new, (void), (), NULL)                                    \
	F(int, archive_read_support_format_tar, (struct archive * a), (a), ARCHIVE_FATAL)          \
	F(int, archive_read_support_filter_all, (struct archive * a), (a), ARCHIVE_FATAL)          \
	F(int, archive_read_open_fd, (struct archive * a, int fd, size_t block), (a, fd, block),   \
	  ARCHIVE_FATAL)                                                                           \
	F(int, archive_read_open_memory, (struct archive * a, const void *buf, size_t len),        \
	  (a, buf, len), ARCHIVE_FATAL)                                                            \
	F(int, archive_read_next_header, (struct archive * a, struct archive_entry * *e), (a, e),  \
	  ARCHIVE_FATAL)                                                                           \
	F(la_ssize_t, archive_read_data, (struct archive * a, void *buf, size_t len),              \
	  (a, buf, len), -1)                                                                       \
	F(int, archive_read_free, (struct archive * a), (a), ARCHIVE_FATAL)                        \
	F(const char *, archive_error_string, (struct archive * a), (a), "libarchive not loaded")  \
	F(struct archive_entry *, archive_entry_new, (void), (), NULL)                             \
	V(archive_entry_free, (struct archive_entry * e), (e))                                     \
	V(archive_entry_set_pathname, (struct archive_entry * e, const char *p), (e, p))           \
	V(archive_entry_set_symlink, (struct archive_entry * e, const char *p), (e, p))            \
	V(archive_entry_set_filetype, (struct archive_entry * e, unsigned int t), (e, t))          \
	V(archive_entry_set_perm, (struct archive_entry * e, __LA_MODE_T m), (e, m))               \
	V(archive_entry_set_size, (struct archive_entry * e, la_int64_t s), (e, s))                \
	V(archive_entry_set_mtime, (struct archive_entry * e, time_t t, long ns), (e, t, ns))      \
	V(archive_entry_set_uid, (struct archive_entry * e, la_int64_t u), (e, u))                 \
	V(archive_entry_set_gid, (struct archive_entry * e, la_int64_t g), (e, g))                 \
	F(const char *, archive_entry_pathname, (struct archive_entry * e), (e), NULL)             \
	F(const char *, archive_entry_symlink, (struct archive_entry * e), (e), NULL)              \
	F(const char *, archive_entry_hardlink, (struct archive_entry * e), (e), NULL)             \
	F(__LA_MODE_T, archive_entry_filetype, (struct archive_entry * e), (e), 0)                 \
	F(__LA_MODE_T, archive_entry_perm, (struct archive_entry * e), (e), 0)                     \
	F(la_int64_t, archive_entry_size, (struct archive_entry * e), (e), 0)

enum { ARCHIVE_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) ARCHIVE_FNS_COUNT };
static const char *const names[] = { ARCHIVE_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[ARCHIVE_FNS_COUNT];

struct op_dl_lib bk_dl_archive =
	OP_DL_LIB_INIT(BK_DL_ARCHIVE_SONAME, names, syms, ARCHIVE_FNS_COUNT, NULL);

#define OP_DL_SHIM bk_dl_archive
ARCHIVE_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
