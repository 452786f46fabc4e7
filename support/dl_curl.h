/* support/dl_curl.h - libcurl, loaded on first use (support/dl.h).
 *
 * Callers include <curl/curl.h> and call curl_* as usual; the functions are
 * support/dl_curl.c's wrappers. Code that makes a client calls
 * op_dl_load(&op_dl_curl, err) first so a missing library is its error.
 */
#ifndef PGOP_SUPPORT_DL_CURL_H
#define PGOP_SUPPORT_DL_CURL_H

#include "support/dl.h"

/* The runtime library of libcurl4-gnutls-dev (the headers built against). */
#define OP_DL_CURL_SONAME "libcurl-gnutls.so.4"

extern struct op_dl_lib op_dl_curl;

#endif
