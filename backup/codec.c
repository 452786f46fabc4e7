/* backup/codec.c - streaming compression in barman-cloud's formats, each
 * through its own Debian library: gzip (written by libdeflate, read by zlib,
 * windowBits 15+16), bzip2 (libbz2), xz (liblzma .xz container, CRC64 like
 * Python's lzma), LZ4 frame (liblz4 lz4frame, what lz4.frame writes),
 * Zstandard frame (libzstd, what zstandard's ZstdCompressor writes). One
 * 64 KiB output buffer per codec; the sink receives it each time it fills.
 *
 * WAL files' gzip is written by libdeflate as one member per BK_GZ_CHUNK of
 * input (RFC 1952: a gzip file is a series of members; Python's gzip, which
 * barman-cloud-wal-restore uses, gunzip and our zlib decoder read them all):
 * libdeflate compresses whole buffers only, several times faster than zlib's
 * streaming deflate (docs/internals/backup.md "Figures"), and the members
 * of a batch are compressed in parallel (gz_lanes.c). Memory stays bounded:
 * per lane one BK_GZ_CHUNK input buffer and its compressed bound. A base
 * backup's tar keeps zlib's one member: barman-cloud-restore reads it with
 * tarfile's "r|gz" stream, which stops after the first member. */
#include <errno.h>
#include <string.h>

#include <bzlib.h>
#include <lz4frame.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "backup/internal.h"
#include "support/alloc.h"

#define OUT_SIZE (64u * 1024)
#define LZ4_IN_CHUNK (64u * 1024)
/* A decoder never needs more: xz -9 needs 65 MiB, zstd's window is capped
 * at 2^27 (128 MiB, zstd --ultra -22 uses 2^27). */
#define XZ_MEMLIMIT (128ull * 1024 * 1024)
#define ZSTD_WINDOW_LOG_MAX 27

struct bk_codec {
	enum bk_compression comp;
	bool dec;
	bool ended;  /* decoder: the last stream/frame/member is complete */
	bool failed; /* an error happened: every later call fails */
	bool tar;    /* encoding a base backup's tar stream (bk_codec_new_tar) */
	uint64_t out_max, out_total;
	bk_sink_fn sink;
	void *ud;
	union {
		z_stream z; /* gzip decoder, tar encoder */
		struct bk_gz_lanes *gz; /* gzip WAL encoder, owned */
		bz_stream bz;
		lzma_stream xz;
		LZ4F_cctx *lz4c;
		LZ4F_dctx *lz4d;
		ZSTD_CCtx *zc;
		ZSTD_DCtx *zd;
	} u;
	unsigned char *out; /* owned, out_size: OUT_SIZE, or the lz4 and gzip encoders' bounds */
	size_t out_size;
	LZ4F_preferences_t lz4p;
};

static int emit(struct bk_codec *c, const void *p, size_t n, struct op_err *err)
{
	if (n == 0)
		return 0;
	if (c->out_total + n > c->out_max)
		return op_err_set(err, -EFBIG, "%s: output larger than its cap (%llu bytes)",
				  bk_compression_name(c->comp), (unsigned long long)c->out_max);
	c->out_total += n;
	int rc = c->sink(c->ud, p, n);
	return rc < 0 ? op_err_set(err, rc, "writing %s output failed", bk_compression_name(c->comp))
		      : 0;
}

static int corrupt(struct bk_codec *c, const char *why, struct op_err *err)
{
	return op_err_set(err, -EBADMSG, "%s: %s %s", bk_compression_name(c->comp),
			  c->dec ? "corrupt input:" : "encoder failed:", why ? why : "?");
}

/* ---- gzip: zlib, the decoder and the tar's encoder (one member) ---- */

