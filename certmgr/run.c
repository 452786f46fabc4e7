/* certmgr/run.c - running the certificate manager in a server process
 * (see certmgr.h, "run"): watches, Lease, manager thread, hot swap, readiness.
 *
 * Threads: two informer threads (serving Secret, validating webhook
 * configuration) update `served`/`bundle` under `lock` and swap the server's
 * certificate; the Lease thread flips leadership; the manager thread runs
 * cm_sync() on the leader every check interval, or sooner when kicked
 * (leadership gained, a watched object changed, a settle delay asked for).
 * /readyz runs ready() on the server's threads, reading under `lock`.
 */
#include "certmgr/certmgr.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "kube/leader.h"
#include "kube/watch.h"
#include "pki/pki.h"
#include "support/alloc.h"
#include "support/base64.h"
#include "support/json.h"
#include "support/log.h"

#define CHECK_DEFAULT_S 60u

struct cm_run {
	struct cm_run_opts o;
	char *ns, *lease, *identity, *field_tls, *field_vwc;
	struct cm_whc whcs[3];
	size_t n_whcs;
	int64_t ca_life, leaf_life;
	double fraction;
	struct pki_pair boot; /* throwaway certificate the server starts with */

	struct kube_client *c;
	struct op_http_server *srv; /* borrowed */
	struct kube_informer *tls_inf, *vwc_inf;
	struct kube_leader *le;
	struct cm *cm;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *served;   /* PEM served now (owned), NULL = the throwaway one */
	char *bundle;   /* validating configuration's caBundle (owned), NULL = unknown */
	bool kicked, stop, thread_started;
	pthread_t thread;
};

bool cm_run_self(const struct cm_run_opts *o)
{
	return o->tls_secret != NULL;
}

static void kick(struct cm_run *cc)
{
	pthread_mutex_lock(&cc->lock);
	cc->kicked = true;
	pthread_cond_signal(&cc->cond);
	pthread_mutex_unlock(&cc->lock);
}

/* ------------------------------------------------------------- readiness */

static bool ready(void *userdata)
{
	struct cm_run *cc = userdata;
	pthread_mutex_lock(&cc->lock);
	_cleanup_free_ char *served = cc->served ? op_strdup(cc->served) : NULL;
	_cleanup_free_ char *bundle = cc->bundle ? op_strdup(cc->bundle) : NULL;
	pthread_mutex_unlock(&cc->lock);
	if (!served)
		return false;
	if (!cc->o.validating) /* nothing to check against: serving the real one is enough */
		return true;
	return bundle && pki_verify(served, bundle, (int64_t)time(NULL), PKI_USAGE_SERVER, NULL) == 0;
}

/* ------------------------------------------------------------- hot swap */

static void tls_changed(struct cm_run *cc, json_object *secret)
{
	struct pki_secret_data d = { 0 };
	struct op_err err = OP_ERR_INIT;
	if (pki_secret_parse(PKI_SECRET_TLS, secret, &d, &err) < 0) {
		op_log_warn("serving Secret unusable, keeping the current certificate", "secret",
			    cc->o.tls_secret, "error", err.msg);
		return;
	}
	pthread_mutex_lock(&cc->lock);
	bool same = cc->served && strcmp(cc->served, d.crt) == 0;
	pthread_mutex_unlock(&cc->lock);
	if (!same) {
		if (op_http_server_set_cert(cc->srv, d.crt, d.key, &err) < 0) {
			op_log_warn("cannot serve the certificate from the Secret", "secret",
				    cc->o.tls_secret, "error", err.msg);
		} else {
			struct pki_cert_info info;
			char nb[24] = "", na[24] = "";
			if (pki_cert_info_parse(d.crt, "tls.crt", &info, NULL) == 0) {
				snprintf(nb, sizeof(nb), "%lld", (long long)info.not_before);
				snprintf(na, sizeof(na), "%lld", (long long)info.not_after);
				pki_cert_info_done(&info);
			}
			op_log_info("serving the certificate from the Secret", "secret",
				    cc->o.tls_secret, "not_before", nb, "not_after", na);
			pthread_mutex_lock(&cc->lock);
			free(cc->served);
			cc->served = TAKE_PTR(d.crt);
			pthread_mutex_unlock(&cc->lock);
		}
	}
	pki_secret_data_done(&d);
}

