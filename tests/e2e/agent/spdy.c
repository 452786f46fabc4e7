/* tests/e2e/agent/spdy.c - SPDY/3.1 framing for the kubelet API's streaming
 * endpoints (exec_stream.c). The kube-apiserver (1.30+) translates kubectl's
 * WebSocket (v5.channel.k8s.io) into SPDY/3.1 toward the kubelet
 * (StreamTranslatorHandler, moby/spdystream): control frames
 *   |1|version=3 (15)|type (16)|flags (8)|length (24)|payload
 * and data frames
 *   |0|stream id (31)|flags (8)|length (24)|payload.
 * Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are zlib streams with SPDY's
 * dictionary, one per direction for the connection's lifetime, each block
 * ending with a sync flush. spdystream does no flow control (it never sends
 * nor honours WINDOW_UPDATE), so neither do we. */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "support/alloc.h"
#include "tests/e2e/agent/na.h"

static const uint8_t spdy_dict[] = {
#include "tests/e2e/agent/spdy_dict.inc"
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Minimum payload of the control frames we read fields from. */
static size_t ctrl_min(uint16_t type)
{
	switch (type) {
	case NA_SPDY_SYN_STREAM:
		return 10;
	case NA_SPDY_SYN_REPLY:
	case NA_SPDY_HEADERS:
	case NA_SPDY_PING:
	case NA_SPDY_SETTINGS:
		return 4;
	case NA_SPDY_RST_STREAM:
	case NA_SPDY_GOAWAY:
	case NA_SPDY_WINDOW_UPDATE:
		return 8;
	default:
		return 0;
	}
}

static int parse_ctrl(const uint8_t *p, size_t len, uint16_t type, struct na_spdy_frame *f)
{
	if (len < ctrl_min(type))
		return -EPROTO;
	f->data = p;
	f->len = len;
	switch (type) {
	case NA_SPDY_SYN_STREAM:
		f->stream_id = be32(p) & 0x7fffffffu;
		f->data = p + 10;
		f->len = len - 10;
		break;
	case NA_SPDY_SYN_REPLY:
	case NA_SPDY_HEADERS:
		f->stream_id = be32(p) & 0x7fffffffu;
		f->data = p + 4;
		f->len = len - 4;
		break;
	case NA_SPDY_PING:
		f->stream_id = be32(p);
		return 0;
	case NA_SPDY_RST_STREAM:
	case NA_SPDY_GOAWAY:
	case NA_SPDY_WINDOW_UPDATE:
		f->stream_id = be32(p) & 0x7fffffffu;
		f->value = be32(p + 4) & (type == NA_SPDY_WINDOW_UPDATE ? 0x7fffffffu : 0xffffffffu);
		if (type == NA_SPDY_GOAWAY)
			return 0;
		break;
	default:
		return 0;
	}
	return f->stream_id ? 0 : -EPROTO;
}

ssize_t na_spdy_parse(const uint8_t *buf, size_t n, size_t max_payload,
		      struct na_spdy_frame *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (n < 8)
		return 0;
	size_t len = be32(buf + 4) & 0xffffffu;
	if (len > max_payload)
		return -EMSGSIZE;
	bool control = buf[0] & 0x80;
	/* the version is checked before waiting for the payload: garbage fails fast */
	if (control && (((uint16_t)(buf[0] & 0x7f) << 8 | buf[1]) != 3))
		return -EPROTO;
	if (n - 8 < len)
		return 0;
	ret->flags = buf[4];
	if (!control) {
		ret->type = NA_SPDY_DATA;
		ret->stream_id = be32(buf) & 0x7fffffffu;
		ret->data = buf + 8;
		ret->len = len;
		if (!ret->stream_id)
			return -EPROTO;
		return (ssize_t)(8 + len);
	}
	ret->type = (uint16_t)(buf[2] << 8 | buf[3]);
	if (ret->type == NA_SPDY_DATA)
		return -EPROTO;
	int rc = parse_ctrl(buf + 8, len, ret->type, ret);
	return rc < 0 ? rc : (ssize_t)(8 + len);
}

/* ------------------------------------------------------------ headers */

void na_spdy_hdrs_done(struct na_spdy_hdrs *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->name[i]);
		free(h->value[i]);
	}
	memset(h, 0, sizeof(*h));
}

