/* kube/client.c - struct kube_client: curl setup, auth, rate limit, retries,
 * error mapping, and the generic request. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "support/alloc.h"
#include "support/buf.h"
#include "support/dl_curl.h"
#include "support/json.h"
#include "support/log.h"
#include "support/metrics.h"

#define TOKEN_MAX (64u * 1024)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct kube_client *c = ud;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
	struct kube_client *c = ud;
	if ((unsigned)data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&c->share_locks[data]);
}

struct kube_client *kube_client_free(struct kube_client *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < c->n_idle; i++)
		curl_easy_cleanup(c->idle[i]); /* before the share they use */
	pthread_mutex_destroy(&c->pool_lock);
	if (c->share)
		curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_locks[i]);
	pthread_mutex_destroy(&c->lock);
	for (int i = 0; i < KUBE__EVENT_CACHE; i++) {
		free(c->events[i].key);
		free(c->events[i].ns);
		free(c->events[i].name);
	}
	free(c->token);
	free(c->user_agent);
	kube_config_free(c->cfg);
	free(c);
	return NULL;
}

int kube_client_new(struct kube_config *cfg, const struct kube_client_opts *opts,
		    struct kube_client **ret_client, struct op_err *err)
{
	static const struct kube_client_opts none = { 0 };
	if (!cfg) 
		return op_err_set(err, -EINVAL, "kube client: no configuration");
	if (!opts)
		opts = &none;
	int r = op_dl_load(&op_dl_curl, err);
	if (r < 0)
		return r;
	pthread_once(&curl_once, curl_init_once);
	struct kube_client *c = op_calloc(1, sizeof(*c));
	c->cfg = cfg;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_locks[i], NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	c->qps = opts->qps > 0 ? opts->qps : KUBE_QPS_DEFAULT;
	c->burst = opts->burst > 0 ? opts->burst : KUBE_BURST_DEFAULT;
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
	c->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 10000;
	c->max_retries = opts->max_retries > 0 ? opts->max_retries : opts->max_retries < 0 ? 0 : 5;
	c->max_retry_after_ms = opts->max_retry_after_ms > 0 ? opts->max_retry_after_ms : 10000;
	c->max_response = opts->max_response > 0 ? opts->max_response : OP_BUF_MAX_KUBE_RESPONSE;
	c->user_agent = op_strdup(opts->user_agent ? opts->user_agent : "pgop/" PGOP_VERSION);
	for (size_t i = 0; i < OP_ARRAY_SIZE(c->bucket); i++)
		c->bucket[i] = (struct kube__bucket){ c->burst, kube__now_ms() };
	c->share = curl_share_init();
	if (!c->share) {
		kube_client_free(c);
		return op_err_set(err, -ENOMEM, "kube client: cannot allocate curl share");
	}
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	/* not CURL_LOCK_DATA_CONNECT: unsupported between concurrent threads (idle
	 * handles keep connections instead, kube__easy_done) */
	*ret_client = c;
	return 0;
}

const struct kube_config *kube_client_config(const struct kube_client *c)
{
	return c->cfg;
}

const char *kube_client_namespace(const struct kube_client *c)
{
	return c->cfg->namespace;
}

void kube_client_stats(struct kube_client *c, struct kube_client_stats *ret_stats)
{
	pthread_mutex_lock(&c->lock);
	*ret_stats = c->stats;
	pthread_mutex_unlock(&c->lock);
}

void kube__stat_add(struct kube_client *c, bool retry)
{
	pthread_mutex_lock(&c->lock);
	c->stats.requests++;
	if (retry)
		c->stats.retries++;
	pthread_mutex_unlock(&c->lock);
}

static const char *const verbs[KUBE__N_VERBS] = { "get",    "post",  "put",  "patch",
						   "delete", "watch", "other" };
static const long codes[KUBE__N_CODES - 2] = { 200, 201, 202, 204, 400, 401, 403, 404,
					       409, 410, 422, 429, 500, 503, 504 };

