/* bench/webhook.c - admission webhook throughput and latency over TLS.
 *
 * The server (support/http_server + wh_handle_review, as `pgop controller`
 * runs it) is started in a CHILD process with a fresh ECDSA P-256 chain from
 * pki/ (CA + server leaf), so its memory figures are its own (VmRSS/VmHWM from
 * /proc/<pid>/status). The parent drives it with N client threads, each
 * reusing one libcurl easy handle (TLS keep-alive), for a fixed time per run:
 *   - baseline: GET /healthz (TLS + HTTP cost alone)
 *   - validate: POST a typical 3-instance Cluster AdmissionReview
 *   - mutate:   the same review on the mutating path
 *   - denial:   the review with one invalid field (allowed=false, 422 causes)
 * at concurrency 1, 16 and 64, printing reviews/s, p50/p99 latency, errors,
 * the server's peak RSS and its CPU time per request (utime+stime of the child
 * over the run / requests: unlike req/s, not skewed by the client sharing
 * the CPUs or by other load on the machine), then the CPU per review of each
 * path with its ratio to validate, and a keep-alive case: 16 long-lived
 * connections, the reviews/s and the server's CPU split over its threads.
 *
 * Usage: bench_webhook [SECONDS_PER_RUN (default 3)] [SERVER_THREADS (default: CPUs)]
 *                      [SCENARIO_SUBSTRING]
 * Client and server share the machine: on 2 cores the client's TLS work
 * competes with the server's, so the figures are a floor.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/alloc.h"
#include "support/http_server.h"
#include "support/log.h"
#include "tests/unit/test_http_cert.h"
#include "webhooks/webhooks.h"

#define VALIDATE_PATH "/validate-postgresql-cnpg-io-v1-cluster"
#define MUTATE_PATH "/mutate-postgresql-cnpg-io-v1-cluster"

/* A typical Cluster as users write it (cluster-example + the usual knobs). */
static const char review_body[] =
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
	"\"uid\":\"0d2a4c1e-6f1b-4c89-9a55-3f1d2b7e8a90\","
	"\"kind\":{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"kind\":\"Cluster\"},"
	"\"resource\":{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"resource\":\"clusters\"},"
	"\"requestKind\":{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"kind\":\"Cluster\"},"
	"\"requestResource\":{\"group\":\"postgresql.cnpg.io\",\"version\":\"v1\",\"resource\":\"clusters\"},"
	"\"name\":\"cluster-example\",\"namespace\":\"default\",\"operation\":\"CREATE\","
	"\"userInfo\":{\"username\":\"kubernetes-admin\",\"groups\":[\"system:masters\",\"system:authenticated\"]},"
	"\"object\":{\"apiVersion\":\"postgresql.cnpg.io/v1\",\"kind\":\"Cluster\","
	"\"metadata\":{\"name\":\"cluster-example\",\"namespace\":\"default\",\"labels\":{\"app\":\"db\"}},"
	"\"spec\":{\"instances\":3,\"imageName\":\"ghcr.io/cloudnative-pg/postgresql:17.2\","
	"\"primaryUpdateStrategy\":\"unsupervised\",\"enableSuperuserAccess\":false,"
	"\"postgresql\":{\"parameters\":{\"max_connections\":\"200\",\"shared_buffers\":\"256MB\","
	"\"work_mem\":\"8MB\",\"log_min_duration_statement\":\"1000\"},"
	"\"pg_hba\":[\"host all all 10.0.0.0/8 scram-sha-256\"],"
	"\"synchronous\":{\"method\":\"any\",\"number\":1}},"
	"\"bootstrap\":{\"initdb\":{\"database\":\"app\",\"owner\":\"app\",\"dataChecksums\":true}},"
	"\"storage\":{\"size\":\"10Gi\",\"storageClass\":\"standard\"},"
	"\"walStorage\":{\"size\":\"2Gi\"},"
	"\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"},"
	"\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}},"
	"\"affinity\":{\"enablePodAntiAffinity\":true,\"topologyKey\":\"kubernetes.io/hostname\"},"
	"\"monitoring\":{\"enablePodMonitor\":false}}},"
	"\"oldObject\":null,\"dryRun\":false,"
	"\"options\":{\"kind\":\"CreateOptions\",\"apiVersion\":\"meta.k8s.io/v1\"}}}";

