/* instance/fetch.c - `pgop instance status`: GET the local /pg/status.
 * The peer is this pod's own status server, reached on loopback, so the
 * certificate is not verified (the operator verifies against the CA); the
 * server wants the operator's client certificate (--cert/--key). */
#include <curl/curl.h>
#include <errno.h>

#include "instance/instance.h"
#include "support/dl_curl.h"

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
	struct op_buf *b = ud;
	return op_buf_add(b, p, size * n) ? 0 : size * n;
}

int inst_status_fetch(const char *url, const char *cert, const char *key, struct op_buf *out,
		      struct op_err *err)
{
	int r = op_dl_load(&op_dl_curl, err);
	if (r < 0)
		return r;
	CURL *h = curl_easy_init();
	if (!h)
		return op_err_set(err, -ENOMEM, "curl: cannot create a handle");
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	if (cert)
		curl_easy_setopt(h, CURLOPT_SSLCERT, cert);
	if (key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, key);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK)
		return op_err_set(err, -ECONNREFUSED, "GET %s: %s", url,
				  ebuf[0] ? ebuf : curl_easy_strerror(rc));
	if (code != 200)
		return op_err_set(err, -EIO, "GET %s: HTTP %ld: %s", url, code, op_buf_str(out));
	return 0;
}
