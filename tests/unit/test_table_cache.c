/* test_table_cache.c - unwind tables kept on disk: a second context uses
 * the cached table, which is byte for byte what a fresh compile encodes,
 * checking its rows a chunk at a time as lookups reach them;
 * truncated, corrupt, foreign-owned, world-writable, symlinked and stale
 * files are ignored (and rewritten); concurrent writers leave a whole
 * file; the debug-file cache follows the same ownership rules. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/cache_file.h"
#include "table/table_cache.h"
#include "cache_race.h"
#include "harness.h"
#include "stacksnap.h"

static char dir[] = "/tmp/stacksnap-tcache-XXXXXX";
static char path[4096];		/* libc's table file */
static uint8_t *fresh;		/* a fresh compile of libc's table, encoded */
static size_t fresh_len;

/* libc's module in a new context on dir (or no cache: NULL). */
static struct module *libc_module(struct stacksnap_ctx **ctx,
				  struct stacksnap_addrspace **as,
				  const char *cache)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .cache_dir = cache);
	const struct as_map *m;

	*ctx = stacksnap_ctx__new(&o);
	*as = *ctx ? stacksnap_addrspace__from_pid(*ctx, getpid()) : NULL;
	m = *as ? addrspace__find(*as, (uint64_t)(uintptr_t)&fprintf) : NULL;
	CHECK(m && m->mod);
	return m ? m->mod : NULL;
}

static void done(struct stacksnap_ctx *ctx, struct stacksnap_addrspace *as)
{
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

static struct stacksnap_ctx_stats stats_of(struct stacksnap_ctx *ctx)
{
	struct stacksnap_ctx_stats st = { .sz = sizeof(st) };

	CHECK(stacksnap_ctx__stats(ctx, &st) == 0);
	return st;
}

/* Runs a context on the cache; says whether libc's table came from it
 * (and passed the checks of every chunk of rows), and checks its rows
 * against a fresh compile. */
static bool run_uses_cache(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m = libc_module(&ctx, &as, dir);
	bool cached = false;

	if (m) {
		const struct unwind_table *t = module__table_whole(ctx, m);

		CHECK(t != NULL);
		/* From the file, and no compile after a chunk failed. */
		cached = stats_of(ctx).tables_cached > 0 &&
			 stats_of(ctx).tables_whole == 0;
		CHECK(cached == m->table_on_disk || !cached);
		if (t && fresh) {
			uint8_t *b;
			size_t len;
			struct cache_source file = elf_image__source(m->img);
			struct table_cache_key key = { m->img->build_id,
						       m->img->build_id_len,
						       t->inputs, t->ninputs,
						       &file };

			CHECK(table_cache__encode(t, &key, m->sigreturn,
						  m->nsigreturn, &b, &len) == 0);
			CHECKF(len == fresh_len && !memcmp(b, fresh, len),
			       "table in use (%s) differs from a fresh compile",
			       cached ? "cached" : "compiled");
			free(b);
		}
	}
	done(ctx, as);
	return cached;
}

static void setup(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	/* A fresh compile without any cache: the reference bytes (the
	 * whole table: without a cache the module's table is lazy). */
	m = libc_module(&ctx, &as, NULL);
	if (m && module__table_whole(ctx, m)) {
		struct cache_source file = elf_image__source(m->img);
		struct table_cache_key key = { m->img->build_id, m->img->build_id_len,
					       m->table->inputs, m->table->ninputs,
					       &file };

		CHECK(table_cache__encode(m->table, &key, m->sigreturn,
					  m->nsigreturn, &fresh, &fresh_len) == 0);
		CHECK(table_cache__path(dir, key.build_id, key.build_id_len,
					path, sizeof(path)) == 0);
	}
	done(ctx, as);
	CHECK(fresh != NULL);
	/* The first context writes the file (directory 0700), the second
	 * maps it. */
	CHECK(!run_uses_cache());
	CHECKF(stat(path, &st) == 0, "%s not written", path);
	CHECK((st.st_mode & 0777) == 0600);
	char tables[4200];
	snprintf(tables, sizeof(tables), "%s/tables", dir);
	CHECK(stat(tables, &st) == 0 && (st.st_mode & 0777) == 0700);
}

static void second_run_uses_cache_byte_identical(void)
{
	size_t len;
	uint8_t *b = harness_slurp(path, &len);

	CHECKF(b && len == fresh_len && !memcmp(b, fresh, len),
	       "cache file differs from a fresh compile's encoding");
	free(b);
	CHECK(run_uses_cache());
}

/* After each damage: the run does not use the file, rewrites it, and the
 * next run uses it again. */
static void damaged(const char *what, void (*damage)(void))
{
	damage();
	CHECKF(!run_uses_cache(), "%s: a damaged file was used", what);
	size_t len;
	uint8_t *b = harness_slurp(path, &len);
	CHECKF(b && len == fresh_len && !memcmp(b, fresh, len),
	       "%s: not rewritten", what);
	free(b);
	CHECKF(run_uses_cache(), "%s: rewritten file not used", what);
}

static size_t cut;
static void truncate_it(void) { CHECK(truncate(path, (off_t)cut) == 0); }
static size_t flip_at;
static void flip_it(void)
{
	uint8_t *b = malloc(fresh_len);

	memcpy(b, fresh, fresh_len);
	b[flip_at] ^= 0x40;
	unlink(path);
	CHECK(harness_spit(path, b, fresh_len) == 0);
	free(b);
}

static void truncated_and_corrupt(void)
{
	size_t cuts[] = { 0, 7, 100, 199, 200, fresh_len / 2, fresh_len - 1 };

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		cut = cuts[i];
		damaged("truncated", truncate_it);
	}
	size_t flips[] = { 0, 8, 12, 30, 64, 80, 88, 150, 190, 200, 300,
			   fresh_len / 3, fresh_len - 1 };
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		char what[64];

		flip_at = flips[i];
		snprintf(what, sizeof(what), "byte %zu of %zu flipped", flip_at,
			 fresh_len);
		damaged(what, flip_it);
	}
}

