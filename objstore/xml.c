/* objstore/xml.c - S3's XML responses read with expat: a streaming parser
 * (no tree), so memory is the body (capped by the caller) plus one leaf text
 * (OS_XML_TEXT_MAX) and a fixed element stack. No DTD is accepted: a DOCTYPE
 * stops the parse, so entity expansion (billion laughs, external entities)
 * cannot happen. Pure: no I/O. */
#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/internal.h"
#include "support/alloc.h"

struct walk {
	XML_Parser p;
	const struct os_xml_cb *cb;
	unsigned depth;
	char names[OS_XML_DEPTH_MAX + 1][OS_XML_NAME_MAX]; /* names[d]: element at depth d */
	bool leaf;          /* the innermost open element has no child so far */
	bool text_over;     /* its text passed OS_XML_TEXT_MAX */
	struct op_buf text; /* its text */
	int rc;             /* first failure (callbacks' or caps') */
	char why[160];
};

static void walk_fail(struct walk *w, int rc, const char *why)
{
	if (w->rc == 0) {
		w->rc = rc;
		snprintf(w->why, sizeof(w->why), "%s", why);
	}
	XML_StopParser(w->p, XML_FALSE);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct walk *w = ud;
	if (w->rc)
		return;
	const char *colon = strrchr(name, ':');
	const char *local = colon ? colon + 1 : name;
	if (w->depth + 1 > OS_XML_DEPTH_MAX)
		return walk_fail(w, -EMSGSIZE, "elements nested too deep");
	if (strlen(local) >= OS_XML_NAME_MAX)
		return walk_fail(w, -EMSGSIZE, "element name too long");
	w->depth++;
	snprintf(w->names[w->depth], OS_XML_NAME_MAX, "%s", local);
	w->leaf = true;
	w->text_over = false;
	op_buf_reset(&w->text);
	int rc = w->cb->start ? w->cb->start(w->cb->ud, w->depth, local) : 0;
	if (rc < 0)
		walk_fail(w, rc, "unexpected element");
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct walk *w = ud;
	if (w->rc || !w->leaf || w->text_over)
		return;
	if (op_buf_add(&w->text, s, (size_t)len) < 0)
		w->text_over = true; /* an error only if this element ends as a leaf */
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct walk *w = ud;
	if (w->rc)
		return;
	if (w->leaf) {
		if (w->text_over)
			return walk_fail(w, -EMSGSIZE, "element text too long");
		const char *parent = w->depth > 1 ? w->names[w->depth - 1] : "";
		int rc = w->cb->leaf ? w->cb->leaf(w->cb->ud, w->depth, parent, w->names[w->depth],
						   op_buf_str(&w->text), w->text.len)
				     : 0;
		if (rc < 0)
			return walk_fail(w, rc, "bad element value");
	}
	w->leaf = false;
	w->depth--;
	op_buf_reset(&w->text);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal_subset)
{
	walk_fail(ud, -EBADMSG, "DOCTYPE not allowed");
}

int os_xml_walk(const char *body, size_t len, const struct os_xml_cb *cb, char *ret_root,
		struct op_err *err)
{
	if (len > INT_MAX)
		return op_err_set(err, -EMSGSIZE, "XML response too large");
	int rc = op_dl_load(&os_dl_expat, err); /* loaded already by os_client_new */
	if (rc < 0)
		return rc;
	struct walk *w = op_calloc(1, sizeof(*w));
	w->cb = cb;
	w->text = OP_BUF_INIT(OS_XML_TEXT_MAX);
	w->p = XML_ParserCreate("UTF-8");
	if (!w->p) {
		free(w);
		return op_err_set(err, -ENOMEM, "cannot create an XML parser");
	}
	XML_SetUserData(w->p, w);
	XML_SetElementHandler(w->p, on_start, on_end);
	XML_SetCharacterDataHandler(w->p, on_text);
	XML_SetStartDoctypeDeclHandler(w->p, on_doctype);
	enum XML_Status st = XML_Parse(w->p, body ? body : "", (int)len, XML_TRUE);
	if (w->rc)
		rc = op_err_set(err, w->rc, "XML response: %s at line %lu", w->why,
				(unsigned long)XML_GetCurrentLineNumber(w->p));
	else if (st != XML_STATUS_OK)
		rc = op_err_set(err, -EBADMSG, "XML response: %s at line %lu",
				XML_ErrorString(XML_GetErrorCode(w->p)),
				(unsigned long)XML_GetCurrentLineNumber(w->p));
	else if (ret_root)
		snprintf(ret_root, OS_XML_NAME_MAX, "%s", w->names[1]);
	XML_ParserFree(w->p);
	op_buf_done(&w->text);
	free(w);
	return rc;
}

