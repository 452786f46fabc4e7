/* support/dl_curl.c - libcurl through op_dl (support/dl.h): the table of
 * every curl_* function pgop calls, and their wrappers. The variadic setopt /
 * getinfo functions are forwarded by hand: the type of their one argument
 * follows from the option, as in libcurl itself. */
#include <curl/curl.h>
#include <stdarg.h>

#include "support/dl.h"
#include "support/dl_curl.h"

#define CURL_FNS(F, V, N)                                                                          \
	V(curl_easy_cleanup, (CURL * h), (h))                                                      \
	N(curl_easy_getinfo)                                                                       \
	F(CURL *, curl_easy_init, (void), (), NULL)                                                \
	F(CURLcode, curl_easy_perform, (CURL * h), (h), CURLE_FAILED_INIT)                        \
	V(curl_easy_reset, (CURL * h), (h))                                                        \
	N(curl_easy_setopt)                                                                        \
	F(const char *, curl_easy_strerror, (CURLcode c), (c), "libcurl not loaded")             \
	V(curl_global_cleanup, (void), ())                                                         \
	F(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)                   \
	F(CURLMcode, curl_multi_add_handle, (CURLM * m, CURL * h), (m, h), CURLM_INTERNAL_ERROR)   \
	F(CURLMcode, curl_multi_cleanup, (CURLM * m), (m), CURLM_INTERNAL_ERROR)                  \
	F(CURLMsg *, curl_multi_info_read, (CURLM * m, int *left), (m, left), NULL)                \
	F(CURLM *, curl_multi_init, (void), (), NULL)                                              \
	F(CURLMcode, curl_multi_perform, (CURLM * m, int *running), (m, running),                  \
	  CURLM_INTERNAL_ERROR)                                                                    \
	F(CURLMcode, curl_multi_poll,                                                              \
	  (CURLM * m, struct curl_waitfd extra[], unsigned int n, int ms, int *ret),               \
	  (m, extra, n, ms, ret), CURLM_INTERNAL_ERROR)                                            \
	F(CURLMcode, curl_multi_remove_handle, (CURLM * m, CURL * h), (m, h),                      \
	  CURLM_INTERNAL_ERROR)                                                                    \
	N(curl_multi_setopt)                                                                       \
	F(CURLSHcode, curl_share_cleanup, (CURLSH * s), (s), CURLSHE_INVALID)                      \
	F(CURLSH *, curl_share_init, (void), (), NULL)                                             \
	N(curl_share_setopt)                                                                       \
	F(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s), (l, s),  \
	  NULL)                                                                                    \
	V(curl_slist_free_all, (struct curl_slist * l), (l))                                       \
	F(curl_version_info_data *, curl_version_info, (CURLversion v), (v), NULL)

enum { CURL_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) CURL_FNS_COUNT };
static const char *const names[] = { CURL_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *syms[CURL_FNS_COUNT];

/* libcurl older than 7.84 is not thread-safe in its lazy global init: do it
 * here, once, before any other thread can reach libcurl (called under the
 * load lock, so through syms, not through the wrappers). */
static void after_load(void)
{
	curl_version_info_data *(*version)(CURLversion) = (curl_version_info_data * (*)(CURLversion))
		syms[OP_DL_I_curl_version_info];
	CURLcode (*init)(long) = (CURLcode(*)(long))syms[OP_DL_I_curl_global_init];
	if (!(version(CURLVERSION_NOW)->features & CURL_VERSION_THREADSAFE))
		init(CURL_GLOBAL_ALL);
}

struct op_dl_lib op_dl_curl = OP_DL_LIB_INIT(OP_DL_CURL_SONAME, names, syms, CURL_FNS_COUNT,
					     after_load);

#define OP_DL_SHIM op_dl_curl
CURL_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)

/* One argument of the type CURLOPTTYPE_* says (easy and multi options share
 * the ranges): long, object pointer, function pointer, curl_off_t, blob. */
#define FORWARD_BY_RANGE(call, opt, ap)                                                            \
	((opt) < CURLOPTTYPE_OBJECTPOINT     ? call(va_arg(ap, long))                              \
	 : (opt) < CURLOPTTYPE_FUNCTIONPOINT ? call(va_arg(ap, void *))                            \
	 : (opt) < CURLOPTTYPE_OFF_T         ? call(va_arg(ap, void (*)(void)))                    \
	 : (opt) < CURLOPTTYPE_BLOB          ? call(va_arg(ap, curl_off_t))                        \
					     : call(va_arg(ap, void *)))

CURLcode(curl_easy_setopt)(CURL *h, CURLoption opt, ...)
{
	CURLcode (*fn)(CURL *, CURLoption, ...) =
		(CURLcode(*)(CURL *, CURLoption, ...))op_dl_sym(&op_dl_curl, OP_DL_I_curl_easy_setopt);
	if (!fn)
		return CURLE_FAILED_INIT;
	va_list ap;
	va_start(ap, opt);
#define CALL(v) fn(h, opt, v)
	CURLcode rc = FORWARD_BY_RANGE(CALL, opt, ap);
#undef CALL
	va_end(ap);
	return rc;
}

CURLMcode(curl_multi_setopt)(CURLM *m, CURLMoption opt, ...)
{
	CURLMcode (*fn)(CURLM *, CURLMoption, ...) = (CURLMcode(*)(CURLM *, CURLMoption, ...))
		op_dl_sym(&op_dl_curl, OP_DL_I_curl_multi_setopt);
	if (!fn)
		return CURLM_INTERNAL_ERROR;
	va_list ap;
	va_start(ap, opt);
#define CALL(v) fn(m, opt, v)
	CURLMcode rc = FORWARD_BY_RANGE(CALL, opt, ap);
#undef CALL
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode(curl_easy_getinfo)(CURL *h, CURLINFO info, ...)
{
	CURLcode (*fn)(CURL *, CURLINFO, ...) =
		(CURLcode(*)(CURL *, CURLINFO, ...))op_dl_sym(&op_dl_curl, OP_DL_I_curl_easy_getinfo);
	if (!fn)
		return CURLE_FAILED_INIT;
	va_list ap;
	va_start(ap, info);
	void *p = va_arg(ap, void *);
	va_end(ap);
	return fn(h, info, p);
}

CURLSHcode(curl_share_setopt)(CURLSH *s, CURLSHoption opt, ...)
{
	CURLSHcode (*fn)(CURLSH *, CURLSHoption, ...) = (CURLSHcode(*)(CURLSH *, CURLSHoption, ...))
		op_dl_sym(&op_dl_curl, OP_DL_I_curl_share_setopt);
	if (!fn)
		return CURLSHE_INVALID;
	va_list ap;
	va_start(ap, opt);
	CURLSHcode rc;
	switch (opt) {
	case CURLSHOPT_SHARE:
	case CURLSHOPT_UNSHARE:
		rc = fn(s, opt, va_arg(ap, int)); /* a curl_lock_data, promoted */
		break;
	case CURLSHOPT_LOCKFUNC:
		rc = fn(s, opt, va_arg(ap, curl_lock_function));
		break;
	case CURLSHOPT_UNLOCKFUNC:
		rc = fn(s, opt, va_arg(ap, curl_unlock_function));
		break;
	case CURLSHOPT_USERDATA:
		rc = fn(s, opt, va_arg(ap, void *));
		break;
	default:
		rc = CURLSHE_BAD_OPTION;
		break;
	}
	va_end(ap);
	return rc;
}