/* The same review with one rule broken (spec.storage.size "10Gx"): the denial
 * path (allowed=false, 422 Invalid with details.causes), built once in main(). */
static char *denial_body;

/* ---- server (child process) --------------------------------------------- */

static int on_validate(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		       struct op_err *err)
{
	return wh_handle_review(WH_VALIDATE, req->body, req->body_len, &rep->body, err);
}

static int on_mutate(void *ud, const struct op_http_request *req, struct op_http_reply *rep,
		     struct op_err *err)
{
	return wh_handle_review(WH_MUTATE, req->body, req->body_len, &rep->body, err);
}

static const struct op_http_route routes[] = {
	{ "POST", MUTATE_PATH, on_mutate },
	{ "POST", VALIDATE_PATH, on_validate },
};

/* Runs in the child: serve until SIGTERM. Writes the port (uint16_t) to fd. */
static int serve(const char *cert, const char *key, unsigned threads, int fd)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	op_log_set_level(OP_LOG_ERROR);
	op_alloc_limit_arenas(2); /* as pgop controller does (docs/internals/memory.md) */
	struct op_http_config cfg = {
		.listen = "127.0.0.1:0",
		.cert_pem = cert,
		.key_pem = key,
		.routes = routes,
		.n_routes = OP_ARRAY_SIZE(routes),
		.threads = threads,
		.connection_limit = 1024,
		.per_ip_limit = 1024, /* every client thread is on 127.0.0.1 */
	};
	struct op_http_server *srv = NULL;
	struct op_err err = OP_ERR_INIT;
	if (op_http_server_start(&cfg, &srv, &err) < 0) {
		fprintf(stderr, "server: %s\n", err.msg);
		return 1;
	}
	uint16_t port = op_http_server_port(srv);
	if (write(fd, &port, sizeof(port)) != sizeof(port))
		return 1;
	close(fd);
	int sig;
	sigwait(&set, &sig);
	op_http_server_free(srv);
	return 0;
}

/* ---- client -------------------------------------------------------------- */

struct scenario {
	const char *name;
	const char *path;
	const char *const *body; /* NULL: GET */
};

static const char *const review_ptr = review_body;

static const struct scenario scenarios[] = {
	{ "baseline GET /healthz", "/healthz", NULL },
	{ "validate (3-instance Cluster)", VALIDATE_PATH, &review_ptr },
	{ "mutate (3-instance Cluster)", MUTATE_PATH, &review_ptr },
	{ "denial (storage.size)", VALIDATE_PATH, (const char *const *)&denial_body },
};
/* The index of validate in scenarios[]: the CPU ratios are to it. */
#define VALIDATE_SCENARIO 1

static const unsigned concurrency[] = { 1, 16, 64 };