static int gz_init(struct bk_codec *c)
{
	if (c->dec)
		return inflateInit2(&c->u.z, 15 + 16) == Z_OK ? 0 : -ENOMEM;
	return deflateInit2(&c->u.z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK ? 0
											     : -ENOMEM;
}

static int gz_run(struct bk_codec *c, const void *in, size_t len, bool finish,
		  struct op_err *err)
{
	z_stream *z = &c->u.z;
	z->next_in = (Bytef *)(uintptr_t)in;
	z->avail_in = (uInt)len;
	for (;;) {
		if (c->dec && c->ended && z->avail_in > 0) { /* another gzip member */
			if (inflateReset(z) != Z_OK)
				return corrupt(c, "reset", err);
			c->ended = false;
		}
		z->next_out = c->out;
		z->avail_out = OUT_SIZE;
		int zr = c->dec ? inflate(z, Z_NO_FLUSH) : deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (zr == Z_STREAM_ERROR || zr == Z_DATA_ERROR || zr == Z_NEED_DICT ||
		    zr == Z_MEM_ERROR)
			return corrupt(c, z->msg ? z->msg : "error", err);
		int rc = emit(c, c->out, OUT_SIZE - z->avail_out, err);
		if (rc < 0)
			return rc;
		if (zr == Z_STREAM_END) {
			c->ended = true;
			if (!c->dec || z->avail_in == 0)
				return 0;
			continue;
		}
		if (z->avail_out != 0 && z->avail_in == 0 && (c->dec || !finish))
			return 0;
		if (zr == Z_BUF_ERROR && z->avail_out != 0)
			return 0; /* no progress possible: needs more input */
	}
}

/* ---- gzip: libdeflate, the WAL encoder (gz_lanes.c) ---- */

static int gz_emit(void *ud, const void *p, size_t n, struct op_err *err)
{
	return emit(ud, p, n, err);
}

static int gz_enc(struct bk_codec *c, const void *in, size_t len, bool finish,
		  struct op_err *err)
{
	return bk_gz_lanes_write(c->u.gz, in, len, finish, gz_emit, c, err);
}

/* ---- bzip2 ---- */

static int bz_init(struct bk_codec *c)
{
	int r = c->dec ? BZ2_bzDecompressInit(&c->u.bz, 0, 0) : BZ2_bzCompressInit(&c->u.bz, 5, 0, 0);
	return r == BZ_OK ? 0 : -ENOMEM;
}

static int bz_run(struct bk_codec *c, const void *in, size_t len, bool finish,
		  struct op_err *err)
{
	bz_stream *s = &c->u.bz;
	s->next_in = (char *)(uintptr_t)in;
	s->avail_in = (unsigned)len;
	for (;;) {
		if (c->dec && c->ended && s->avail_in > 0) { /* another bzip2 stream */
			BZ2_bzDecompressEnd(s);
			char *ni = s->next_in;
			unsigned ai = s->avail_in;
			memset(s, 0, sizeof(*s));
			if (BZ2_bzDecompressInit(s, 0, 0) != BZ_OK)
				return corrupt(c, "reinit", err);
			s->next_in = ni, s->avail_in = ai;
			c->ended = false;
		}
		s->next_out = (char *)c->out;
		s->avail_out = OUT_SIZE;
		int r = c->dec ? BZ2_bzDecompress(s) : BZ2_bzCompress(s, finish ? BZ_FINISH : BZ_RUN);
		if (r < 0)
			return corrupt(c, r == BZ_DATA_ERROR_MAGIC ? "not bzip2 data" : "bad data", err);
		int rc = emit(c, c->out, OUT_SIZE - s->avail_out, err);
		if (rc < 0)
			return rc;
		if (r == BZ_STREAM_END) {
			c->ended = true;
			if (!c->dec || s->avail_in == 0)
				return 0;
			continue;
		}
		if (s->avail_out != 0 && s->avail_in == 0 && (c->dec || !finish))
			return 0;
	}
}

/* ---- xz (liblzma) ---- */

static int xz_init(struct bk_codec *c)
{
	lzma_ret r = c->dec ? lzma_stream_decoder(&c->u.xz, XZ_MEMLIMIT, LZMA_CONCATENATED)
			    : lzma_easy_encoder(&c->u.xz, 3, LZMA_CHECK_CRC64);
	return r == LZMA_OK ? 0 : -ENOMEM;
}

static const char *xz_why(lzma_ret r)
{
	switch (r) {
	case LZMA_FORMAT_ERROR: return "not xz data";
	case LZMA_DATA_ERROR: return "bad data";
	case LZMA_BUF_ERROR: return "truncated";
	case LZMA_MEMLIMIT_ERROR: return "needs more memory than allowed";
	case LZMA_OPTIONS_ERROR: return "unsupported options";
	default: return "error";
	}
}

static int xz_run(struct bk_codec *c, const void *in, size_t len, bool finish,
		  struct op_err *err)
{
	lzma_stream *s = &c->u.xz;
	s->next_in = in;
	s->avail_in = len;
	for (;;) {
		s->next_out = c->out;
		s->avail_out = OUT_SIZE;
		lzma_ret r = lzma_code(s, finish ? LZMA_FINISH : LZMA_RUN);
		if (r != LZMA_OK && r != LZMA_STREAM_END)
			return corrupt(c, xz_why(r), err);
		int rc = emit(c, c->out, OUT_SIZE - s->avail_out, err);
		if (rc < 0)
			return rc;
		if (r == LZMA_STREAM_END) {
			c->ended = true;
			return 0;
		}
		if (s->avail_out != 0 && s->avail_in == 0 && !finish)
			return 0;
	}
}

/* ---- lz4 frame ---- */

static int lz4_init(struct bk_codec *c)
{
	if (c->dec)
		return LZ4F_isError(LZ4F_createDecompressionContext(&c->u.lz4d, LZ4F_VERSION)) ? -ENOMEM
											 : 0;
	if (LZ4F_isError(LZ4F_createCompressionContext(&c->u.lz4c, LZ4F_VERSION)))
		return -ENOMEM;
	memset(&c->lz4p, 0, sizeof(c->lz4p));
	/* barman's levels: barman-cloud-wal-archive's "medium" (6) for WAL,
	 * lz4.frame's default (0, the fast one) for barman-cloud-backup's tar */
	c->lz4p.compressionLevel = c->tar ? 0 : 6;
	size_t bound = LZ4F_compressBound(LZ4_IN_CHUNK, &c->lz4p) + LZ4F_HEADER_SIZE_MAX;
	if (bound > c->out_size) {
		free(c->out);
		c->out = op_malloc(bound);
		c->out_size = bound;
	}
	size_t h = LZ4F_compressBegin(c->u.lz4c, c->out, c->out_size, &c->lz4p);
	if (LZ4F_isError(h))
		return -EIO;
	return emit(c, c->out, h, NULL); /* the frame header */
}

static int lz4_enc(struct bk_codec *c, const void *in, size_t len, bool finish,
		   struct op_err *err)
{
	const unsigned char *p = in;
	while (len > 0) {
		size_t n = len < LZ4_IN_CHUNK ? len : LZ4_IN_CHUNK;
		size_t w = LZ4F_compressUpdate(c->u.lz4c, c->out, c->out_size, p, n, NULL);
		if (LZ4F_isError(w))
			return corrupt(c, LZ4F_getErrorName(w), err);
		int rc = emit(c, c->out, w, err);
		if (rc < 0)
			return rc;
		p += n, len -= n;
	}
	if (!finish)
		return 0;
	size_t w = LZ4F_compressEnd(c->u.lz4c, c->out, c->out_size, NULL);
	if (LZ4F_isError(w))
		return corrupt(c, LZ4F_getErrorName(w), err);
	return emit(c, c->out, w, err);
}

static int lz4_dec(struct bk_codec *c, const void *in, size_t len, struct op_err *err)
{
	const unsigned char *p = in;
	while (len > 0) {
		size_t out_n = OUT_SIZE, in_n = len;
		size_t r = LZ4F_decompress(c->u.lz4d, c->out, &out_n, p, &in_n, NULL);
		if (LZ4F_isError(r))
			return corrupt(c, LZ4F_getErrorName(r), err);
		int rc = emit(c, c->out, out_n, err);
		if (rc < 0)
			return rc;
		p += in_n, len -= in_n;
		c->ended = r == 0; /* 0: the frame is complete (another may follow) */
		if (in_n == 0 && out_n == 0)
			return corrupt(c, "no progress", err);
	}
	/* drain what the context still holds for the input given */
	for (;;) {
		size_t out_n = OUT_SIZE, in_n = 0;
		size_t r = LZ4F_decompress(c->u.lz4d, c->out, &out_n, NULL, &in_n, NULL);
		if (LZ4F_isError(r))
			return corrupt(c, LZ4F_getErrorName(r), err);
		int rc = emit(c, c->out, out_n, err);
		if (rc < 0 || out_n == 0)
			return rc;
		c->ended = r == 0;
	}
}

/* ---- zstd ---- */

static int zstd_init(struct bk_codec *c)
{
	if (c->dec) {
		c->u.zd = ZSTD_createDCtx();
		if (!c->u.zd)
			return -ENOMEM;
		return ZSTD_isError(ZSTD_DCtx_setParameter(c->u.zd, ZSTD_d_windowLogMax,
							   ZSTD_WINDOW_LOG_MAX)) ? -EINVAL : 0;
	}
	c->u.zc = ZSTD_createCCtx();
	if (!c->u.zc)
		return -ENOMEM;
	return ZSTD_isError(ZSTD_CCtx_setParameter(c->u.zc, ZSTD_c_compressionLevel, 4)) ? -EINVAL
											: 0;
}

static int zstd_run(struct bk_codec *c, const void *in, size_t len, bool finish,
		    struct op_err *err)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	for (;;) {
		ZSTD_outBuffer ob = { c->out, OUT_SIZE, 0 };
		size_t in_before = ib.pos;
		size_t r = c->dec ? ZSTD_decompressStream(c->u.zd, &ob, &ib)
				  : ZSTD_compressStream2(c->u.zc, &ob, &ib,
							 finish ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(r))
			return corrupt(c, ZSTD_getErrorName(r), err);
		int rc = emit(c, c->out, ob.pos, err);
		if (rc < 0)
			return rc;
		if (c->dec) {
			/* a call without new input after a frame's end asks for the next
			 * frame's header (r > 0): the stream still ended */
			if (r == 0 || ib.pos != in_before)
				c->ended = r == 0;
			if (ib.pos == ib.size && ob.pos < ob.size)
				return 0;
		} else if (finish ? r == 0 : (ib.pos == ib.size && ob.pos < ob.size)) {
			return 0;
		}
	}
}