static void tls_add(void *ud, json_object *obj)
{
	tls_changed(ud, obj);
}

static void tls_update(void *ud, json_object *old_obj, json_object *new_obj)
{
	tls_changed(ud, new_obj);
}

static void tls_delete(void *ud, json_object *obj)
{
	struct cm_run *cc = ud;
	op_log_info("serving Secret deleted: keeping the current certificate", "secret",
		    cc->o.tls_secret);
	kick(cc);
}

static void vwc_changed(struct cm_run *cc, json_object *whc)
{
	char *pem = NULL;
	struct op_err err = OP_ERR_INIT;
	if (cm_whc_bundle(whc, &pem, &err) < 0) {
		op_log_warn("validating webhook caBundle unusable", "config", cc->o.validating,
			    "error", err.msg);
		pem = op_strdup("");
	}
	pthread_mutex_lock(&cc->lock);
	free(cc->bundle);
	cc->bundle = pem;
	pthread_mutex_unlock(&cc->lock);
	kick(cc);
}

static void vwc_add(void *ud, json_object *obj)
{
	vwc_changed(ud, obj);
}

static void vwc_update(void *ud, json_object *old_obj, json_object *new_obj)
{
	vwc_changed(ud, new_obj);
}

static void vwc_delete(void *ud, json_object *obj)
{
	struct cm_run *cc = ud;
	pthread_mutex_lock(&cc->lock);
	free(cc->bundle);
	cc->bundle = NULL;
	pthread_mutex_unlock(&cc->lock);
}

/* ------------------------------------------------------- manager thread */

static void leading(void *ud)
{
	struct cm_run *cc = ud;
	op_log_info("certificate manager: leading", "lease", cc->lease, "identity", cc->identity);
	kick(cc);
}

static void not_leading(void *ud)
{
	struct cm_run *cc = ud;
	op_log_info("certificate manager: not leading", "lease", cc->lease);
}

