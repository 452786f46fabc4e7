/* tests/unit/test_support_dl.c - op_dl (support/dl.h): libcurl, libpq, expat
 * and the compression libraries are not mapped until first used, every name
 * of every table resolves against the real library, a missing library or
 * symbol is an error naming it, and a wrapper whose library cannot be loaded
 * returns its failure value instead of jumping through NULL. */
#include <bzlib.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>
#include <libdeflate.h>
#include <lz4frame.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "backup/internal.h"
#include "instance/internal.h"
#include "objstore/internal.h"
#include "support/dl.h"
#include "support/dl_curl.h"

#include <cmocka.h>

static bool mapped(const char *soname)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h); /* drops only the reference RTLD_NOLOAD took */
	return h != NULL;
}

static void assert_table_complete(struct op_dl_lib *lib)
{
	assert_true(lib->count > 0);
	for (size_t i = 0; i < lib->count; i++) {
		assert_non_null(lib->names[i]);
		assert_non_null(lib->syms[i]);
		/* the slot is the library's own function, not the executable's wrapper */
		void *h = dlopen(lib->soname, RTLD_NOW | RTLD_NOLOAD);
		assert_non_null(h);
		assert_ptr_equal(lib->syms[i], dlsym(h, lib->names[i]));
		dlclose(h);
	}
}

/* Every shim's table but libcurl's and libpq's (tested by name below). */
static struct op_dl_lib *const later_libs[] = { &os_dl_expat, &bk_dl_zlib, &bk_dl_deflate,
						&bk_dl_bz2,   &bk_dl_lzma, &bk_dl_lz4,
						&bk_dl_zstd };
#define N_LATER (sizeof(later_libs) / sizeof(later_libs[0]))

/* Runs first: nothing in this process has used any of the libraries yet. */
static void test_not_mapped_until_loaded(void **state)
{
	assert_false(mapped(OP_DL_CURL_SONAME));
	assert_false(mapped(INST_DL_PQ_SONAME));
	for (size_t i = 0; i < N_LATER; i++) {
		assert_false(mapped(later_libs[i]->soname));
		assert_false(op_dl_loaded(later_libs[i]));
	}
	assert_false(op_dl_loaded(&op_dl_curl));
	assert_false(op_dl_loaded(&inst_dl_pq));

	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(&op_dl_curl, &err), 0);
	assert_false(op_err_isset(&err));
	assert_true(op_dl_loaded(&op_dl_curl));
	assert_true(mapped(OP_DL_CURL_SONAME));
	assert_false(mapped(INST_DL_PQ_SONAME));

	assert_int_equal(op_dl_load(&inst_dl_pq, &err), 0);
	assert_true(op_dl_loaded(&inst_dl_pq));
	assert_true(mapped(INST_DL_PQ_SONAME));
}

static void test_tables_complete(void **state)
{
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(&op_dl_curl, &err), 0);
	assert_int_equal(op_dl_load(&inst_dl_pq, &err), 0);
	assert_table_complete(&op_dl_curl);
	assert_table_complete(&inst_dl_pq);
	assert_true(inst_pq_pipeline()); /* libpq 14+ here: its optional names resolved */
}

/* objstore's and backup's shims resolve against the real libraries (libcurl
 * loaded above maps libz and libzstd itself: no "only its own" check here);
 * bk_codec_lib names the one each compression needs. */
