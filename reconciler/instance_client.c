/* reconciler/instance_client.c - parallel GET /pg/status (or POST /pg/cut)
 * over mTLS (curl multi).
 *
 * curl 7.88 built with GnuTLS refuses CURLOPT_CAINFO_BLOB (CURLE_NOT_BUILT_IN)
 * and its GnuTLS backend ignores CURLOPT_SSLCERT_BLOB/SSLKEY_BLOB, so the CA
 * and the client pair are sealed memory files (support/memfile.h) for the
 * duration of the call: nothing is written to $TMPDIR or any filesystem, which
 * also makes the call work with readOnlyRootFilesystem and no writable /tmp. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reconciler/instance_client.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/dl_curl.h"
#include "support/json.h"
#include "support/memfile.h"
#include "support/tcp_probe.h"

#define OPERATOR_CN "pgop-operator"

int rc_operator_client_cert(const struct pki_pair *ca, int64_t now, struct pki_pair *ret,
			    struct op_err *err)
{
	struct pki_leaf_req req = {
		.cn = OPERATOR_CN,
		.usage = PKI_USAGE_CLIENT,
		.now = now,
	};
	return pki_leaf_issue(ca, &req, ret, err);
}

/* The CA and the client pair as memory files (support/memfile.h): libcurl
 * with GnuTLS only takes paths, and nothing may reach a disk. */
struct creds {
	struct op_memfile ca, cert, key;
};

static void creds_done(struct creds *c)
{
	op_memfile_close(&c->ca);
	op_memfile_close(&c->cert);
	op_memfile_close(&c->key);
}

static int creds_make(struct creds *c, const char *ca_pem, const struct pki_pair *client,
		      struct op_err *err)
{
	/* every pool and one-off fetch starts here: a missing libcurl is this error */
	int r = op_dl_load(&op_dl_curl, err);
	if (r < 0)
		return r;
	r = op_memfile_open(&c->ca, "pgop-rc-ca.crt", ca_pem, strlen(ca_pem), err);
	if (r == 0 && client && client->cert_pem && client->key_pem) {
		r = op_memfile_open(&c->cert, "pgop-rc-tls.crt", client->cert_pem,
				    strlen(client->cert_pem), err);
		if (r == 0)
			r = op_memfile_open(&c->key, "pgop-rc-tls.key", client->key_pem,
					    strlen(client->key_pem), err);
	}
	return r;
}

struct rc_status_pool {
	pthread_mutex_t mu; /* held by the fetch using the pool */
	CURLM *m;           /* its connection cache; NULL until first used */
	struct creds c;     /* what the connections were made with */
	char *ca_pem, *cert_pem; /* owned copies, to notice a new pair */
};

struct rc_status_pool *rc_status_pool_new(void)
{
	struct rc_status_pool *p = op_calloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	p->c = (struct creds){ OP_MEMFILE_INIT, OP_MEMFILE_INIT, OP_MEMFILE_INIT };
	return p;
}

static void pool_reset(struct rc_status_pool *p)
{
	if (p->m)
		curl_multi_cleanup(p->m); /* closes the cached connections */
	p->m = NULL;
	creds_done(&p->c);
	free(p->ca_pem);
	free(p->cert_pem);
	p->ca_pem = p->cert_pem = NULL;
}

