/* tests/fuzz/fuzz_backup.c - arbitrary bytes where the WAL archive reads
 * what it did not write: the first byte picks the target, the rest is
 *   - a wal-archive configuration file (bk_config_parse), or
 *   - a stored WAL object to decompress (bk_codec, each of gzip, bzip2, xz,
 *     lz4, zstd), fed in two pieces split at the second byte, with the
 *     output capped at 1 MiB, or
 *   - a WAL file name (bk_wal_name_parse, and a valid one's object key).
 *
 * Invariants checked besides memory safety (ASan/UBSan, leaks):
 *   - a refused configuration, stream or name says why (err set);
 *   - a decoder never hands its sink more than the cap in total, and the
 *     bytes it reports are the bytes the sink saw;
 *   - a parsed configuration has a destination and a server name.
 * Seeds: tests/fuzz/corpus/backup/.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backup/backup.h"
#include "support/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1u << 20)

static int sink(void *ud, const void *buf, size_t len)
{
	uint64_t *seen = ud;
	*seen += len;
	if (*seen > OUT_MAX)
		abort(); /* the cap was not enforced */
	return 0;
}

static void config(const char *p, size_t n)
{
	struct bk_config c;
	struct op_err err = OP_ERR_INIT;
	if (bk_config_parse(p, n, &c, &err) < 0) {
		if (!err.msg[0])
			abort();
		return;
	}
	if (!c.destination_path || !c.server_name)
		abort();
	bk_config_done(&c);
}

static void decode(enum bk_compression comp, const uint8_t *p, size_t n)
{
	struct bk_codec *c = NULL;
	uint64_t seen = 0;
	struct op_err err = OP_ERR_INIT;
	if (bk_codec_new(comp, true, OUT_MAX, sink, &seen, &c, &err) < 0)
		abort(); /* the libraries are there: making a decoder cannot fail */
	size_t cut = n ? p[0] % (n + 1) : 0;
	int r = bk_codec_write(c, p, cut, &err);
	if (r == 0)
		r = bk_codec_write(c, p + cut, n - cut, &err);
	if (r == 0)
		r = bk_codec_finish(c, &err);
	if (r < 0 && !err.msg[0])
		abort(); /* a refused stream says why */
	if (bk_codec_out_bytes(c) != seen)
		abort();
	bk_codec_free(c);
}

static void name(const char *p, size_t n)
{
	char buf[64];
	if (n >= sizeof(buf))
		return;
	memcpy(buf, p, n);
	buf[n] = '\0';
	struct op_err err = OP_ERR_INIT;
	if (bk_wal_name_parse(buf, NULL, &err) < 0 && !err.msg[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const enum bk_compression comps[] = { BK_COMP_GZIP, BK_COMP_BZIP2, BK_COMP_XZ,
						     BK_COMP_LZ4, BK_COMP_ZSTD };
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	unsigned pick = data[0] % 7;
	if (pick == 0)
		config((const char *)p, n);
	else if (pick <= 5)
		decode(comps[pick - 1], p, n);
	else
		name((const char *)p, n);
	return 0;
}