/* ---- dispatch ---- */

struct op_dl_lib *bk_codec_lib(enum bk_compression comp, bool decompress, bool tar)
{
	switch (comp) {
	case BK_COMP_GZIP: return decompress || tar ? &bk_dl_zlib : &bk_dl_deflate;
	case BK_COMP_BZIP2: return &bk_dl_bz2;
	case BK_COMP_XZ: return &bk_dl_lzma;
	case BK_COMP_LZ4: return &bk_dl_lz4;
	case BK_COMP_ZSTD: return &bk_dl_zstd;
	default: return NULL;
	}
}

static int codec_new(enum bk_compression comp, bool decompress, bool tar, uint64_t out_max,
		     bk_sink_fn sink, void *ud, struct bk_codec **ret, struct op_err *err)
{
	if (comp == BK_COMP_SNAPPY)
		return bk_compression_parse("snappy", &comp, err);
	/* the library is loaded here, not at exec time: a missing one is this
	 * codec's error ("gzip: cannot load libz.so.1: ...") */
	struct op_dl_lib *lib = bk_codec_lib(comp, decompress, tar);
	if (lib) {
		struct op_err why = OP_ERR_INIT;
		int rc = op_dl_load(lib, &why);
		if (rc < 0)
			return op_err_set(err, rc, "%s: %s", bk_compression_name(comp), why.msg);
	}
	struct bk_codec *c = op_calloc(1, sizeof(*c));
	*c = (struct bk_codec){ .comp = comp, .dec = decompress, .tar = tar, .out_max = out_max,
				.sink = sink, .ud = ud, .out = op_malloc(OUT_SIZE),
				.out_size = OUT_SIZE };
	int rc = 0;
	switch (comp) {
	case BK_COMP_NONE: break;
	case BK_COMP_GZIP:
		rc = decompress || tar ? gz_init(c) : bk_gz_lanes_new(bk_gz_lanes_default(), &c->u.gz);
		break;
	case BK_COMP_BZIP2: rc = bz_init(c); break;
	case BK_COMP_XZ: rc = xz_init(c); break;
	case BK_COMP_LZ4: rc = lz4_init(c); break;
	case BK_COMP_ZSTD: rc = zstd_init(c); break;
	default: rc = -EINVAL;
	}
	if (rc < 0) {
		c->failed = true; /* bk_codec_free knows what was set up */
		bk_codec_free(c);
		return op_err_set(err, rc, "%s: cannot set up the %s", bk_compression_name(comp),
				  decompress ? "decoder" : "encoder");
	}
	*ret = c;
	return 0;
}