/* Every byte flipped and every length, through decode: never accepted
 * with a wrong checksum, never crashes (the fuzz target does more). */
static void decode_rejects_every_flip(void)
{
	struct cfi_input in[2];
	struct table_cache_key key;
	uint64_t sig[TABLE_CACHE_MAX_SIGRETURN];
	unsigned nsig;
	struct unwind_table *t;
	uint8_t *b = malloc(fresh_len);
	size_t step = fresh_len / 5000 + 1;

	/* The key as the header says (the decode checks it). */
	key.build_id_len = 0;
	memcpy(&key.build_id_len, fresh + 20, 4);
	key.build_id = fresh + 24;
	key.ninputs = 0;
	memcpy(&key.ninputs, fresh + 96, 4);
	for (size_t i = 0; i < key.ninputs && i < 2; i++) {
		memset(&in[i], 0, sizeof(in[i]));
		memcpy(&in[i].vaddr, fresh + 104 + 16 * i, 8);
		memcpy(&in[i].size, fresh + 112 + 16 * i, 8);
		in[i].is_eh_frame = (fresh[100] >> i) & 1;
	}
	key.inputs = in;
	CHECK(table_cache__decode(fresh, fresh_len, &key, sig, &nsig, &t, NULL) == 0);
	CHECK(t && unwind_table__check_all(t, NULL) == 0 && !t->unchecked);
	unwind_table__free(t);
	size_t accepted = 0;
	/* Accepted: the decode and the checks of every chunk pass. */
	for (size_t i = 0; i < fresh_len; i += step) {
		memcpy(b, fresh, fresh_len);
		b[i] ^= 1;
		if (table_cache__decode(b, fresh_len, &key, sig, &nsig, &t, NULL) == 0) {
			accepted += unwind_table__check_all(t, NULL) == 0;
			unwind_table__free(t);
		}
		if (table_cache__decode(fresh, i, &key, sig, &nsig, &t, NULL) == 0) {
			accepted += unwind_table__check_all(t, NULL) == 0;
			unwind_table__free(t);
		}
	}
	CHECKF(accepted == 0, "%zu damaged files accepted", accepted);
	free(b);
}

/* A lookup checks the chunk it lands in, not the whole file; a chunk
 * damaged in the file is found by the lookup that reaches it, which then
 * gives the row a fresh compile gives, and the file is rewritten. */