/* ---- <Error> ---- */

static void copy_text(char *dst, size_t size, const char *text, size_t len)
{
	snprintf(dst, size, "%.*s", (int)(len < size ? len : size - 1), text);
}

static int error_leaf(void *ud, unsigned depth, const char *parent, const char *name,
		      const char *text, size_t len)
{
	struct os_s3_error *e = ud;
	if (strcmp(parent, "Error"))
		return 0;
	if (!strcmp(name, "Code"))
		copy_text(e->code, sizeof(e->code), text, len);
	else if (!strcmp(name, "Message"))
		copy_text(e->message, sizeof(e->message), text, len);
	else if (!strcmp(name, "Key"))
		copy_text(e->key, sizeof(e->key), text, len);
	return 0;
}

int os_xml_parse_error(const char *body, size_t len, struct os_s3_error *ret)
{
	struct os_s3_error e = { 0 };
	struct os_xml_cb cb = { .leaf = error_leaf, .ud = &e };
	char root[OS_XML_NAME_MAX];
	if (os_xml_walk(body, len, &cb, root, NULL) < 0 || strcmp(root, "Error") || !e.code[0])
		return -EBADMSG;
	*ret = e;
	return 0;
}

/* ---- ListBucketResult ---- */

#define LIST_PAGE_CAP (2 * OS_LIST_PAGE_MAX) /* objects + common prefixes */

static int list_start(void *ud, unsigned depth, const char *name)
{
	struct os_list_page *pg = ud;
	if (depth != 2 || (strcmp(name, "Contents") && strcmp(name, "CommonPrefixes")))
		return 0;
	if (pg->n == LIST_PAGE_CAP)
		return -EMSGSIZE;
	if (pg->n == pg->n_alloc) {
		pg->n_alloc = pg->n_alloc ? 2 * pg->n_alloc : 64;
		pg->entries = op_realloc(pg->entries, pg->n_alloc * sizeof(*pg->entries));
	}
	pg->entries[pg->n++] = (struct os_list_entry){ .is_prefix = name[0] == 'C' && name[1] == 'o' &&
								     name[2] == 'm' };
	return 0;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EBADMSG;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EBADMSG;
	*ret = v;
	return 0;
}

static int list_entry_leaf(struct os_list_entry *e, const char *name, const char *text)
{
	const char **slot = NULL;
	if (!strcmp(name, "Key") || !strcmp(name, "Prefix"))
		slot = &e->key;
	else if (!strcmp(name, "ETag"))
		slot = &e->etag;
	else if (!strcmp(name, "LastModified"))
		slot = &e->last_modified;
	else if (!strcmp(name, "Size"))
		return parse_u64(text, &e->size);
	if (!slot)
		return 0;
	if (*slot)
		return -EBADMSG; /* given twice */
	*slot = op_strdup(text);
	return 0;
}

static int list_leaf(void *ud, unsigned depth, const char *parent, const char *name,
		     const char *text, size_t len)
{
	struct os_list_page *pg = ud;
	if (strlen(text) != len)
		return -EBADMSG; /* a NUL inside */
	if (depth == 2 && !strcmp(name, "IsTruncated")) {
		pg->truncated = !strcmp(text, "true");
		return 0;
	}
	if (depth == 2 && !strcmp(name, "NextContinuationToken")) {
		free(pg->next_token);
		pg->next_token = op_strdup(text);
		return 0;
	}
	if (depth == 3 && pg->n && (!strcmp(parent, "Contents") || !strcmp(parent, "CommonPrefixes")))
		return list_entry_leaf(&pg->entries[pg->n - 1], name, text);
	return 0;
}

void os_list_page_done(struct os_list_page *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free((char *)p->entries[i].key);
		free((char *)p->entries[i].etag);
		free((char *)p->entries[i].last_modified);
	}
	free(p->entries);
	free(p->next_token);
	*p = (struct os_list_page){ 0 };
}