struct worker {
	pthread_t tid;
	const struct scenario *sc;
	uint16_t port;
	double seconds;
	const char *cafile;
	uint32_t *lat_us; /* owned */
	size_t n, cap;
	unsigned errors;
	pthread_barrier_t *start;
};

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	size_t *bytes = ud;
	*bytes += sz * n;
	return sz * n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char url[256];
	size_t bytes = 0;
	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", w->port, w->sc->path);
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	/* Verify like the API server does, against our CA only: the default system
	 * bundle would be parsed per handle (~100k certificates' worth of CPU and
	 * memory per client thread) and swamp the measurement. */
	curl_easy_setopt(c, CURLOPT_CAINFO, w->cafile);
	curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &bytes);
	if (w->sc->body) {
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, *w->sc->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(*w->sc->body));
	}
	pthread_barrier_wait(w->start);
	double end = now_s() + w->seconds;
	for (double t0 = now_s(); t0 < end; t0 = now_s()) {
		CURLcode rc = curl_easy_perform(c);
		long code = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		double t1 = now_s();
		if (rc != CURLE_OK || code != 200) {
			w->errors++;
			continue;
		}
		if (w->n == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 4096;
			w->lat_us = op_realloc(w->lat_us, w->cap * sizeof(*w->lat_us));
		}
		w->lat_us[w->n++] = (uint32_t)((t1 - t0) * 1e6);
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

struct run_result {
	double rps, p50_ms, p99_ms;
	size_t n;
	unsigned errors;
};

static struct run_result run(const struct scenario *sc, unsigned conc, uint16_t port,
			     double seconds, const char *cafile)
{
	struct worker *w = op_calloc(conc, sizeof(*w));
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, conc + 1);
	for (unsigned i = 0; i < conc; i++) {
		w[i] = (struct worker){ .sc = sc, .port = port, .seconds = seconds, .cafile = cafile,
					.start = &start };
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0)
			abort();
	}
	pthread_barrier_wait(&start);
	double t0 = now_s();
	size_t total = 0;
	struct run_result res = { 0 };
	unsigned slow = 0;
	for (unsigned i = 0; i < conc; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].n;
		res.errors += w[i].errors;
		for (size_t j = 0; j < w[i].n; j++)
			slow += w[i].lat_us[j] > 1000000;
	}
	double elapsed = now_s() - t0;
	pthread_barrier_destroy(&start);
	uint32_t *all = op_malloc((total ? total : 1) * sizeof(*all));
	size_t k = 0;
	for (unsigned i = 0; i < conc; i++) {
		memcpy(all + k, w[i].lat_us, w[i].n * sizeof(*all));
		k += w[i].n;
		free(w[i].lat_us);
	}
	qsort(all, total, sizeof(*all), cmp_u32);
	res.n = total;
	res.rps = (double)total / elapsed;
	if (total) {
		res.p50_ms = all[total / 2] / 1000.0;
		res.p99_ms = all[(size_t)((double)total * 0.99)] / 1000.0;
	}
	free(all);
	free(w);
	if (slow && getenv("BENCH_VERBOSE"))
		fprintf(stderr, "  %u requests took over 1 s\n", slow);
	return res;
}

/* kB value of "Field:" in /proc/PID/status, or -1. */
static long proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	size_t fl = strlen(field);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			char *end = NULL;
			long x = strtol(line + fl + 1, &end, 10);
			if (end != line + fl + 1)
				v = x;
			break;
		}
	}
	fclose(f);
	return v;
}

/* utime + stime of pid in seconds (from /proc/PID/stat), or -1. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* comm may contain spaces */
	if (!p)
		return -1;
	unsigned long long ut = 0, st = 0;
	/* after ") ": state(3) ... utime is field 14, stime 15 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU µs per review of each path over all its runs, and the ratio to validate
 * (issue 12: mutate and a denial within 1.3x of validate). */
static void print_cpu_summary(const double *cpu, const size_t *n)
{
	double v = n[VALIDATE_SCENARIO] ? cpu[VALIDATE_SCENARIO] * 1e6 / (double)n[VALIDATE_SCENARIO]
					: 0;
	printf("\nserver CPU per request, all concurrencies:\n");
	for (size_t s = 0; s < OP_ARRAY_SIZE(scenarios); s++) {
		if (!n[s])
			continue;
		double us = cpu[s] * 1e6 / (double)n[s];
		char ratio[32] = "";
		if (s != 0 && v > 0)
			snprintf(ratio, sizeof(ratio), "  %.2fx validate", us / v);
		printf("  %-32s %8.1f us%s\n", scenarios[s].name, us, ratio);
		const char *key = strchr(scenarios[s].name, ' ');
		printf("METRIC webhook_cpu_us_%.*s=%.1f\n",
		       (int)(key ? (size_t)(key - scenarios[s].name) : strlen(scenarios[s].name)),
		       scenarios[s].name, us);
	}
}

/* ---- keep-alive spread --------------------------------------------------- */

#define MAX_THREADS 64

struct thread_cpu {
	int tid[MAX_THREADS];
	char comm[MAX_THREADS][32];
	double cpu_s[MAX_THREADS];
	size_t n;
};

/* CPU seconds of every thread of pid (/proc/PID/task/TID/stat). */
static void threads_cpu(pid_t pid, struct thread_cpu *tc)
{
	char path[96];
	tc->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && tc->n < MAX_THREADS) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		char buf[1024];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		unsigned long long ut = 0, st = 0;
		if (!open || !close ||
		    sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			   &st) != 2)
			continue;
		size_t i = tc->n++;
		tc->tid[i] = tid;
		snprintf(tc->comm[i], sizeof(tc->comm[i]), "%.*s", (int)(close - open - 1), open + 1);
		tc->cpu_s[i] = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	}
	closedir(d);
}