void kube__count(struct kube_client *c, const char *method, bool watch, long http)
{
	size_t v = KUBE__N_VERBS - 1;
	if (watch)
		v = 5;
	else
		for (size_t i = 0; i < 5; i++)
			if (method && strcasecmp(method, verbs[i]) == 0)
				v = i;
	size_t k = http == 0 ? KUBE__N_CODES - 1 : KUBE__N_CODES - 2;
	for (size_t i = 0; http && i < OP_ARRAY_SIZE(codes); i++)
		if (codes[i] == http)
			k = i;
	op_counter_add(&c->by_code[v][k], 1);
}

int kube_client_render_metrics(struct kube_client *c, struct op_buf *out)
{
	static const char name[] = "pgop_kube_requests_total";
	int r = op_metrics_header(out, name, "counter",
				  "Kubernetes API requests sent, by verb and HTTP status code.");
	for (size_t v = 0; !r && v < KUBE__N_VERBS; v++)
		for (size_t k = 0; !r && k < KUBE__N_CODES; k++) {
			uint64_t n = op_counter_get(&c->by_code[v][k]);
			if (!n)
				continue;
			char lb[64], code[16];
			if (k < OP_ARRAY_SIZE(codes))
				snprintf(code, sizeof(code), "%ld", codes[k]);
			else
				snprintf(code, sizeof(code), "%s",
					 k == KUBE__N_CODES - 1 ? "error" : "other");
			snprintf(lb, sizeof(lb), "verb=\"%s\",code=\"%s\"", verbs[v], code);
			r = op_metrics_sample(out, name, lb, n);
		}
	struct kube_client_stats st;
	kube_client_stats(c, &st);
	if (!r)
		r = op_metrics_header(out, "pgop_kube_throttled_seconds_total", "counter",
				      "Time requests waited for the client-side rate limiter.");
	if (!r)
		r = op_buf_addf(out, "pgop_kube_throttled_seconds_total %.3f\n",
				(double)st.throttled_ms / 1000.0);
	return r;
}

void kube__throttle(struct kube_client *c, bool events)
{
	pthread_mutex_lock(&c->lock);
	struct kube__bucket *b = &c->bucket[events ? 1 : 0];
	int64_t now = kube__now_ms();
	b->tokens += (double)(now - b->refill_ms) * c->qps / 1000.0;
	if (b->tokens > c->burst)
		b->tokens = c->burst;
	b->refill_ms = now;
	b->tokens -= 1.0; /* reserve; negative means wait for the refill */
	long wait = b->tokens < 0 ? (long)ceil(-b->tokens * 1000.0 / c->qps) : 0;
	c->stats.throttled_ms += (uint64_t)wait;
	pthread_mutex_unlock(&c->lock);
	kube__sleep_ms(wait);
}

/* Returns an owned copy of the bearer token, re-reading token_file when it
 * changed (bound service-account tokens rotate). NULL when none. */
static char *current_token(struct kube_client *c)
{
	const struct kube_config *cfg = c->cfg;
	if (!cfg->token_file)
		return cfg->token ? op_strdup(cfg->token) : NULL;
	struct stat st;
	char *out = NULL;
	pthread_mutex_lock(&c->lock);
	if (stat(cfg->token_file, &st) == 0) {
		int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		if (!c->token || st.st_ino != c->token_ino || st.st_dev != c->token_dev ||
		    mt != c->token_mtime_ns || st.st_size != c->token_size) {
			struct op_buf b = OP_BUF_INIT(TOKEN_MAX);
			if (kube__read_file(cfg->token_file, TOKEN_MAX, &b, NULL) == 0) {
				size_t n = strcspn(op_buf_str(&b), "\r\n");
				free(c->token);
				c->token = op_strndup(op_buf_str(&b), n);
				c->token_ino = st.st_ino;
				c->token_dev = st.st_dev;
				c->token_mtime_ns = mt;
				c->token_size = st.st_size;
			}
			op_buf_done(&b);
		}
	}
	/* On a read failure keep using the last good token. */
	if (c->token)
		out = op_strdup(c->token);
	else if (cfg->token)
		out = op_strdup(cfg->token);
	pthread_mutex_unlock(&c->lock);
	return out;
}