static void *manager_main(void *arg)
{
	struct cm_run *cc = arg;
	unsigned check = cc->o.check_s ? cc->o.check_s : CHECK_DEFAULT_S;
	unsigned wait_s = 0;
	for (;;) {
		pthread_mutex_lock(&cc->lock);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_s;
		while (!cc->stop && !cc->kicked && wait_s) {
			if (pthread_cond_timedwait(&cc->cond, &cc->lock, &until) == ETIMEDOUT)
				break;
		}
		bool stop = cc->stop;
		cc->kicked = false;
		pthread_mutex_unlock(&cc->lock);
		if (stop)
			break;
		wait_s = check;
		if (!kube_leader_is_leader(cc->le))
			continue;
		unsigned next = 0;
		struct op_err err = OP_ERR_INIT;
		int r = cm_sync(cc->cm, (int64_t)time(NULL), &next, &err);
		if (r < 0) {
			op_log_warn("certificate manager: round failed, retrying", "error", err.msg);
			wait_s = check < 5 ? check : 5;
		} else if (next) {
			wait_s = next;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static int parse_opts(struct cm_run *cc, struct op_err *err)
{
	const struct cm_run_opts *o = &cc->o;
	if (!o->service)
		return op_err_set(err, -EINVAL, "--tls-secret needs --service");
	const char *ns = o->ns ? o->ns : getenv("POD_NAMESPACE");
	if (ns && *ns)
		cc->ns = op_strdup(ns);
	cc->ca_life = cc->leaf_life = 90LL * PKI_DAY_S;
	cc->fraction = PKI_RENEW_FRACTION_DEFAULT;
	int r = 0;
	if (o->ca_lifetime)
		r = cm_parse_duration(o->ca_lifetime, &cc->ca_life, err);
	if (r >= 0 && o->cert_lifetime)
		r = cm_parse_duration(o->cert_lifetime, &cc->leaf_life, err);
	if (r >= 0 && o->renew_fraction)
		r = cm_parse_fraction(o->renew_fraction, &cc->fraction, err);
	if (r < 0)
		return r;
	if (cc->ca_life < CM_MIN_LIFETIME_S || cc->leaf_life < CM_MIN_LIFETIME_S)
		return op_err_set(err, -EINVAL,
				  "--ca-lifetime and --cert-lifetime must be at least %d s "
				  "(certificates are back-dated %d s)",
				  CM_MIN_LIFETIME_S, PKI_BACKDATE_S);
	if (o->mutating)
		cc->whcs[cc->n_whcs++] = (struct cm_whc){ CM_MUTATING, o->mutating };
	if (o->validating)
		cc->whcs[cc->n_whcs++] = (struct cm_whc){ CM_VALIDATING, o->validating };
	const char *svc = o->apiservice ? o->apiservice : "";
	if (*svc)
		cc->whcs[cc->n_whcs++] = (struct cm_whc){ CM_APISERVICE, svc };
	cc->lease = o->lease ? op_strdup(o->lease) : op_asprintf("%s-certs", o->tls_secret);
	const char *pod = getenv("POD_NAME");
	char host[256] = "";
	if (pod && *pod) {
		cc->identity = op_strdup(pod);
	} else {
		gethostname(host, sizeof(host) - 1);
		cc->identity = op_asprintf("%s-%ld", host, (long)getpid());
	}
	cc->field_tls = op_asprintf("metadata.name=%s", o->tls_secret);
	if (o->validating)
		cc->field_vwc = op_asprintf("metadata.name=%s", o->validating);
	return 0;
}

static int boot_cert(struct cm_run *cc, struct op_err *err)
{
	struct pki_pair ca = { 0 };
	int64_t now = (int64_t)time(NULL);
	struct pki_ca_req creq = { .cn = "pgop-bootstrap-untrusted", .now = now,
				   .lifetime_s = PKI_DAY_S };
	int r = pki_ca_create(&creq, &ca, err);
	if (r < 0)
		return r;
	const char *sans[] = { cc->o.service };
	struct pki_leaf_req lreq = { .cn = cc->o.service, .sans = sans, .n_sans = 1,
				     .usage = PKI_USAGE_SERVER, .now = now,
				     .lifetime_s = PKI_DAY_S };
	r = pki_leaf_issue(&ca, &lreq, &cc->boot, err);
	pki_pair_done(&ca);
	return r;
}

int cm_run_prepare(const struct cm_run_opts *o, const char *kubeconfig,
			     struct op_http_config *cfg, struct cm_run **ret,
			     struct op_err *err)
{
	struct cm_run *cc = op_calloc(1, sizeof(*cc));
	cc->o = *o;
	pthread_mutex_init(&cc->lock, NULL);
	pthread_cond_init(&cc->cond, NULL);
	struct kube_config *kc = NULL;
	int r = parse_opts(cc, err);
	if (r >= 0)
		r = kube_config_load(kubeconfig, &kc, err);
	if (r == -ENOENT)
		op_err_prefix(err, "--tls-secret needs cluster access");
	if (r >= 0)
		r = kube_client_new(kc, NULL, &cc->c, err); /* takes kc */
	if (r >= 0 && !cc->ns)
		cc->ns = op_strdup(kube_client_namespace(cc->c));
	if (r >= 0)
		r = boot_cert(cc, err);
	if (r >= 0) {
		struct cm_config mc = {
			.ns = cc->ns, .ca_secret = o->ca_secret ? o->ca_secret : o->tls_secret,
			.tls_secret = o->tls_secret, .service = o->service, .whcs = cc->whcs,
			.n_whcs = cc->n_whcs, .ca_lifetime_s = cc->ca_life,
			.leaf_lifetime_s = cc->leaf_life, .renew_fraction = cc->fraction,
			.settle_s = o->settle_s,
		};
		if (!o->ca_secret)
			r = op_err_set(err, -EINVAL, "--tls-secret needs --ca-secret");
		else
			r = cm_new(cc->c, &mc, &cc->cm, err);
	}
	if (r < 0) {
		cm_run_free(cc);
		return r;
	}
	cfg->cert_pem = cc->boot.cert_pem;
	cfg->key_pem = cc->boot.key_pem;
	cfg->cert_file = cfg->key_file = NULL;
	cfg->ready_fn = ready;
	cfg->ready_userdata = cc;
	*ret = cc;
	return 0;
}

int cm_run_start(struct cm_run *cc, struct op_http_server *srv,
			   struct op_err *err)
{
	cc->srv = srv;
	const struct kube_informer_handlers th = { .on_add = tls_add, .on_update = tls_update,
						   .on_delete = tls_delete, .userdata = cc };
	const struct kube_informer_opts to = { .ns = cc->ns, .field_selector = cc->field_tls };
	int r = kube_informer_new(cc->c, KUBE_SECRETS, &to, &th, &cc->tls_inf, err);
	if (r >= 0)
		r = kube_informer_start(cc->tls_inf, err);
	if (r >= 0 && cc->field_vwc) {
		const struct kube_informer_handlers vh = { .on_add = vwc_add,
							   .on_update = vwc_update,
							   .on_delete = vwc_delete,
							   .userdata = cc };
		const struct kube_informer_opts vo = { .field_selector = cc->field_vwc };
		r = kube_informer_new(cc->c, KUBE_VALIDATINGWEBHOOKCONFIGURATIONS, &vo, &vh,
				      &cc->vwc_inf, err);
		if (r >= 0)
			r = kube_informer_start(cc->vwc_inf, err);
	}
	const struct kube_leader_opts lo = {
		.ns = cc->ns, .name = cc->lease, .identity = cc->identity,
		.release_on_stop = true, .on_started_leading = leading,
		.on_stopped_leading = not_leading, .userdata = cc,
	};
	if (r >= 0)
		r = kube_leader_new(cc->c, &lo, &cc->le, err);
	if (r >= 0)
		r = kube_leader_start(cc->le, err);
	if (r >= 0) {
		int e = pthread_create(&cc->thread, NULL, manager_main, cc);
		if (e)
			r = op_err_set(err, -e, "cannot start the certificate manager thread");
		else
			cc->thread_started = true;
	}
	if (r < 0)
		return r;
	op_log_info("self-managed certificates", "namespace", cc->ns, "tls_secret",
		    cc->o.tls_secret, "ca_secret", cc->o.ca_secret, "lease", cc->lease,
		    "identity", cc->identity);
	return 0;
}

void cm_run_free(struct cm_run *cc)
{
	if (!cc)
		return;
	if (cc->thread_started) {
		pthread_mutex_lock(&cc->lock);
		cc->stop = true;
		pthread_cond_signal(&cc->cond);
		pthread_mutex_unlock(&cc->lock);
		pthread_join(cc->thread, NULL);
	}
	if (cc->le) {
		kube_leader_stop(cc->le);
		kube_leader_free(cc->le);
	}
	kube_informer_free(cc->tls_inf);
	kube_informer_free(cc->vwc_inf);
	cm_free(cc->cm);
	kube_client_free(cc->c);
	pki_pair_done(&cc->boot);
	free(cc->served);
	free(cc->bundle);
	free(cc->ns);
	free(cc->lease);
	free(cc->identity);
	free(cc->field_tls);
	free(cc->field_vwc);
	pthread_mutex_destroy(&cc->lock);
	pthread_cond_destroy(&cc->cond);
	free(cc);
}