static void test_later_tables_complete(void **state)
{
	for (size_t i = 0; i < N_LATER; i++) {
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(op_dl_load(later_libs[i], &err), 0);
		assert_false(op_err_isset(&err));
		assert_true(mapped(later_libs[i]->soname));
		assert_table_complete(later_libs[i]);
	}
	assert_string_equal(os_dl_expat.soname, "libexpat.so.1");
	assert_null(bk_codec_lib(BK_COMP_NONE, false, false));
	assert_null(bk_codec_lib(BK_COMP_SNAPPY, true, false));
	assert_ptr_equal(bk_codec_lib(BK_COMP_GZIP, true, false), &bk_dl_zlib);
	assert_ptr_equal(bk_codec_lib(BK_COMP_GZIP, false, true), &bk_dl_zlib);
	assert_ptr_equal(bk_codec_lib(BK_COMP_GZIP, false, false), &bk_dl_deflate);
	for (int use = 0; use < 3; use++) { /* decoder, tar encoder, WAL encoder */
		assert_ptr_equal(bk_codec_lib(BK_COMP_BZIP2, use == 0, use == 1), &bk_dl_bz2);
		assert_ptr_equal(bk_codec_lib(BK_COMP_XZ, use == 0, use == 1), &bk_dl_lzma);
		assert_ptr_equal(bk_codec_lib(BK_COMP_LZ4, use == 0, use == 1), &bk_dl_lz4);
		assert_ptr_equal(bk_codec_lib(BK_COMP_ZSTD, use == 0, use == 1), &bk_dl_zstd);
	}
	/* the wrappers reach the real functions */
	assert_string_equal(XML_ErrorString(XML_ERROR_SYNTAX), "syntax error");
	assert_string_equal(ZSTD_getErrorName(0), "No error detected");
	assert_int_equal(ZSTD_isError(0), 0);
	assert_int_equal(LZ4F_isError(0), 0);
	struct libdeflate_compressor *ld = libdeflate_alloc_compressor(1);
	assert_non_null(ld);
	assert_true(libdeflate_gzip_compress_bound(ld, 1024) > 1024);
	libdeflate_free_compressor(ld);
}

static int sink_count(void *ud, const void *buf, size_t len)
{
	(void)buf;
	*(size_t *)ud += len;
	return 0;
}

/* Whitebox: points a shim at an absent library and forgets its load, so the
 * next use fails as on a machine without it; restore() undoes both. */
static const char *make_absent(struct op_dl_lib *lib)
{
	const char *real = lib->soname;
	lib->soname = "libpgop-absent.so.0";
	__atomic_store_n(&lib->state, 0, __ATOMIC_RELEASE);
	return real;
}

static void restore(struct op_dl_lib *lib, const char *real)
{
	lib->soname = real;
	__atomic_store_n(&lib->state, 0, __ATOMIC_RELEASE);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(lib, &err), 0);
}

/* Without its library: bk_codec_new fails naming the compression and the
 * library (none still works), os_xml_walk fails naming expat, and the real
 * shims' wrappers return values their callers take for errors. */
