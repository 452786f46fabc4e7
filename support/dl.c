/* support/dl.c - op_dl_load: dlopen + dlsym of one shim's table, once. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "support/dl.h"
#include "support/log.h"

/* Called with lib->lock held. Returns the new state. */
static int load_locked(struct op_dl_lib *lib)
{
	dlerror();
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(lib->why, sizeof(lib->why), "cannot load %s: %s", lib->soname,
			 e ? e : "dlopen failed");
		return -ENOENT;
	}
	for (size_t i = 0; i < lib->count; i++) {
		dlerror();
		void *p = dlsym(h, lib->names[i]);
		if (!p && lib->required && i >= lib->required) {
			lib->syms[i] = NULL; /* optional: the library predates it */
			continue;
		}
		if (!p) {
			const char *e = dlerror();
			snprintf(lib->why, sizeof(lib->why), "cannot load %s: no symbol %s (%s)",
				 lib->soname, lib->names[i], e ? e : "NULL");
			/* h stays open: dlclose of a half-used library gains nothing */
			memset(lib->syms, 0, lib->count * sizeof(*lib->syms));
			return -ENOSYS;
		}
		lib->syms[i] = p;
	}
	return 1;
}

static int ensure(struct op_dl_lib *lib, bool *ret_first_failure)
{
	int st = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);
	if (st)
		return st;
	pthread_mutex_lock(&lib->lock);
	st = __atomic_load_n(&lib->state, __ATOMIC_RELAXED);
	if (!st) {
		st = load_locked(lib);
		/* after_load runs before any other thread sees the library as loaded */
		if (st > 0 && lib->after_load)
			lib->after_load();
		__atomic_store_n(&lib->state, st, __ATOMIC_RELEASE);
		if (st < 0 && ret_first_failure)
			*ret_first_failure = true;
	}
	pthread_mutex_unlock(&lib->lock);
	return st;
}

int op_dl_load(struct op_dl_lib *lib, struct op_err *err)
{
	int st = ensure(lib, NULL);
	if (st > 0)
		return 0;
	return op_err_set(err, st, "%s", lib->why);
}

bool op_dl_loaded(const struct op_dl_lib *lib)
{
	return __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE) > 0;
}

void *op_dl_sym(struct op_dl_lib *lib, size_t i)
{
	bool first = false;
	if (ensure(lib, &first) > 0)
		return lib->syms[i];
	if (first)
		op_log_error("shared library missing", "error", lib->why);
	return NULL;
}

bool op_dl_has(struct op_dl_lib *lib, size_t i)
{
	return ensure(lib, NULL) > 0 && lib->syms[i] != NULL;
}