/* A length-prefixed string at raw[*off..n) into an owned copy. */
static int take_str(const uint8_t *raw, size_t n, size_t *off, char **ret, size_t *ret_len)
{
	if (n - *off < 4)
		return -EPROTO;
	uint32_t l = be32(raw + *off);
	*off += 4;
	if (l > n - *off)
		return -EPROTO;
	*ret = op_strndup((const char *)raw + *off, l);
	if (ret_len)
		*ret_len = l;
	*off += l;
	return 0;
}

int na_spdy_hdrs_parse(const uint8_t *raw, size_t n, struct na_spdy_hdrs *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (n < 4)
		return -EPROTO;
	uint32_t count = be32(raw);
	/* each pair takes at least 8 bytes: a count over what fits is a lie */
	if (count > NA_SPDY_MAX_PAIRS || count > (n - 4) / 8)
		return -EPROTO;
	size_t off = 4;
	for (uint32_t i = 0; i < count; i++) {
		size_t k = ret->n;
		if (take_str(raw, n, &off, &ret->name[k], NULL) < 0)
			goto bad;
		if (take_str(raw, n, &off, &ret->value[k], &ret->value_len[k]) < 0) {
			free(ret->name[k]);
			goto bad;
		}
		ret->n++;
		if (!ret->name[k][0])
			goto bad;
	}
	if (off != n)
		goto bad;
	return 0;
bad:
	na_spdy_hdrs_done(ret);
	return -EPROTO;
}

const char *na_spdy_hdr_get(const struct na_spdy_hdrs *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name))
			return h->value[i];
	return NULL;
}

/* --------------------------------------------------------------- zlib */

int na_spdy_z_init(struct na_spdy_z *z)
{
	z_stream *in = op_calloc(1, sizeof(*in)), *out = op_calloc(1, sizeof(*out));
	z->in = in;
	z->out = out;
	if (inflateInit(in) != Z_OK) {
		free(in);
		z->in = NULL;
		na_spdy_z_done(z);
		return -ENOMEM;
	}
	if (deflateInit(out, Z_DEFAULT_COMPRESSION) != Z_OK ||
	    deflateSetDictionary(out, spdy_dict, sizeof(spdy_dict)) != Z_OK) {
		deflateEnd(out);
		free(out);
		z->out = NULL;
		na_spdy_z_done(z);
		return -ENOMEM;
	}
	return 0;
}

void na_spdy_z_done(struct na_spdy_z *z)
{
	if (z->in) {
		inflateEnd(z->in);
		free(z->in);
	}
	if (z->out) {
		deflateEnd(z->out);
		free(z->out);
	}
	z->in = z->out = NULL;
}

int na_spdy_headers_decode(struct na_spdy_z *z, const uint8_t *blk, size_t n,
			   struct na_spdy_hdrs *ret)
{
	memset(ret, 0, sizeof(*ret));
	z_stream *s = z->in;
	uint8_t *raw = op_malloc(NA_SPDY_MAX_HEADERS + 1);
	s->next_in = (Bytef *)blk;
	s->avail_in = (uInt)n;
	s->next_out = raw;
	s->avail_out = NA_SPDY_MAX_HEADERS + 1;
	int rc = 0;
	while (s->avail_in > 0 && s->avail_out > 0) {
		int zr = inflate(s, Z_SYNC_FLUSH);
		if (zr == Z_NEED_DICT) {
			if (inflateSetDictionary(s, spdy_dict, sizeof(spdy_dict)) != Z_OK) {
				rc = -EPROTO;
				break;
			}
			continue;
		}
		if (zr == Z_BUF_ERROR)
			break;
		if (zr != Z_OK) {
			rc = -EPROTO;
			break;
		}
	}
	size_t got = NA_SPDY_MAX_HEADERS + 1 - s->avail_out;
	if (!rc && (s->avail_in > 0 || got > NA_SPDY_MAX_HEADERS))
		rc = got > NA_SPDY_MAX_HEADERS ? -EMSGSIZE : -EPROTO;
	if (!rc)
		rc = na_spdy_hdrs_parse(raw, got, ret);
	free(raw);
	return rc;
}