int kube__curl_errno(CURLcode cc)
{
	switch (cc) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER:
		return -EPROTO;
	case CURLE_FILESIZE_EXCEEDED:
		return -EMSGSIZE;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EINVAL;
	default:
		return -EIO;
	}
}

int kube__easy_new(struct kube_client *c, const char *method, const char *url,
		   const char *content_type, char *errbuf, struct curl_slist **ret_headers,
		   CURL **ret_easy, struct op_err *err)
{
	const struct kube_config *cfg = c->cfg;
	CURL *h = NULL;
	pthread_mutex_lock(&c->pool_lock);
	if (c->n_idle)
		h = c->idle[--c->n_idle];
	pthread_mutex_unlock(&c->pool_lock);
	if (h)
		curl_easy_reset(h); /* options back to defaults; its connection stays */
	else
		h = curl_easy_init();
	if (!h)
		return op_err_set(err, -ENOMEM, "cannot allocate a curl handle");
	struct curl_slist *hdrs = NULL, *tmp;
	_cleanup_free_ char *token = current_token(c);
	_cleanup_free_ char *auth = token ? op_asprintf("Authorization: Bearer %s", token) : NULL;
	_cleanup_free_ char *ct = content_type ? op_asprintf("Content-Type: %s", content_type) : NULL;
	const char *lines[] = { "Accept: application/json", auth, ct };
	for (size_t i = 0; i < OP_ARRAY_SIZE(lines); i++) {
		if (!lines[i])
			continue;
		tmp = curl_slist_append(hdrs, lines[i]);
		if (!tmp) {
			curl_slist_free_all(hdrs);
			curl_easy_cleanup(h);
			return op_err_set(err, -ENOMEM, "cannot allocate request headers");
		}
		hdrs = tmp;
	}
	errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "GET"))
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (cfg->ca_file) {
		curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
		/* only that CA: Debian's libcurl-gnutls also loads its default CA path
		 * (/etc/ssl/certs, ~140 public roots) for every connection otherwise,
		 * which trusts them for the API server too and cost ~7.5 MB of heap per
		 * thread (measured: 12 malloc arenas of 7.5 MB in the controller pod) */
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	}
	if (cfg->insecure_skip_tls_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (cfg->client_cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->client_cert_file);
	if (cfg->client_key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->client_key_file);
	if (cfg->username && !token) {
		curl_easy_setopt(h, CURLOPT_USERNAME, cfg->username);
		curl_easy_setopt(h, CURLOPT_PASSWORD, cfg->password ? cfg->password : "");
	}
	*ret_headers = hdrs;
	*ret_easy = h;
	return 0;
}

void kube__easy_done(struct kube_client *c, CURL *h, bool keep)
{
	if (!h)
		return;
	pthread_mutex_lock(&c->pool_lock);
	if (keep && c->n_idle < KUBE__IDLE_MAX) {
		c->idle[c->n_idle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->pool_lock);
	if (h)
		curl_easy_cleanup(h);
}

int kube_errno_from_http(long http, const char *reason)
{
	switch (http) {
	case 404:
		return -ENOENT;
	case 409:
		return reason && !strcmp(reason, "AlreadyExists") ? -EEXIST : -ESTALE;
	case 400:
	case 422:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 410:
		return -ETIME;
	case 429:
		return -EBUSY;
	case 503:
		return -EAGAIN;
	case 413:
		return -EMSGSIZE;
	case 405:
	case 415:
		return -EOPNOTSUPP;
	default:
		return http >= 500 ? -EIO : -EPROTO;
	}
}

int kube__http_error(long http, const char *body, size_t len, const char *verb,
		     const struct kube_kind *k, const char *ns, const char *name,
		     struct op_err *err)
{
	_cleanup_(op_json_putp) json_object *st = NULL;
	const char *reason = NULL, *message = NULL;
	if (len > 0 && op_json_parse(body, len, 16, &st, NULL) == 0) {
		reason = op_json_str_at(st, "reason");
		message = op_json_str_at(st, "message");
	}
	int code = kube_errno_from_http(http, reason);
	_cleanup_free_ char *snippet = NULL;
	if (!message && len > 0) {
		snippet = op_strndup(body, len < 200 ? len : 200);
		message = snippet;
	}
	const char *res = k ? k->resource : "";
	const char *sep = ns && *ns && name && *name ? "/" : "";
	return op_err_set(err, code, "%s %s %s%s%s: %s%s%s (%ld)", verb, res, ns ? ns : "", sep,
			  name ? name : "", reason ? reason : "", reason ? ": " : "",
			  message ? message : "no message", http);
}

/* ---- one buffered request ---- */

struct reply {
	struct op_buf body;
	bool too_big;
	long retry_after_ms; /* -1 = absent */
};

static size_t reply_write(char *p, size_t size, size_t n, void *ud)
{
	struct reply *r = ud;
	if (op_buf_add(&r->body, p, size * n) < 0) {
		r->too_big = true;
		return 0;
	}
	return size * n;
}

static size_t reply_header(char *p, size_t size, size_t n, void *ud)
{
	struct reply *r = ud;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof(name) - 1 && !strncasecmp(p, name, sizeof(name) - 1)) {
		long v = 0;
		size_t i = sizeof(name) - 1;
		while (i < len && p[i] == ' ')
			i++;
		size_t digits = 0;
		for (; i < len && p[i] >= '0' && p[i] <= '9' && digits < 6; i++, digits++)
			v = v * 10 + (p[i] - '0');
		if (digits > 0)
			r->retry_after_ms = v * 1000;
	}
	return len;
}