/* Few long-lived connections, as kube-apiserver holds to a webhook: 16 client
 * connections (fresh ones per try) on validate, several tries; per try the
 * reviews/s and how the server's CPU split over its threads (a worker holding
 * every connection shows as one thread near 100 %). */
static int run_keepalive_spread(uint16_t port, double seconds, const char *ca, pid_t child)
{
	enum { CONNS = 16, TRIES = 4 };
	int rc = 0;
	printf("\nkeep-alive spread: %d long-lived connections on validate, %d tries, fresh "
	       "connections each; server CPU per thread (threads under 2%% omitted)\n",
	       CONNS, TRIES);
	double max_share_sum = 0;
	for (int t = 0; t < TRIES; t++) {
		struct thread_cpu a, b;
		threads_cpu(child, &a);
		struct run_result r =
			run(&scenarios[VALIDATE_SCENARIO], CONNS, port, seconds, ca);
		threads_cpu(child, &b);
		double total = 0, max = 0;
		double d[MAX_THREADS] = { 0 };
		for (size_t i = 0; i < b.n; i++) {
			for (size_t j = 0; j < a.n; j++)
				if (a.tid[j] == b.tid[i])
					d[i] = b.cpu_s[i] - a.cpu_s[j];
			total += d[i];
		}
		printf("  try %d: %8.0f reviews/s, p99 %6.3f ms, errors %u; split:", t + 1, r.rps,
		       r.p99_ms, r.errors);
		for (size_t i = 0; i < b.n; i++) {
			if (total <= 0 || d[i] / total < 0.02)
				continue;
			printf(" %s/%d %.0f%%", b.comm[i], b.tid[i], 100.0 * d[i] / total);
			if (d[i] > max)
				max = d[i];
		}
		printf("\n");
		max_share_sum += total > 0 ? max / total : 0;
		if (r.errors)
			rc = 1;
		fflush(stdout);
	}
	printf("METRIC webhook_keepalive_max_thread_share=%.2f\n", max_share_sum / TRIES);
	return rc;
}

/* VmRSS (kB) of an idle server once the clients' connections have closed. */
static long rss_settled(pid_t child)
{
	usleep(600 * 1000); /* the server trims once its last connection has gone (sweeper, 200 ms) */
	return proc_status_kb(child, "VmRSS");
}

static double parse_seconds(const char *s)
{
	char *end = NULL;
	double v = s ? strtod(s, &end) : 0;
	return s && end != s && *end == '\0' && v > 0 && v <= 600 ? v : 3.0;
}