int os_xml_parse_list(const char *body, size_t len, struct os_list_page *ret, struct op_err *err)
{
	struct os_list_page pg = { 0 };
	struct os_xml_cb cb = { .start = list_start, .leaf = list_leaf, .ud = &pg };
	char root[OS_XML_NAME_MAX];
	int rc = os_xml_walk(body, len, &cb, root, err);
	if (rc == 0 && strcmp(root, "ListBucketResult"))
		rc = op_err_set(err, -EBADMSG, "XML response: root <%s>, not <ListBucketResult>", root);
	for (size_t i = 0; rc == 0 && i < pg.n; i++) {
		struct os_list_entry *e = &pg.entries[i];
		if (!e->key || !e->key[0])
			rc = op_err_set(err, -EBADMSG, "XML response: entry %zu has no key", i);
		if (!e->etag)
			e->etag = op_strdup("");
		if (!e->last_modified)
			e->last_modified = op_strdup("");
	}
	if (rc == 0 && pg.truncated && (!pg.next_token || !pg.next_token[0]))
		rc = op_err_set(err, -EBADMSG, "XML response: truncated without NextContinuationToken");
	if (rc < 0) {
		os_list_page_done(&pg);
		return rc;
	}
	*ret = pg;
	return 0;
}

/* ---- InitiateMultipartUploadResult ---- */

static int initiate_leaf(void *ud, unsigned depth, const char *parent, const char *name,
			 const char *text, size_t len)
{
	char **id = ud;
	if (depth != 2 || strcmp(name, "UploadId"))
		return 0;
	if (*id || len == 0 || len > 1024 || strlen(text) != len)
		return -EBADMSG;
	*id = op_strdup(text);
	return 0;
}

int os_xml_parse_initiate(const char *body, size_t len, char **ret_upload_id, struct op_err *err)
{
	char *id = NULL;
	struct os_xml_cb cb = { .leaf = initiate_leaf, .ud = &id };
	char root[OS_XML_NAME_MAX];
	int rc = os_xml_walk(body, len, &cb, root, err);
	if (rc == 0 && (strcmp(root, "InitiateMultipartUploadResult") || !id))
		rc = op_err_set(err, -EBADMSG, "XML response: no InitiateMultipartUploadResult/UploadId");
	if (rc < 0) {
		free(id);
		return rc;
	}
	*ret_upload_id = id;
	return 0;
}

/* ---- DeleteResult ---- */

struct delete_walk {
	int errors;
	struct os_s3_error first;
};

static int delete_start(void *ud, unsigned depth, const char *name)
{
	struct delete_walk *d = ud;
	if (depth == 2 && !strcmp(name, "Error"))
		d->errors++;
	return 0;
}

static int delete_leaf(void *ud, unsigned depth, const char *parent, const char *name,
		       const char *text, size_t len)
{
	struct delete_walk *d = ud;
	if (depth != 3 || d->errors != 1)
		return 0;
	return error_leaf(&d->first, depth, parent, name, text, len);
}

int os_xml_parse_delete(const char *body, size_t len, struct os_s3_error *ret_first,
			struct op_err *err)
{
	struct delete_walk d = { 0 };
	struct os_xml_cb cb = { .start = delete_start, .leaf = delete_leaf, .ud = &d };
	char root[OS_XML_NAME_MAX];
	int rc = os_xml_walk(body, len, &cb, root, err);
	if (rc == 0 && strcmp(root, "DeleteResult"))
		rc = op_err_set(err, -EBADMSG, "XML response: root <%s>, not <DeleteResult>", root);
	if (rc < 0)
		return rc;
	if (d.errors && ret_first)
		*ret_first = d.first;
	return d.errors;
}

/* ---- CompleteMultipartUploadResult ---- */

int os_xml_parse_complete(const char *body, size_t len, struct os_s3_error *ret_error,
			  struct op_err *err)
{
	char root[OS_XML_NAME_MAX];
	struct os_xml_cb cb = { 0 };
	int rc = os_xml_walk(body, len, &cb, root, err);
	if (rc < 0)
		return rc;
	if (!strcmp(root, "CompleteMultipartUploadResult"))
		return 0;
	if (!strcmp(root, "Error") && os_xml_parse_error(body, len, ret_error) == 0)
		return 1;
	return op_err_set(err, -EBADMSG, "XML response: root <%s>, not <CompleteMultipartUploadResult>",
			  root);
}