static void test_later_libs_absent(void **state)
{
	unsigned char buf[64];
	const char *real[N_LATER];
	for (size_t i = 0; i < N_LATER; i++)
		real[i] = make_absent(later_libs[i]);

	static const struct {
		enum bk_compression comp;
		const char *name;
	} comps[] = { { BK_COMP_GZIP, "gzip" }, { BK_COMP_BZIP2, "bzip2" }, { BK_COMP_XZ, "xz" },
		      { BK_COMP_LZ4, "lz4" },   { BK_COMP_ZSTD, "zstd" } };
	size_t n = 0;
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		for (int dec = 0; dec < 2; dec++) {
			struct bk_codec *c = NULL;
			struct op_err err = OP_ERR_INIT;
			assert_int_equal(bk_codec_new(comps[i].comp, dec, 1024, sink_count, &n, &c,
						      &err),
					 -ENOENT);
			assert_null(c);
			assert_true(strncmp(err.msg, comps[i].name, strlen(comps[i].name)) == 0);
			assert_non_null(strstr(err.msg, "cannot load libpgop-absent.so.0"));
		}
	}
	struct bk_codec *c = NULL;
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(bk_codec_new(BK_COMP_NONE, false, 1024, sink_count, &n, &c, &err), 0);
	assert_int_equal(bk_codec_write(c, "abc", 3, &err), 0);
	assert_int_equal(bk_codec_finish(c, &err), 0);
	bk_codec_free(c);
	assert_int_equal(n, 3);

	static const struct os_xml_cb no_cb = { 0 };
	assert_int_equal(os_xml_walk("<a/>", 4, &no_cb, NULL, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot load libpgop-absent.so.0"));

	/* the failure values */
	assert_null(XML_ParserCreate("UTF-8"));
	assert_int_equal(XML_Parse(NULL, "", 0, XML_TRUE), XML_STATUS_ERROR);
	assert_string_equal(XML_ErrorString(XML_ERROR_SYNTAX), "libexpat not loaded");
	z_stream z;
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_MEM_ERROR);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
			 Z_MEM_ERROR);
	assert_int_equal(inflate(&z, Z_NO_FLUSH), Z_STREAM_ERROR);
	assert_null(libdeflate_alloc_compressor(1));
	assert_int_equal(libdeflate_gzip_compress_bound(NULL, 1024), 0);
	assert_int_equal(libdeflate_gzip_compress(NULL, "abc", 3, buf, sizeof(buf)), 0);
	libdeflate_free_compressor(NULL); /* a no-op, not a jump through NULL */
	bz_stream bz;
	memset(&bz, 0, sizeof(bz));
	assert_int_equal(BZ2_bzCompressInit(&bz, 5, 0, 0), BZ_MEM_ERROR);
	assert_int_equal(BZ2_bzDecompressInit(&bz, 0, 0), BZ_MEM_ERROR);
	assert_true(BZ2_bzDecompress(&bz) < 0);
	lzma_stream xz = LZMA_STREAM_INIT;
	assert_int_equal(lzma_easy_encoder(&xz, 3, LZMA_CHECK_CRC64), LZMA_MEM_ERROR);
	assert_int_equal(lzma_stream_decoder(&xz, UINT64_MAX, 0), LZMA_MEM_ERROR);
	assert_int_equal(lzma_code(&xz, LZMA_RUN), LZMA_PROG_ERROR);
	lzma_end(&xz);
	LZ4F_cctx *cc = NULL;
	assert_true(LZ4F_isError(LZ4F_createCompressionContext(&cc, LZ4F_VERSION)));
	assert_null(cc);
	assert_true(LZ4F_isError(0)); /* an error whatever the code */
	assert_string_equal(LZ4F_getErrorName(0), "liblz4 not loaded");
	assert_int_equal(LZ4F_compressBound(1024, NULL), 0);
	assert_null(ZSTD_createCCtx());
	assert_null(ZSTD_createDCtx());
	assert_true(ZSTD_isError(0));
	assert_true(ZSTD_isError(ZSTD_freeCCtx(NULL)));
	assert_string_equal(ZSTD_getErrorName(0), "libzstd not loaded");

	for (size_t i = 0; i < N_LATER; i++)
		restore(later_libs[i], real[i]);
	/* and with them back, a codec works again */
	n = 0;
	assert_int_equal(bk_codec_new(BK_COMP_ZSTD, false, 1024, sink_count, &n, &c, &err), 0);
	assert_int_equal(bk_codec_write(c, "abc", 3, &err), 0);
	assert_int_equal(bk_codec_finish(c, &err), 0);
	bk_codec_free(c);
	assert_true(n > 0);
}

/* The wrappers reach the real functions, variadic ones included. */
static void test_wrappers_forward(void **state)
{
	assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
	struct curl_slist *l = curl_slist_append(NULL, "a: b");
	assert_non_null(l);
	assert_string_equal(l->data, "a: b");
	curl_slist_free_all(l);

	CURL *h = curl_easy_init();
	assert_non_null(h);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L), CURLE_OK);   /* long */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:1/x"), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_PRIVATE, (void *)h), CURLE_OK);   /* pointer */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)1 << 40),
			 CURLE_OK); /* curl_off_t */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_NOSIGNAL, -1L), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, (CURLoption)(CURLOPTTYPE_LONG + 9999), 1L),
			 CURLE_UNKNOWN_OPTION); /* the library's own answer */
	void *priv = NULL;
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&priv), CURLE_OK);
	assert_ptr_equal(priv, h);
	curl_easy_cleanup(h);

	CURLM *m = curl_multi_init();
	assert_non_null(m);
	assert_int_equal(curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 8L), CURLM_OK);
	assert_int_equal(curl_multi_setopt(m, (CURLMoption)(CURLOPTTYPE_LONG + 9999), 1L),
			 CURLM_UNKNOWN_OPTION);
	assert_int_equal(curl_multi_cleanup(m), CURLM_OK);

	CURLSH *s = curl_share_init();
	assert_non_null(s);
	assert_int_equal(curl_share_setopt(s, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS), CURLSHE_OK);
	assert_int_equal(curl_share_setopt(s, CURLSHOPT_USERDATA, (void *)s), CURLSHE_OK);
	assert_int_equal(curl_share_setopt(s, (CURLSHoption)99, 0L), CURLSHE_BAD_OPTION);
	assert_int_equal(curl_share_cleanup(s), CURLSHE_OK);

	/* libpq without a server: a connection object in a failed state, not NULL */
	assert_int_equal(PQping("host=/nonexistent-pgop-dir port=1 connect_timeout=1"),
			 PQPING_NO_RESPONSE);
}