int bk_codec_new(enum bk_compression comp, bool decompress, uint64_t out_max, bk_sink_fn sink,
		 void *ud, struct bk_codec **ret, struct op_err *err)
{
	return codec_new(comp, decompress, false, out_max, sink, ud, ret, err);
}

int bk_codec_new_tar(enum bk_compression comp, uint64_t out_max, bk_sink_fn sink, void *ud,
		     struct bk_codec **ret, struct op_err *err)
{
	return codec_new(comp, false, true, out_max, sink, ud, ret, err);
}

static int run(struct bk_codec *c, const void *in, size_t len, bool finish, struct op_err *err)
{
	switch (c->comp) {
	case BK_COMP_NONE: return emit(c, in, len, err);
	case BK_COMP_GZIP:
		return c->dec || c->tar ? gz_run(c, in, len, finish, err) : gz_enc(c, in, len, finish, err);
	case BK_COMP_BZIP2: return bz_run(c, in, len, finish, err);
	case BK_COMP_XZ: return xz_run(c, in, len, finish, err);
	case BK_COMP_LZ4: return c->dec ? lz4_dec(c, in, len, err) : lz4_enc(c, in, len, finish, err);
	case BK_COMP_ZSTD: return zstd_run(c, in, len, finish, err);
	default: return -EINVAL;
	}
}