void rc_status_pool_free(struct rc_status_pool *p)
{
	if (!p)
		return;
	pool_reset(p);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Under p->mu: the pool's multi handle and credentials for this CA and
 * client pair, rebuilt (old connections closed) when either changed. */
static int pool_prepare(struct rc_status_pool *p, const char *ca_pem,
			const struct pki_pair *client, struct op_err *err)
{
	const char *cert = client && client->key_pem ? client->cert_pem : NULL;
	if (p->m && same(p->ca_pem, ca_pem) && same(p->cert_pem, cert))
		return 0;
	pool_reset(p);
	int r = creds_make(&p->c, ca_pem, client, err);
	if (r < 0) {
		pool_reset(p);
		return r;
	}
	p->m = curl_multi_init();
	if (!p->m) {
		pool_reset(p);
		return op_err_set(err, -ENOMEM, "curl_multi_init failed");
	}
	/* room for every instance of a Cluster (the default is 4 x the handles added) */
	curl_multi_setopt(p->m, CURLMOPT_MAXCONNECTS, 32L);
	p->ca_pem = op_strdup(ca_pem);
	p->cert_pem = cert ? op_strdup(cert) : NULL;
	return 0;
}

struct xfer {
	CURL *h;
	struct rc_instance *in;
	const char *what; /* "GET /pg/status", "POST /pg/cut": error messages (borrowed) */
	struct op_buf body;
	char errbuf[CURL_ERROR_SIZE];
	bool done; /* finished, or abandoned (rc_fetch_opts.abandon) */
	bool raw;  /* rc_fetch_opts.raw */
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (op_buf_add(&x->body, p, n) < 0)
		return 0; /* over the cap: curl aborts with CURLE_WRITE_ERROR */
	return n;
}

static void set_error(struct rc_instance *in, const char *msg)
{
	free(in->error);
	in->error = op_strdup(msg);
	in->has_status = false;
}

static void finish(struct xfer *x, CURLcode code)
{
	struct rc_instance *in = x->in;
	if (code != CURLE_OK) {
		_cleanup_free_ char *m =
			code == CURLE_WRITE_ERROR
				? op_asprintf("%s: answer over 1 MiB", x->what)
				: op_asprintf("%s: %s%s%s", x->what, curl_easy_strerror(code),
					      x->errbuf[0] ? ": " : "", x->errbuf);
		set_error(in, m);
		return;
	}
	long http = 0;
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &http);
	json_object *st = NULL;
	struct op_err err = OP_ERR_INIT;
	if (x->raw ? http < 200 || http > 299 : http != 200) { /* raw: 202 Accepted too */
		/* a raw answer's own words ({"error": ...}) say more than the code */
		const char *why = NULL;
		if (x->raw && op_json_parse(op_buf_str(&x->body), x->body.len, OP_JSON_MAX_DEPTH,
					    &st, &err) >= 0)
			why = op_json_key_str(st, "error");
		_cleanup_free_ char *m = op_asprintf("%s: HTTP %ld%s%.512s", x->what, http,
						     why ? ": " : "", why ? why : "");
		if (st)
			json_object_put(st);
		st = NULL;
		set_error(in, m);
		/* 503 {"restarting": true}: postgres (re)starts in place (instance/server.c) */
		bool restarting = false;
		if (http == 503 &&
		    op_json_parse(op_buf_str(&x->body), x->body.len, OP_JSON_MAX_DEPTH, &st,
				  &err) >= 0 &&
		    op_json_get_bool(st, "restarting", "", &restarting, &err) > 0)
			in->restarting = restarting;
		if (st)
			json_object_put(st);
		return;
	}
	if (op_json_parse(op_buf_str(&x->body), x->body.len, OP_JSON_MAX_DEPTH, &st, &err) < 0 ||
	    (x->raw && !json_object_is_type(st, json_type_object) &&
	     op_err_set(&err, -EBADMSG, "not a JSON object") < 0) ||
	    (!x->raw && rc_instance_parse_status(in, st, &err) < 0)) {
		_cleanup_free_ char *m = op_asprintf("%s: %s", x->what, err.msg);
		set_error(in, m);
	} else {
		free(in->error);
		in->error = NULL;
		if (x->raw) /* a /pg/status sets it when parsed */
			in->has_status = true;
		if (in->doc)
			json_object_put(in->doc);
		in->doc = TAKE_PTR(st); /* kept for the live API (apiserver/) */
	}
	if (st)
		json_object_put(st);
}

static int setup(struct xfer *x, const struct creds *c, const struct rc_fetch_opts *o,
		 struct op_err *err)
{
	x->h = curl_easy_init();
	if (!x->h)
		return op_err_set(err, -ENOMEM, "curl_easy_init failed");
	bool v6 = strchr(x->in->ip, ':') != NULL;
	_cleanup_free_ char *url =
		op_asprintf(v6 ? "https://[%s]:%u%s" : "https://%s:%u%s", x->in->ip,
			    o->port ? o->port : RC_STATUS_PORT, o->path ? o->path : "/pg/status");
	long timeout = o->timeout_ms > 0 ? o->timeout_ms : RC_STATUS_TIMEOUT_MS_DEFAULT;
	CURL *h = x->h;
	int bad = 0;
	bad |= curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK;
	if (o->post) {
		bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDS, "") != CURLE_OK;
		bad |= curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L) != CURLE_OK;
	}
	bad |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout) != CURLE_OK;
	/* a kept-alive connection to a silent instance would wait the whole timeout for
	 * an answer that does not come: it gets a new one (its TCP probe just passed) */
	bad |= curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, x->in->silent ? 1L : 0L) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK; /* chain only */
	bad |= curl_easy_setopt(h, CURLOPT_CAINFO, c->ca.path) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK;
	if (c->key.fd >= 0) {
		bad |= curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert.path) != CURLE_OK;
		bad |= curl_easy_setopt(h, CURLOPT_SSLKEY, c->key.path) != CURLE_OK;
	}
	bad |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_WRITEDATA, x) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_PRIVATE, x) != CURLE_OK;
	bad |= curl_easy_setopt(h, CURLOPT_PROXY, "") != CURLE_OK; /* never via a proxy */
	if (bad)
		return op_err_set(err, -EINVAL, "curl_easy_setopt failed for %s", x->in->name);
	return 0;
}