static void test_missing_library_named(void **state)
{
	static const char *const names[] = { "curl_easy_init" };
	static void *syms[1];
	struct op_dl_lib lib =
		OP_DL_LIB_INIT("libpgop-no-such-library.so.9", names, syms, 1, NULL);
	for (int round = 0; round < 2; round++) { /* remembered, reported again */
		struct op_err err = OP_ERR_INIT;
		assert_int_equal(op_dl_load(&lib, &err), -ENOENT);
		assert_int_equal(err.code, -ENOENT);
		assert_non_null(strstr(err.msg, "cannot load libpgop-no-such-library.so.9"));
		assert_false(op_dl_loaded(&lib));
		assert_null(op_dl_sym(&lib, 0));
	}
}

static void test_missing_symbol_named(void **state)
{
	static const char *const names[] = { "curl_easy_init", "pgop_no_such_symbol" };
	static void *syms[2];
	struct op_dl_lib lib = OP_DL_LIB_INIT(OP_DL_CURL_SONAME, names, syms, 2, NULL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(&lib, &err), -ENOSYS);
	assert_non_null(strstr(err.msg, OP_DL_CURL_SONAME));
	assert_non_null(strstr(err.msg, "pgop_no_such_symbol"));
	assert_null(syms[0]); /* no half-filled table */
	assert_null(op_dl_sym(&lib, 0));
}

/* Optional names (a library older than them): the others load, the missing
 * one is NULL and op_dl_has says so. */
static void test_optional_symbol(void **state)
{
	static const char *const names[] = { "curl_easy_init", "pgop_no_such_symbol" };
	static void *syms[2];
	struct op_dl_lib lib = OP_DL_LIB_INIT_OPT(OP_DL_CURL_SONAME, names, syms, 2, 1, NULL);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(&lib, &err), 0);
	assert_non_null(syms[0]);
	assert_null(syms[1]);
	assert_true(op_dl_has(&lib, 0));
	assert_false(op_dl_has(&lib, 1));
	assert_null(op_dl_sym(&lib, 1));
}

/* A shim generated by the same macros over a library that is not there: the
 * wrappers return their failure values. */
int pgop_test_answer(int x);
void pgop_test_touch(int *p);
#define TEST_FNS(F, V, N)                                                                          \
	F(int, pgop_test_answer, (int x), (x), -42)                                                \
	V(pgop_test_touch, (int *p), (p))
enum { TEST_FNS(OP_DL_ENUM_F, OP_DL_ENUM_V, OP_DL_ENUM_N) TEST_FNS_COUNT };
static const char *const test_names[] = { TEST_FNS(OP_DL_NAME_F, OP_DL_NAME_V, OP_DL_NAME_N) };
static void *test_syms[TEST_FNS_COUNT];
static struct op_dl_lib test_lib =
	OP_DL_LIB_INIT("libpgop-test-absent.so.1", test_names, test_syms, TEST_FNS_COUNT, NULL);
#define OP_DL_SHIM test_lib
TEST_FNS(OP_DL_WRAP_F, OP_DL_WRAP_V, OP_DL_WRAP_N)
#undef OP_DL_SHIM

static void test_wrapper_without_library(void **state)
{
	assert_int_equal(pgop_test_answer(1), -42);
	int v = 7;
	pgop_test_touch(&v);
	assert_int_equal(v, 7);
	struct op_err err = OP_ERR_INIT;
	assert_int_equal(op_dl_load(&test_lib, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "libpgop-test-absent.so.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_mapped_until_loaded),
		cmocka_unit_test(test_tables_complete),
		cmocka_unit_test(test_later_tables_complete),
		cmocka_unit_test(test_later_libs_absent),
		cmocka_unit_test(test_wrappers_forward),
		cmocka_unit_test(test_missing_library_named),
		cmocka_unit_test(test_missing_symbol_named),
		cmocka_unit_test(test_wrapper_without_library),
		cmocka_unit_test(test_optional_symbol),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
