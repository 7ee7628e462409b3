/* list.c - the events a trace can name: tracepoints by glob, and the
 * functions of a file a uprobe can probe. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bpf/bpf_env.h"
#include "trace/trace_internal.h"

struct list_state {
	int (*fn)(const char *name, void *user);
	void *user;
};

static int list_tp_cb(const char *cat, const char *name, void *u)
{
	struct list_state *ls = u;
	char full[256];

	snprintf(full, sizeof(full), "%s:%s", cat, name);
	return ls->fn(full, ls->user);
}

struct list_funcs {
	const char *glob;
	int (*fn)(const char *name, void *user);
	void *user;
	int count;
};

static int list_func_cb(const char *name, const char *plain, uint64_t off, void *u)
{
	struct list_funcs *lf = u;

	(void)off;
	if (fnmatch(lf->glob, plain, 0) && fnmatch(lf->glob, name, 0))
		return 0;
	lf->count++;
	return lf->fn(plain, lf->user);
}

/* "u:FILE[:GLOB]": the functions of FILE a uprobe can name. */
static int list_functions(struct stacksnap_ctx *ctx, const char *pattern,
			  int (*fn)(const char *name, void *user), void *user)
{
	const char *rest = strchr(pattern, ':') + 1, *colon = strchr(rest, ':');
	char file[PATH_MAX], path[PATH_MAX];
	struct list_funcs lf = { colon && colon[1] ? colon + 1 : "*", fn, user, 0 };
	int r;

	snprintf(file, sizeof(file), "%.*s", (int)(colon ? colon - rest : (long)strlen(rest)), rest);
	if (trace_resolve_binary(0, file, path, sizeof(path))) {
		log_err(&ctx->log, "no file or library '%s'", file);
		return fail(-ENOENT);
	}
	r = trace_elf_functions(path, list_func_cb, &lf);
	if (r < 0) {
		log_err(&ctx->log, "%s is not an ELF file", path);
		return fail(r);
	}
	return lf.count;
}

int stacksnap_trace__list(struct stacksnap_ctx *ctx, const char *pattern,
			  int (*fn)(const char *name, void *user), void *user)
{
	struct list_state ls = { fn, user };
	struct bpf_env env;
	char cat[128] = "*";
	const char *name = "*";
	int r;

	if (!ctx || !fn)
		return fail(-EINVAL);
	if ((r = bpf_env__prepare(&env, &ctx->log)))
		return r;
	if (pattern && (!strncmp(pattern, "u:", 2) || !strncmp(pattern, "ur:", 3)))
		return list_functions(ctx, pattern, fn, user);
	if (pattern && *pattern) {
		const char *colon = strchr(pattern, ':');

		if (colon) {
			snprintf(cat, sizeof(cat), "%.*s", (int)(colon - pattern), pattern);
			name = colon[1] ? colon + 1 : "*";
		} else {
			/* A word alone matches either part. */
			char buf[160];

			snprintf(buf, sizeof(buf), "*%s*", pattern);
			r = trace_tracepoints_each("*", buf, list_tp_cb, &ls);
			if (r < 0)
				return fail(r);
			return r;
		}
	}
	r = trace_tracepoints_each(cat, name, list_tp_cb, &ls);
	return r < 0 ? fail(r) : r;
}