int bk_codec_write(struct bk_codec *c, const void *in, size_t len, struct op_err *err)
{
	if (c->failed)
		return op_err_set(err, -EIO, "%s: codec used after a failure", bk_compression_name(c->comp));
	if (len == 0)
		return 0;
	/* a decoder whose stream ended accepts only another member/stream/frame,
	 * which each decoder checks itself; xz (LZMA_CONCATENATED) does too */
	int rc = run(c, in, len, false, err);
	if (rc < 0)
		c->failed = true;
	return rc;
}

int bk_codec_finish(struct bk_codec *c, struct op_err *err)
{
	if (c->failed)
		return op_err_set(err, -EIO, "%s: codec used after a failure", bk_compression_name(c->comp));
	int rc = 0;
	if (!c->dec || c->comp == BK_COMP_XZ)
		rc = run(c, NULL, 0, true, err);
	if (rc == 0 && c->dec && c->comp != BK_COMP_NONE && !c->ended)
		rc = op_err_set(err, -EBADMSG, "%s: truncated input (the stream does not end)",
				bk_compression_name(c->comp));
	if (rc < 0)
		c->failed = true;
	return rc;
}

uint64_t bk_codec_out_bytes(const struct bk_codec *c)
{
	return c->out_total;
}

void bk_codec_free(struct bk_codec *c)
{
	if (!c)
		return;
	switch (c->comp) {
	case BK_COMP_GZIP:
		if (!c->dec && !c->tar)
			bk_gz_lanes_free(c->u.gz);
		else if (c->u.z.state)
			c->dec ? inflateEnd(&c->u.z) : deflateEnd(&c->u.z);
		break;
	case BK_COMP_BZIP2:
		if (c->u.bz.state)
			c->dec ? BZ2_bzDecompressEnd(&c->u.bz) : BZ2_bzCompressEnd(&c->u.bz);
		break;
	case BK_COMP_XZ: lzma_end(&c->u.xz); break;
	case BK_COMP_LZ4:
		if (c->dec)
			LZ4F_freeDecompressionContext(c->u.lz4d);
		else
			LZ4F_freeCompressionContext(c->u.lz4c);
		break;
	case BK_COMP_ZSTD:
		c->dec ? ZSTD_freeDCtx(c->u.zd) : ZSTD_freeCCtx(c->u.zc);
		break;
	default: break;
	}
	free(c->out);
	free(c);
}