static bool method_idempotent(const char *m)
{
	return !strcmp(m, "GET") || !strcmp(m, "PUT") || !strcmp(m, "DELETE") ||
	       !strcmp(m, "HEAD");
}

static bool transport_retryable(CURLcode cc, bool idempotent)
{
	if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
		return true; /* nothing was sent */
	return idempotent && (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR ||
			      cc == CURLE_SEND_ERROR || cc == CURLE_PARTIAL_FILE);
}

/* One request's attempts (kube_request): what every attempt reuses and what
 * the last one left. */
struct attempt {
	const struct kube_request *req; /* borrowed */
	const char *verb, *url, *ctype; /* borrowed */
	bool idem;                      /* retried after a lost reply or a 5xx */
	struct reply rep;               /* owned: the last attempt's reply */
	char errbuf[CURL_ERROR_SIZE];
	CURLcode cc;
	long http; /* 0: no status */
};

/* The request's URL: the server, the kind's path or req->path, the query. */
static int request_url(struct kube_client *c, const struct kube_request *req, struct op_buf *url)
{
	int r = op_buf_adds(url, c->cfg->server);
	if (r >= 0)
		r = req->kind ? kube_path(url, req->kind, req->ns, req->name, req->subresource)
			      : op_buf_adds(url, req->path ? req->path : "/");
	if (r >= 0 && req->query && *req->query)
		r = op_buf_addf(url, "?%s", req->query);
	return r;
}

/* Attempt n: a fresh reply, a handle, the body and the reply callbacks, the
 * client's throttle, then the transfer (a->cc, a->http). 0, or -errno with
 * err set when no handle could be made. */
static int attempt_perform(struct kube_client *c, struct attempt *a, int n, struct op_err *err)
{
	const struct kube_request *req = a->req;
	struct curl_slist *hdrs = NULL;
	CURL *h = NULL;
	op_buf_done(&a->rep.body);
	op_buf_init(&a->rep.body, c->max_response);
	a->rep.too_big = false;
	a->rep.retry_after_ms = -1;
	int rc = kube__easy_new(c, req->method, a->url, a->ctype, a->errbuf, &hdrs, &h, err);
	if (rc < 0)
		return rc;
	if (req->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req->body));
	}
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reply_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a->rep);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, reply_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &a->rep);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_response);
	kube__throttle(c, req->kind == KUBE_EVENTS);
	kube__stat_add(c, n > 0);
	a->cc = curl_easy_perform(h);
	a->http = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->http);
	kube__count(c, req->method, false, a->cc == CURLE_OK ? a->http : 0);
	kube__easy_done(c, h, true);
	curl_slist_free_all(hdrs);
	return 0;
}