/* The TCP probe of every silent instance with an IP, all at once
 * (support/tcp_probe.h): ret[i] (owned array of n) is 0 for an instance to
 * fetch, else the errno of a connect that failed within
 * RC_STATUS_CONNECT_SILENT_MS. */
static int *probe_silent(const struct rc_instance *v, size_t n, unsigned port)
{
	int *ret = op_calloc(n ? n : 1, sizeof(*ret));
	const char **ips = op_calloc(n ? n : 1, sizeof(*ips));
	size_t *at = op_calloc(n ? n : 1, sizeof(*at)), k = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].silent && !v[i].unreachable && v[i].ip && *v[i].ip) {
			ips[k] = v[i].ip;
			at[k++] = i;
		}
	int *e = op_calloc(k ? k : 1, sizeof(*e));
	if (k && op_tcp_probe(ips, k, port, RC_STATUS_CONNECT_SILENT_MS, e) >= 0)
		for (size_t j = 0; j < k; j++)
			ret[at[j]] = e[j];
	free(e);
	free(at);
	free(ips);
	return ret;
}

/* Drops one running transfer (its connection closes with the handle);
 * why: the error's reason. */
static void give_up(CURLM *m, struct xfer *x, const char *why)
{
	curl_multi_remove_handle(m, x->h);
	curl_easy_cleanup(x->h);
	x->h = NULL;
	x->done = true;
	_cleanup_free_ char *msg = op_asprintf("%s: given up: %s", x->what, why);
	set_error(x->in, msg);
}

/* Drops the transfers rc_fetch_opts.abandon says to give up. */
static void abandon_lost(CURLM *m, struct xfer *xs, size_t n, const struct rc_fetch_opts *o)
{
	for (size_t i = 0; i < n; i++)
		if (xs[i].h && !xs[i].done && o->abandon(o->abandon_ctx, xs[i].in))
			give_up(m, &xs[i], "it stopped accepting TCP connects (the primary watch)");
}

/* GET /pg/status only: once no transfer to an instance known to answer runs
 * and ran_ms >= RC_STATUS_SILENT_WAIT_MS, the silent ones still running are
 * given up. */
static void give_up_silent(CURLM *m, struct xfer *xs, size_t n, int64_t ran_ms)
{
	if (ran_ms < RC_STATUS_SILENT_WAIT_MS)
		return;
	for (size_t i = 0; i < n; i++)
		if (xs[i].h && !xs[i].done && !xs[i].in->silent)
			return;
	_cleanup_free_ char *why = op_asprintf("silent last time, no answer within %d ms",
					       RC_STATUS_SILENT_WAIT_MS);
	for (size_t i = 0; i < n; i++)
		if (xs[i].h && !xs[i].done)
			give_up(m, &xs[i], why);
}

/* One rc_fetch_statuses call, in steps: fetch_begin (credentials and the
 * multi handle, the pool's or its own), fetch_add (one transfer per instance
 * to ask), fetch_run (the transfers until all are done), fetch_end.
 * Ownership: v and o.pool borrowed from the caller (pool locked by this call
 * while set); own, xs, tcp and what owned; m owned unless it is pool's. */
struct fetch {
	struct rc_fetch_opts o;
	struct rc_instance *v; /* borrowed: filled in place */
	size_t n;
	struct rc_status_pool *pool;
	struct creds own;
	const struct creds *cp; /* &own or &pool->c */
	CURLM *m;
	struct xfer *xs;        /* n of them */
	int *tcp;               /* probe_silent's answers */
	char *what;             /* "GET /pg/status" or "POST <path>", for the errors */
};

/* Takes the pool (when given and free) or makes one-off credentials and a
 * multi handle. On failure nothing is left held. */
static int fetch_begin(struct fetch *f, const char *ca_pem, const struct pki_pair *client,
		       struct op_err *err)
{
	f->own = (struct creds){ OP_MEMFILE_INIT, OP_MEMFILE_INIT, OP_MEMFILE_INIT };
	f->cp = &f->own;
	f->pool = f->o.pool && pthread_mutex_trylock(&f->o.pool->mu) == 0 ? f->o.pool : NULL;
	int r;
	if (f->pool) {
		r = pool_prepare(f->pool, ca_pem, client, err);
		if (r < 0) {
			pthread_mutex_unlock(&f->pool->mu);
			return r;
		}
		f->cp = &f->pool->c;
		f->m = f->pool->m;
		return 0;
	}
	r = creds_make(&f->own, ca_pem, client, err);
	if (r < 0) {
		creds_done(&f->own);
		return r;
	}
	f->m = curl_multi_init();
	return 0;
}