static void chunks_checked_on_first_use(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m;
	const struct unwind_table *t;
	uint64_t pc = (uint64_t)(uintptr_t)&fprintf;

	CHECK(run_uses_cache());
	/* Damage the last row of the file: far from fprintf's chunk unless
	 * the table is a single chunk. */
	size_t nrows = 0;
	memcpy(&nrows, fresh + 80, 4);
	size_t rows_at = 200 + ((nrows * 4 + 7) & ~(size_t)7);
	uint8_t *b = malloc(fresh_len);
	memcpy(b, fresh, fresh_len);
	b[rows_at + 8 * (nrows - 1)] ^= 0x10;
	unlink(path);
	CHECK(harness_spit(path, b, fresh_len) == 0);
	free(b);
	m = libc_module(&ctx, &as, dir);
	t = m ? module__table(ctx, m) : NULL;
	const struct as_map *map = addrspace__find(as, pc);
	CHECK(t && map && stats_of(ctx).tables_cached == 1 && t->unchecked);
	if (t && map && t->unchecked) {
		size_t nchunks = t->unchecked->nchunks;
		const struct unwind_row *r = unwind_table__lookup(t, pc - map->bias);

		CHECK(r != NULL);
		CHECKF(nchunks < 2 || (t->unchecked && t->unchecked->nchecked == 1),
		       "a lookup checked more than its chunk (%zu chunks)", nchunks);
		/* The last address: its chunk is the damaged one. */
		uint64_t lo, hi;
		unwind_table__range(t, &lo, &hi);
		unwind_table__lookup(t, hi - 1);
		CHECK(unwind_table__needs_rewrite(t) && !t->unchecked && !t->map);
	}
	done(ctx, as);
	size_t len;
	b = harness_slurp(path, &len);
	CHECKF(b && len == fresh_len && !memcmp(b, fresh, len),
	       "a file with a damaged chunk was not rewritten");
	free(b);
	CHECK(run_uses_cache());
}

static void foreign_owned_and_world_writable(void)
{
	char link[4200];

	/* Owned by someone else (as root we can make it so). */
	if (geteuid() == 0) {
		CHECK(chown(path, 65534, 65534) == 0);
		CHECK(!run_uses_cache());
		CHECK(chown(path, 0, 0) == 0 || unlink(path) == 0);
	} else {
		CHECKF(0, "foreign-owned cache file: needs root to make one");
	}
	CHECK(run_uses_cache() || run_uses_cache());
	/* Writable by others. */
	CHECK(chmod(path, 0666) == 0);
	CHECK(!run_uses_cache());
	CHECK(chmod(path, 0600) == 0);
	CHECK(run_uses_cache());
	/* A symbolic link to a good file is not followed. */
	snprintf(link, sizeof(link), "%s/elsewhere.table", dir);
	CHECK(rename(path, link) == 0);
	CHECK(symlink(link, path) == 0);
	CHECK(!run_uses_cache());
	unlink(link);
	CHECK(run_uses_cache());
}

/* A valid file of another module under libc's name: never used. */
static void stale_file_never_used(void)
{
	char other[4200];
	uint8_t *b = malloc(fresh_len);

	memcpy(b, fresh, fresh_len);
	/* Another build-id, checksums made right: only the build-id check
	 * stands between it and use. */
	b[24] ^= 0xff;
	CHECK(table_cache__path(dir, b + 24, fresh[20], other, sizeof(other)) == 0);
	CHECK(harness_spit(path, b, fresh_len) == 0);
	CHECK(!run_uses_cache());
	free(b);
	/* And a file of another compiler version. */
	b = malloc(fresh_len);
	memcpy(b, fresh, fresh_len);
	b[12] = 99;
	unlink(path);
	CHECK(harness_spit(path, b, fresh_len) == 0);
	CHECK(!run_uses_cache());
	CHECK(run_uses_cache());
	free(b);
}

/* Writers racing on one file while a reader maps it: every load finds
 * a whole file or none. */
static bool is_fresh(const uint8_t *b, size_t len)
{
	return len == fresh_len && !memcmp(b, fresh, len);
}

static void concurrent_writers(void)
{
	harness_race_cache_writers(path, fresh, fresh_len, 6, NULL, is_fresh);
	CHECK(run_uses_cache());
	/* No temporary file left behind. */
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "ls %s/tables | grep -q tmp", dir);
	CHECK(system(cmd) != 0);
}