/* After attempt n: true to retry after *ret_wait_ms (attempts left, and a
 * transport failure transport_retryable allows, a 429, or a 5xx of an
 * idempotent request; the wait: Retry-After or 200 ms doubling, capped);
 * false with *ret_rc, the HTTP status (2xx) or -errno with err set. */
static bool attempt_retry(struct kube_client *c, const struct attempt *a, int n,
			  long *ret_wait_ms, int *ret_rc, struct op_err *err)
{
	const struct kube_request *req = a->req;
	bool last = n >= c->max_retries;
	long backoff = 200L << (n < 5 ? n : 5);
	if (a->rep.too_big || a->cc == CURLE_FILESIZE_EXCEEDED) {
		*ret_rc = op_err_set(err, -EMSGSIZE, "%s %s: response larger than %zu bytes", a->verb,
				     req->kind ? req->kind->resource : a->url, c->max_response);
		return false;
	}
	if (a->cc != CURLE_OK) {
		if (!last && transport_retryable(a->cc, a->idem)) {
			*ret_wait_ms = backoff;
			return true;
		}
		*ret_rc = op_err_set(err, kube__curl_errno(a->cc), "%s %s: %s", a->verb, a->url,
				     a->errbuf[0] ? a->errbuf : curl_easy_strerror(a->cc));
		return false;
	}
	long http = a->http;
	if (!last && (http == 429 || (a->idem && (http == 500 || http == 502 || http == 503 ||
						  http == 504)))) {
		long wait = a->rep.retry_after_ms >= 0 ? a->rep.retry_after_ms : backoff;
		if (wait > c->max_retry_after_ms)
			wait = c->max_retry_after_ms;
		if (http == 429) { /* the API server protecting itself: say where */
			char ms[24];
			snprintf(ms, sizeof(ms), "%ld", wait);
			op_log_warn("the API server throttled a request (429): retrying", "verb",
				    a->verb, "url", a->url, "retry_ms", ms);
		}
		*ret_wait_ms = wait;
		return true;
	}
	if (http < 200 || http >= 300) {
		*ret_rc = kube__http_error(http, a->rep.body.data, a->rep.body.len, a->verb, req->kind,
					   req->ns, req->name ? req->name : req->msg_name, err);
		return false;
	}
	*ret_rc = (int)http;
	return false;
}

/* The last reply's body as JSON into *ret_obj (NULL when empty); rc (the
 * HTTP status) or -errno with err set. */
static int attempt_json(const struct attempt *a, int rc, json_object **ret_obj,
			struct op_err *err)
{
	json_object *o = NULL;
	if (a->rep.body.len > 0) {
		int pr = op_json_parse(a->rep.body.data, a->rep.body.len, OP_JSON_MAX_DEPTH, &o, err);
		if (pr < 0) {
			op_err_prefix(err, "%s %s: response", a->verb,
				      a->req->kind ? a->req->kind->resource : a->url);
			return pr;
		}
	}
	*ret_obj = o;
	return rc;
}

int kube_request(struct kube_client *c, const struct kube_request *req, json_object **ret_obj,
		 struct op_err *err)
{
	struct attempt a = { .req = req,
			     .verb = req->verb ? req->verb : req->method,
			     .idem = method_idempotent(req->method),
			     .rep = { .body = OP_BUF_INIT(c->max_response), .retry_after_ms = -1 } };
	_cleanup_(op_buf_donep) struct op_buf url = OP_BUF_INIT(OP_BUF_MAX_SMALL);
	if (request_url(c, req, &url) < 0)
		return op_err_set(err, -EINVAL, "%s: request URL too long", a.verb);
	a.url = op_buf_str(&url);
	a.ctype = req->body ? (req->content_type ? req->content_type : "application/json") : NULL;
	int rc = 0;
	for (int n = 0;; n++) {
		long wait = 0;
		if ((rc = attempt_perform(c, &a, n, err)) < 0 ||
		    !attempt_retry(c, &a, n, &wait, &rc, err))
			break;
		kube__sleep_ms(wait);
	}
	if (rc >= 0 && ret_obj)
		rc = attempt_json(&a, rc, ret_obj, err);
	op_buf_done(&a.rep.body);
	return rc;
}
