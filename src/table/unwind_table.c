/* unwind_table.c - the unwind table object: the slow path of a lookup
 * (a cached table's chunk checks, a lazy table's fills), completion into
 * the whole table, the deferred checks of a table from the cache, and
 * freeing. Compile, lazy fills and DWARF evaluation are compile.c,
 * lazy.c and eval_dwarf.c. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/clock.h"
#include "table/table_internal.h"

static void unchecked_free(struct ut_unchecked *u)
{
	if (u) {
		free(u->checked);
		free(u->name);
		free(u);
	}
}

/* Frees what t's arrays and state hold (not t itself, nor t->inputs). */
static void release_rows(struct unwind_table *t)
{
	ut_lazy_free(t->lazy);
	unchecked_free(t->unchecked);
	if (t->map) {
		if (t->map_len)
			munmap(t->map, t->map_len);
		return;
	}
	free(t->starts);
	free(t->rows);
	free(t->block);
	free(t->fdes);
}

/* Replaces t's rows by a whole compile of its inputs; t is unchanged on
 * failure. */
static int compile_in_place(struct unwind_table *t, const struct log_sink *log,
			    bool rewrite)
{
	struct unwind_table *w;
	int err = unwind_table__compile(t->inputs, t->ninputs, log, &w);

	if (err)
		return err;
	release_rows(t);
	free(t->inputs);
	*t = *w;
	t->rewrite = rewrite;
	free(w);
	return 0;
}

int unwind_table__defer_checks(struct unwind_table *t, unsigned chunk_shift,
			       int (*check)(const struct unwind_table *, size_t,
					    void *, const char **),
			       void *user, const struct log_sink *log,
			       char *name)
{
	struct ut_unchecked *u = calloc(1, sizeof(*u));
	uint64_t span = t->hi - t->lo;

	if (!u || t->hi <= t->lo || t->lazy || chunk_shift > 63) {
		free(u);
		free(name);
		return u ? -EINVAL : -ENOMEM;
	}
	u->nchunks = (size_t)((span - 1) >> chunk_shift) + 1;
	u->checked = calloc((u->nchunks + 63) / 64, sizeof(*u->checked));
	if (!u->checked) {
		free(u);
		free(name);
		return -ENOMEM;
	}
	u->chunk_shift = chunk_shift;
	u->check = check;
	u->user = user;
	u->log = log;
	u->name = name;
	t->unchecked = u;
	return 0;
}

/* Checks chunk c of t; once every chunk passed, t is an ordinary table. */
static int check_chunk(struct unwind_table *t, size_t c, const char **why)
{
	struct ut_unchecked *u = t->unchecked;
	int err;

	if ((u->checked[c / 64] >> (c % 64)) & 1)
		return 0;
	const char *w = NULL;

	err = u->check(t, c, u->user, &w);
	if (err) {
		if (why)
			*why = w;
		return err;
	}
	u->checked[c / 64] |= 1ull << (c % 64);
	if (++u->nchecked == u->nchunks) {
		unchecked_free(u);
		t->unchecked = NULL;
	}
	return 0;
}

int unwind_table__check_all(struct unwind_table *t, const char **why)
{
	for (size_t c = 0; t->unchecked && c < t->unchecked->nchunks; c++)
		if (check_chunk(t, c, why))
			return -EINVAL;
	return 0;
}

/* A chunk of a table from the cache failed its check: the file is not
 * trusted any further, the table is compiled from the module's CFI. */
static int checks_failed(struct unwind_table *t, const char *why)
{
	struct ut_unchecked *u = t->unchecked;

	log_info(u->log, "%s: table cache file not valid (%s); ignored and "
		 "rewritten", u->name ? u->name : "unwind table",
		 why ? why : "?");
	return compile_in_place(t, u->log, true);
}

int unwind_table__complete(struct unwind_table *t)
{
	const char *why = NULL;

	if (t->unchecked && unwind_table__check_all(t, &why))
		return checks_failed(t, why);
	if (!t->lazy)
		return 0;
	return compile_in_place(t, t->lazy->log, false);
}

static const struct unwind_row *fill(const struct unwind_table *ct, uint64_t vaddr);

/* The slow path of a lookup, timed: what a walk spends making its table
 * (lazy fills, the completion after them, a cached table's chunk
 * checks), for --stats. */
const struct unwind_row *unwind_table__fill(const struct unwind_table *ct,
					    uint64_t vaddr)
{
	uint64_t t0 = clock_monotonic_ns();
	const struct unwind_row *r = fill(ct, vaddr);

	((struct unwind_table *)ct)->fill_ns += clock_monotonic_ns() - t0;
	return r;
}

static const struct unwind_row *fill(const struct unwind_table *ct, uint64_t vaddr)
{
	/* Logically const: the rows are those of the whole compile. */
	struct unwind_table *t = (struct unwind_table *)ct;
	int err = -ENOTSUP;

	if (t->unchecked) {
		const char *why = NULL;

		if (vaddr < t->lo || vaddr >= t->hi)
			return NULL;
		if (check_chunk(t, (size_t)((vaddr - t->lo) >>
					    t->unchecked->chunk_shift), &why) &&
		    checks_failed(t, why))
			return NULL; /* out of memory: no row, this time */
		/* Checked (or compiled) now: no recursion. */
		return unwind_table__lookup(t, vaddr);
	}
	if (!t->lazy)
		return NULL;
	if (t->lazy->nfills < t->lazy->max_fills)
		err = ut_lazy_fill(t, vaddr);
	if (err == -ENOTSUP || (!err && t->lazy->nfills >= t->lazy->max_fills))
		err = unwind_table__complete(t);
	if (err) {
		/* Out of memory: no row, this time. */
		return NULL;
	}
	if (t->lazy) {
		/* The region is compiled now: look again (no LAZY row left
		 * at vaddr, so no recursion). */
		const struct unwind_row *r = unwind_table__lookup(t, vaddr);

		return r && r->cfa_kind == UT_CFA_LAZY ? NULL : r;
	}
	return unwind_table__lookup(t, vaddr);
}

uint32_t unwind_table__new_serial(void)
{
	static uint32_t next = 1;	/* 0: used up */
	uint32_t s = __atomic_load_n(&next, __ATOMIC_RELAXED);

	do {
		if (s == 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&next, &s, s == UINT32_MAX - 1 ? 0 : s + 1,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return s;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	release_rows(t);
	free(t->inputs);
	free(t);
}

void unwind_table__range(const struct unwind_table *t, uint64_t *lo,
			 uint64_t *hi)
{
	*lo = t->lo;
	*hi = t->hi;
}

void unwind_table__stats(const struct unwind_table *t,
			 struct unwind_table_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->rows = t->nrows;
	for (size_t i = 0; i < t->nrows; i++)
		st->dwarf_rows += t->rows[i].cfa_kind == UT_CFA_DWARF;
	st->fdes = t->nfdes;
	st->bytes = sizeof(*t) + t->nrows * (sizeof(*t->starts) +
					     sizeof(*t->rows)) +
		    (t->nblocks + 1) * sizeof(*t->block) +
		    t->nfdes * sizeof(*t->fdes) +
		    t->ninputs * sizeof(*t->inputs);
}