/* A cache directory owned by someone else is not used at all. */
static void foreign_cache_dir(void)
{
	char d[4200];

	snprintf(d, sizeof(d), "%s/foreign", dir);
	CHECK(mkdir(d, 0755) == 0);
	if (geteuid() != 0) {
		CHECKF(0, "foreign-owned cache directory: needs root to make one");
		return;
	}
	CHECK(chown(d, 65534, 65534) == 0);
	CHECK(cache_dir__prepare(d, NULL) == -EPERM);
	CHECK(cache_file__write(strcat(d, "/x"), "x", 1, NULL) == -EPERM);
}

/* The debug-file cache under the same rules: a cached copy (here libc
 * itself, whose build-id it carries) is used only when trusted. */
static void debug_cache_rules(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m = libc_module(&ctx, &as, NULL);
	char dbg[4200];
	struct elf_image *out = NULL;
	size_t len;
	uint8_t *b;

	if (!m || m->img->build_id_len < 2) {
		CHECK(0);
		done(ctx, as);
		return;
	}
	int n = snprintf(dbg, sizeof(dbg), "%s/debug/.build-id/%02x/", dir,
			 m->img->build_id[0]);
	for (size_t i = 1; i < m->img->build_id_len; i++)
		n += snprintf(dbg + n, sizeof(dbg) - (size_t)n, "%02x", m->img->build_id[i]);
	strcat(dbg, ".debug");
	*strrchr(dbg, '/') = 0;
	CHECK(cache_dir__prepare(dbg, NULL) == 0);
	dbg[strlen(dbg)] = '/';
	b = harness_slurp(m->img->path, &len);
	CHECK(b != NULL);
	CHECK(harness_spit(dbg, b, len) == 0);
	free(b);
	CHECK(elf_debug_cache__open(m->img, dir, NULL, &out) == 0 && out);
	elf_image__free(out);
	CHECK(chmod(dbg, 0646) == 0);
	CHECK(elf_debug_cache__open(m->img, dir, NULL, &out) == 0 && !out);
	CHECK(chmod(dbg, 0600) == 0);
	if (geteuid() == 0) {
		CHECK(chown(dbg, 65534, 65534) == 0);
		CHECK(elf_debug_cache__open(m->img, dir, NULL, &out) == 0 && !out);
	}
	unlink(dbg);
	done(ctx, as);
}

/* Deferred writes (a dump, a replay): a lazy table the run completed
 * itself (past its fills) is kept by write_caches, not by the context's
 * free, and the file equals a fresh compile. */
static void completed_table_kept_by_write_caches(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m;
	struct stat st;

	unlink(path);
	m = libc_module(&ctx, &as, dir);
	if (m) {
		stacksnap_ctx__defer_cache_writes(ctx, true);
		CHECK(module__table(ctx, m) && unwind_table__is_lazy(m->table));
		CHECK(m->table && unwind_table__complete(m->table) == 0 &&
		      !unwind_table__is_lazy(m->table));
		CHECK(stacksnap_ctx__pending_cache_writes(ctx) >= 1);
	}
	done(ctx, as); /* deferred: the free keeps nothing */
	CHECKF(stat(path, &st) != 0, "the free wrote %s", path);
	m = libc_module(&ctx, &as, dir);
	if (m) {
		stacksnap_ctx__defer_cache_writes(ctx, true);
		CHECK(module__table(ctx, m) && unwind_table__complete(m->table) == 0);
		CHECK(stacksnap_ctx__write_caches(ctx) >= 1);
	}
	done(ctx, as);
	size_t len;
	uint8_t *b = harness_slurp(path, &len);

	CHECKF(b && len == fresh_len && !memcmp(b, fresh, len),
	       "the completed table, as write_caches kept it, differs from a fresh compile");
	free(b);
	CHECK(run_uses_cache());
}

static void cleanup(void)
{
	char cmd[4200];

	free(fresh);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST_MAIN("table_cache", TEST(setup), TEST(second_run_uses_cache_byte_identical),
	  TEST(truncated_and_corrupt), TEST(decode_rejects_every_flip),
	  TEST(chunks_checked_on_first_use),
	  TEST(foreign_owned_and_world_writable), TEST(stale_file_never_used),
	  TEST(concurrent_writers), TEST(completed_table_kept_by_write_caches), TEST(foreign_cache_dir),
	  TEST(debug_cache_rules), TEST(cleanup))