/* ------------------------------------------------------------- writers */

static int put_ctrl_header(struct op_buf *b, uint16_t type, uint8_t flags, size_t len)
{
	uint8_t h[8] = { 0x80, 3, (uint8_t)(type >> 8), (uint8_t)type };
	put32(h + 4, (uint32_t)len);
	h[4] = flags;
	return op_buf_add(b, h, sizeof(h));
}

static int deflate_block(z_stream *s, const struct op_buf *raw, struct op_buf *ret)
{
	s->next_in = (Bytef *)raw->data;
	s->avail_in = (uInt)raw->len;
	do {
		uint8_t chunk[1024];
		s->next_out = chunk;
		s->avail_out = sizeof(chunk);
		int zr = deflate(s, Z_SYNC_FLUSH);
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return -EPROTO;
		if (op_buf_add(ret, chunk, sizeof(chunk) - s->avail_out) < 0)
			return -EMSGSIZE;
	} while (s->avail_out == 0 || s->avail_in > 0);
	return 0;
}

/* The uncompressed name/value block of n pairs into raw. */
static int hdrs_render(struct op_buf *raw, const char *const *names, const char *const *values,
		       size_t n)
{
	uint8_t w[4];
	put32(w, (uint32_t)n);
	if (op_buf_add(raw, w, 4) < 0)
		return -EMSGSIZE;
	for (size_t i = 0; i < n; i++) {
		const char *s[2] = { names[i], values[i] };
		for (int k = 0; k < 2; k++) {
			put32(w, (uint32_t)strlen(s[k]));
			if (op_buf_add(raw, w, 4) < 0 || op_buf_adds(raw, s[k]) < 0)
				return -EMSGSIZE;
		}
	}
	return 0;
}

int na_spdy_put_headers(struct op_buf *b, struct na_spdy_z *z, enum na_spdy_type type,
			uint32_t stream_id, uint8_t flags, const char *const *names,
			const char *const *values, size_t n)
{
	struct op_buf raw = OP_BUF_INIT(NA_SPDY_MAX_HEADERS), zb = OP_BUF_INIT(NA_SPDY_MAX_PAYLOAD);
	size_t fixed = type == NA_SPDY_SYN_STREAM ? 10 : 4;
	uint8_t pre[10] = { 0 };
	put32(pre, stream_id & 0x7fffffffu);
	int rc = hdrs_render(&raw, names, values, n);
	if (!rc)
		rc = deflate_block(z->out, &raw, &zb);
	if (!rc && (put_ctrl_header(b, (uint16_t)type, flags, fixed + zb.len) < 0 ||
		    op_buf_add(b, pre, fixed) < 0 || op_buf_add(b, zb.data, zb.len) < 0))
		rc = -EMSGSIZE;
	op_buf_done(&raw);
	op_buf_done(&zb);
	return rc;
}

int na_spdy_put_data(struct op_buf *b, uint32_t stream_id, uint8_t flags, const void *data,
		     size_t len)
{
	if (len > 0xffffffu)
		return -EMSGSIZE;
	uint8_t h[8];
	put32(h, stream_id & 0x7fffffffu);
	put32(h + 4, (uint32_t)len);
	h[4] = flags;
	if (op_buf_add(b, h, sizeof(h)) < 0 || (len && op_buf_add(b, data, len) < 0))
		return -EMSGSIZE;
	return 0;
}

int na_spdy_put_ctrl(struct op_buf *b, enum na_spdy_type type, uint32_t a, uint32_t v)
{
	uint8_t p[8];
	put32(p, a);
	put32(p + 4, v);
	size_t len = type == NA_SPDY_PING ? 4 : 8;
	if (put_ctrl_header(b, (uint16_t)type, 0, len) < 0 || op_buf_add(b, p, len) < 0)
		return -EMSGSIZE;
	return 0;
}
