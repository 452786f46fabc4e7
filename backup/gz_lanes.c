/* backup/gz_lanes.c - the WAL gzip encoder: one gzip member per BK_GZ_CHUNK
 * of input (RFC 1952: a gzip file is a series of members), the members of
 * a batch compressed at once by libdeflate in up to BK_GZ_LANES_MAX threads
 * (each lane its own compressor, input and output buffers), emitted in
 * input order. A 16 MiB segment is 16 members: on two cores its
 * compression takes half the time it takes in one thread, at the same CPU.
 * Memory: per lane one chunk of input, its output bound and a compressor. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "backup/internal.h"
#include "support/alloc.h"

/* The level: on pgbench WAL segments (16 MiB, 1 MiB members;
 * docs/internals/backup.md "Figures") per segment: zlib 6 256 ms CPU,
 * 2.09 MB; libdeflate 1 42 ms, +9 %; 2 51 ms, +6 %; 4 62 ms, +4 %; 6 92 ms,
 * +0.4 %. 1 keeps wal-archive under a tenth of barman-cloud-wal-archive's
 * CPU (issue 25). */
#define GZ_LEVEL 1

struct lane {
	struct libdeflate_compressor *c; /* owned */
	unsigned char *in, *out;         /* owned: BK_GZ_CHUNK, out_size */
	size_t in_len, out_len, out_size;
	pthread_t th;
	bool threaded; /* th runs this lane's member */
};

struct bk_gz_lanes {
	unsigned n;      /* lanes */
	unsigned filled; /* lanes whose input is complete, in order */
	uint64_t members;
	struct lane lane[BK_GZ_LANES_MAX];
};

unsigned bk_gz_lanes_default(void)
{
	cpu_set_t set;
	int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	unsigned n = cpus < 1 ? 1u : (unsigned)cpus;
	return n > BK_GZ_LANES_MAX ? BK_GZ_LANES_MAX : n;
}

void bk_gz_lanes_free(struct bk_gz_lanes *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i < g->n; i++) {
		if (g->lane[i].c)
			libdeflate_free_compressor(g->lane[i].c);
		free(g->lane[i].in);
		free(g->lane[i].out);
	}
	free(g);
}

int bk_gz_lanes_new(unsigned lanes, struct bk_gz_lanes **ret)
{
	struct bk_gz_lanes *g = op_calloc(1, sizeof(*g));
	g->n = lanes < 1 ? 1 : lanes > BK_GZ_LANES_MAX ? BK_GZ_LANES_MAX : lanes;
	for (unsigned i = 0; i < g->n; i++) {
		struct lane *l = &g->lane[i];
		l->c = libdeflate_alloc_compressor(GZ_LEVEL);
		l->out_size = l->c ? libdeflate_gzip_compress_bound(l->c, BK_GZ_CHUNK) : 0;
		if (!l->c || l->out_size == 0) {
			bk_gz_lanes_free(g);
			return -ENOMEM;
		}
		l->in = op_malloc(BK_GZ_CHUNK);
		l->out = op_malloc(l->out_size);
	}
	*ret = g;
	return 0;
}

/* One lane's member; out_len 0 when libdeflate failed (only a missing
 * library can: out_size is the bound). */
static void *compress_lane(void *ud)
{
	struct lane *l = ud;
	l->out_len = libdeflate_gzip_compress(l->c, l->in, l->in_len, l->out, l->out_size);
	return NULL;
}

/* The filled lanes' members, compressed at once (lane 0 in this thread, the
 * others each in a thread of its own, or here when one cannot be made),
 * then emitted in order. */
static int flush(struct bk_gz_lanes *g, bk_gz_emit_fn emit, void *ud, struct op_err *err)
{
	for (unsigned i = 1; i < g->filled; i++)
		g->lane[i].threaded = pthread_create(&g->lane[i].th, NULL, compress_lane,
						     &g->lane[i]) == 0;
	for (unsigned i = 0; i < g->filled; i++)
		if (i == 0 || !g->lane[i].threaded)
			compress_lane(&g->lane[i]);
	for (unsigned i = 1; i < g->filled; i++)
		if (g->lane[i].threaded)
			pthread_join(g->lane[i].th, NULL);
	int rc = 0;
	for (unsigned i = 0; i < g->filled; i++) {
		struct lane *l = &g->lane[i];
		if (rc == 0 && l->out_len == 0)
			rc = op_err_set(err, -EBADMSG, "gzip: encoder failed: "
					"libdeflate_gzip_compress failed");
		if (rc == 0)
			rc = emit(ud, l->out, l->out_len, err);
		g->members++;
		l->in_len = 0;
		l->threaded = false;
	}
	g->filled = 0;
	return rc;
}

int bk_gz_lanes_write(struct bk_gz_lanes *g, const void *in, size_t len, bool finish,
		      bk_gz_emit_fn emit, void *ud, struct op_err *err)
{
	const unsigned char *p = in;
	while (len > 0) {
		struct lane *l = &g->lane[g->filled];
		size_t n = BK_GZ_CHUNK - l->in_len < len ? BK_GZ_CHUNK - l->in_len : len;
		memcpy(l->in + l->in_len, p, n);
		l->in_len += n;
		p += n;
		len -= n;
		if (l->in_len == BK_GZ_CHUNK && ++g->filled == g->n) {
			int rc = flush(g, emit, ud, err);
			if (rc < 0)
				return rc;
		}
	}
	if (!finish)
		return 0;
	/* the partial lane; an empty input still makes a gzip file (one empty member) */
	if (g->lane[g->filled].in_len > 0 || (g->filled == 0 && g->members == 0))
		g->filled++;
	return g->filled ? flush(g, emit, ud, err) : 0;
}