int main(int argc, char **argv)
{
	double seconds = parse_seconds(argc > 1 ? argv[1] : NULL);
	unsigned threads = 0;
	if (argc > 2) {
		char *end = NULL;
		unsigned long t = strtoul(argv[2], &end, 10);
		threads = end != argv[2] && *end == '\0' && t > 0 && t <= 64 ? (unsigned)t : 0;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	denial_body = op_strdup(review_body);
	char *size = strstr(denial_body, "\"size\":\"10Gi\"");
	if (!size)
		abort();
	memcpy(size + strlen("\"size\":\"10G"), "x", 1);
	char *cert = NULL, *key = NULL, *ca_pem = NULL;
	if (test_http_cert_make("bench-webhook", &cert, &key, &ca_pem) < 0) {
		fputs("cannot generate a certificate\n", stderr);
		return 1;
	}

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* the child waits for it with sigwait */
	int fds[2];
	if (pipe(fds) < 0)
		return 1;
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(fds[0]);
		int rc = serve(cert, key, threads, fds[1]);
		free(cert);
		free(key);
		free(ca_pem);
		_exit(rc);
	}
	close(fds[1]);
	uint16_t port = 0;
	if (read(fds[0], &port, sizeof(port)) != sizeof(port)) {
		fputs("the server did not start\n", stderr);
		waitpid(child, NULL, 0);
		return 1;
	}
	close(fds[0]);
	curl_global_init(CURL_GLOBAL_ALL);
	char ca[] = "/tmp/bench-webhook-ca-XXXXXX";
	int cafd = mkstemp(ca);
	if (cafd < 0 || write(cafd, ca_pem, strlen(ca_pem)) != (ssize_t)strlen(ca_pem)) {
		fputs("cannot write the CA file\n", stderr);
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
		return 1;
	}
	close(cafd);

	long rss_idle = proc_status_kb(child, "VmRSS");
	printf("bench_webhook: server pid %d on 127.0.0.1:%u, %u server threads, %ld CPUs, "
	       "%.1f s per run, review body %zu bytes\n",
	       (int)child, port, threads ? threads : (unsigned)(cpus > 16 ? 16 : cpus), cpus,
	       seconds, sizeof(review_body) - 1);
	printf("server RSS before clients: %.1f MiB\n\n", (double)rss_idle / 1024.0);
	printf("%-32s %5s %9s %9s %8s %8s %6s %8s %8s\n", "scenario", "conc", "requests", "req/s",
	       "p50 ms", "p99 ms", "errors", "HWM MiB", "srv us/r");

	int rc = 0;
	double base_rps[OP_ARRAY_SIZE(concurrency)] = { 0 };
	double sc_cpu[OP_ARRAY_SIZE(scenarios)] = { 0 };
	size_t sc_n[OP_ARRAY_SIZE(scenarios)] = { 0 };
	const char *only = argc > 3 ? argv[3] : NULL;
	for (size_t s = 0; s < OP_ARRAY_SIZE(scenarios); s++) {
		if (only && !strstr(scenarios[s].name, only))
			continue;
		for (size_t c = 0; c < OP_ARRAY_SIZE(concurrency); c++) {
			double cpu0 = proc_cpu_s(child);
			struct run_result r = run(&scenarios[s], concurrency[c], port, seconds, ca);
			double cpu_s = proc_cpu_s(child) - cpu0;
			double cpu_us = r.n ? cpu_s * 1e6 / (double)r.n : 0;
			sc_cpu[s] += cpu_s;
			sc_n[s] += r.n;
			long hwm = proc_status_kb(child, "VmHWM");
			char ratio[32] = "";
			if (s == 0)
				base_rps[c] = r.rps;
			else if (r.rps > 0 && base_rps[c] > 0)
				snprintf(ratio, sizeof(ratio), "  (%.2fx baseline)", base_rps[c] / r.rps);
			printf("%-32s %5u %9zu %9.0f %8.3f %8.3f %6u %8.1f %8.1f%s\n",
			       scenarios[s].name, concurrency[c], r.n, r.rps, r.p50_ms, r.p99_ms,
			       r.errors, (double)hwm / 1024.0, cpu_us, ratio);
			fflush(stdout);
			if (r.errors)
				rc = 1;
		}
	}
	print_cpu_summary(sc_cpu, sc_n);
	if (!only || strstr("keep-alive", only))
		rc |= run_keepalive_spread(port, seconds, ca, child);
	long rss_after = rss_settled(child);
	long hwm = proc_status_kb(child, "VmHWM");
	long rss = proc_status_kb(child, "VmRSS");
	printf("\nserver memory: VmRSS %.1f MiB now, VmHWM (peak) %.1f MiB; idle was %.1f MiB "
	       "before the clients, %.1f MiB once they had gone\n",
	       (double)rss / 1024.0, (double)hwm / 1024.0, (double)rss_idle / 1024.0,
	       (double)rss_after / 1024.0);
	printf("METRIC webhook_idle_rss_kib=%ld\nMETRIC webhook_idle_after_rss_kib=%ld\n"
	       "METRIC webhook_hwm_kib=%ld\n",
	       rss_idle, rss_after, hwm);
	printf("client process (this one, shares the CPUs): VmHWM %.1f MiB\n",
	       (double)proc_status_kb(getpid(), "VmHWM") / 1024.0);

	kill(child, SIGTERM);
	int status = 0;
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fputs("the server did not stop cleanly\n", stderr);
		rc = 1;
	}
	unlink(ca);
	curl_global_cleanup();
	free(cert);
	free(key);
	free(ca_pem);
	return rc;
}