/* Adds a transfer for each instance to ask; the others (no IP, given to the
 * prober, or whose TCP probe failed) get their error now. */
static int fetch_add(struct fetch *f, struct op_err *err)
{
	const unsigned port = f->o.port ? f->o.port : RC_STATUS_PORT;
	f->tcp = probe_silent(f->v, f->n, port);
	for (size_t i = 0; i < f->n; i++) {
		struct rc_instance *in = &f->v[i];
		f->xs[i].in = in;
		f->xs[i].what = f->what;
		f->xs[i].raw = f->o.raw;
		f->xs[i].body = OP_BUF_INIT(RC_STATUS_BODY_MAX);
		in->has_status = false;
		in->restarting = false;
		if (!in->ip || !*in->ip) {
			set_error(in, "no pod IP");
			continue;
		}
		if (in->unreachable) {
			set_error(in, "not asked: it did not accept a TCP connect, probed in the "
				      "background until it does");
			continue;
		}
		if (f->tcp[i]) {
			_cleanup_free_ char *m2 = op_asprintf(
				"%s: TCP connect to %s port %u: %s (within %d ms)", f->what, in->ip,
				port, strerror(f->tcp[i]), RC_STATUS_CONNECT_SILENT_MS);
			set_error(in, m2);
			continue;
		}
		int r = setup(&f->xs[i], f->cp, &f->o, err);
		if (r < 0)
			return r;
		if (curl_multi_add_handle(f->m, f->xs[i].h) != CURLM_OK)
			return op_err_set(err, -ENOMEM, "curl_multi_add_handle failed");
	}
	return 0;
}

/* Runs the transfers until every one is done (or given up: o.abandon). */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int fetch_run(struct fetch *f, struct op_err *err)
{
	int running = 1;
	const bool status = !f->o.path && !f->o.post && !f->o.raw;
	const int64_t t0 = now_ms();
	while (running) {
		if (curl_multi_perform(f->m, &running) != CURLM_OK)
			return op_err_set(err, -EIO, "curl_multi_perform failed");
		if (running && curl_multi_poll(f->m, NULL, 0, 100, NULL) != CURLM_OK)
			return op_err_set(err, -EIO, "curl_multi_poll failed");
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(f->m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct xfer *x = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			if (x) {
				finish(x, msg->data.result);
				x->done = true;
			}
		}
		if (running && f->o.abandon)
			abandon_lost(f->m, f->xs, f->n, &f->o);
		if (running && status)
			give_up_silent(f->m, f->xs, f->n, now_ms() - t0);
	}
	return 0;
}

/* Frees what f owns; the pool's connections stay in it (reset when the call
 * failed: r < 0) and it is released. */
static void fetch_end(struct fetch *f, int r)
{
	free(f->tcp);
	for (size_t i = 0; i < f->n; i++) {
		if (f->xs[i].h) {
			if (f->m)
				curl_multi_remove_handle(f->m, f->xs[i].h);
			curl_easy_cleanup(f->xs[i].h);
		}
		op_buf_done(&f->xs[i].body);
	}
	free(f->xs);
	free(f->what);
	if (f->pool) {
		if (r < 0)
			pool_reset(f->pool); /* a failed call set: start over next time */
		pthread_mutex_unlock(&f->pool->mu); /* the connections stay in pool->m */
	} else {
		if (f->m)
			curl_multi_cleanup(f->m);
		creds_done(&f->own);
	}
}

int rc_fetch_statuses(const char *ca_pem, const struct pki_pair *client, struct rc_instance *v,
		      size_t n, const struct rc_fetch_opts *opts, struct op_err *err)
{
	if (!ca_pem || !*ca_pem)
		return op_err_set(err, -EINVAL, "no cluster CA certificate");
	if (n == 0)
		return 0;
	struct fetch f = { .o = opts ? *opts : (struct rc_fetch_opts){ 0 }, .v = v, .n = n };
	int r = fetch_begin(&f, ca_pem, client, err);
	if (r < 0)
		return r;
	f.xs = op_calloc(n, sizeof(*f.xs));
	/* for the error messages: the method and the path without the query */
	const char *path = f.o.path ? f.o.path : "/pg/status";
	f.what = op_asprintf("%s %.*s", f.o.post ? "POST" : "GET", (int)strcspn(path, "?"), path);
	if (!f.m)
		r = op_err_set(err, -ENOMEM, "curl_multi_init failed");
	if (r == 0)
		r = fetch_add(&f, err);
	if (r == 0)
		r = fetch_run(&f, err);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r += v[i].has_status;
	fetch_end(&f, r);
	return r;
}
