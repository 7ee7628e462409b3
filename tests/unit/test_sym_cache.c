/* test_sym_cache.c - symbol indexes kept on disk: a context that maps
 * libc's file names every address of libc's code exactly as a context
 * that reads its ELF symbols and DWARF (the debug file's, with libc6-dbg)
 * does (and libstdc++'s, C++ names and PLT stubs); truncated, corrupt (in the header or deep in a block), foreign-
 * owned, world-writable, symlinked and stale files are never trusted and
 * never change an answer; concurrent writers leave a whole file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/cache_file.h"
#include "symbolize/sym_cache.h"
#include "cache_race.h"
#include "harness.h"
#include "stacksnap.h"
#include "symbolize/symbolize.h"

/* Sanitizers make each lookup ~10x slower: fewer addresses there. */
#if defined(__SANITIZE_ADDRESS__)
#define STRIDE 211
#else
#define STRIDE 29
#endif

static char dir[] = "/tmp/stacksnap-scache-XXXXXX";
static char path[4096];		/* libc's symbol file */
static uint8_t *fresh;		/* as first written */
static size_t fresh_len;

/* What a context answers for one address. */
struct answer {
	char function[160], symbol[160], mangled[160];
	uint64_t offset, start, moffset;
};

static uint64_t *addrs;		/* pcs in libc's code */
static size_t naddrs;
static struct answer *want;	/* answers without any cache */

/* Whether the last context said libc's (libstdc++'s) symbols came from
 * the cache. */
static bool libc_from_cache, cxx_from_cache;

static void on_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "libc.so.6: symbols from the symbol cache"))
		libc_from_cache = true;
	if (strstr(msg, "/libstdc++.so.6") &&
	    strstr(msg, ": symbols from the symbol cache"))
		cxx_from_cache = true;
}

static struct module *libc_module(struct stacksnap_ctx **ctx,
				  struct stacksnap_addrspace **as,
				  const char *cache)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .cache_dir = cache, .log = on_log,
		       .log_level = STACKSNAP_LOG_INFO);
	const struct as_map *m;

	*ctx = stacksnap_ctx__new(&o);
	*as = *ctx ? stacksnap_addrspace__from_pid(*ctx, getpid()) : NULL;
	m = *as ? addrspace__find(*as, (uint64_t)(uintptr_t)&gnu_get_libc_version) : NULL;
	CHECK(m && m->mod);
	return m ? m->mod : NULL;
}

static void done(struct stacksnap_ctx *ctx, struct stacksnap_addrspace *as)
{
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
}

static void copy(char *dst, const char *s)
{
	snprintf(dst, 160, "%s", s ? s : "(null)");
}

/* The answers of as for addrs[0..n) (every step-th). */
static void answers(struct stacksnap_ctx *ctx, struct stacksnap_addrspace *as,
		    struct answer *out, size_t step)
{
	for (size_t i = 0; i < naddrs; i += step) {
		struct stacksnap_sym s[32];
		struct answer *a = &out[i];
		uint64_t start = 0;
		int n;

		memset(a, 0, sizeof(*a));
		n = stacksnap_addrspace__symbolize(as, addrs[i], false, 0, s, 32);
		copy(a->function, n > 0 ? s[0].function : NULL);
		a->offset = n > 0 ? s[0].offset : ~0ull;
		n = stacksnap_addrspace__symbolize(as, addrs[i], false,
						   STACKSNAP_SYM_NO_DEMANGLE, s, 32);
		copy(a->mangled, n > 0 ? s[0].function : NULL);
		a->moffset = n > 0 ? s[0].offset : ~0ull;
		/* The symbol table itself, as the unwinder's steppers ask. */
		const struct as_map *map = addrspace__find(as, addrs[i]);
		struct symtab *st = map && map->mod ? module__symtab(ctx, map->mod)
						    : NULL;
		copy(a->symbol, st ? symtab__lookup(st, addrs[i] - map->bias, 0,
						    &start) : NULL);
		a->start = start;
	}
}

static size_t compare(const struct answer *got, size_t step, const char *what)
{
	size_t bad = 0;

	for (size_t i = 0; i < naddrs; i += step) {
		const struct answer *a = &got[i], *b = &want[i];

		if (strcmp(a->function, b->function) || a->offset != b->offset ||
		    strcmp(a->mangled, b->mangled) || a->moffset != b->moffset ||
		    strcmp(a->symbol, b->symbol) || a->start != b->start) {
			if (bad++ < 5)
				fprintf(stderr, "  %s: %#llx: %s+%#llx / %s / %s "
					"instead of %s+%#llx / %s / %s\n", what,
					(unsigned long long)addrs[i], a->function,
					(unsigned long long)a->offset, a->mangled,
					a->symbol, b->function,
					(unsigned long long)b->offset, b->mangled,
					b->symbol);
		}
	}
	return bad;
}

/* Runs a context on the cache: whether libc's symbols came from it; its
 * answers (every step-th address) must be the uncached ones. */
static bool run_uses_cache(size_t step, const char *what)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m = libc_module(&ctx, &as, dir);
	struct answer *got = calloc(naddrs, sizeof(*got));
	bool cached = false;

	libc_from_cache = cxx_from_cache = false;
	if (m && got && module__symtab(ctx, m)) {
		cached = libc_from_cache;
		answers(ctx, as, got, step);
		size_t bad = compare(got, step, what);
		CHECKF(bad == 0, "%s: %zu addresses named otherwise", what, bad);
	}
	free(got);
	done(ctx, as);
	return cached;
}

/* Writes libc's file from a context without one (with the function index,
 * as the dump's background writer does, or without, as others do). */
static void write_file_with(bool functions)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m = libc_module(&ctx, &as, NULL);

	if (m && module__symtab(ctx, m))
		CHECK(symtab__store(m->symtab, module__lines(ctx, m), functions,
				    dir, NULL) == 0);
	done(ctx, as);
}

static void write_file(void)
{
	write_file_with(true);
}

/* Is b a whole, valid file for libc? */
static bool whole(const uint8_t *b, size_t len)
{
	uint32_t id_len = 0;
	uint64_t key;
	struct sym_cache *c;
	bool ok;

	if (len < SYM_CACHE_HDR_SIZE)
		return false;
	memcpy(&id_len, fresh + 16, 4);
	memcpy(&key, fresh + 64, 8);
	if (sym_cache__decode(b, len, fresh + 24, id_len, key, &c, NULL))
		return false;
	ok = sym_cache__check_all(c);
	sym_cache__free(c);
	return ok;
}

#define slurp harness_slurp

static void spit(const char *p, const uint8_t *b, size_t len)
{
	CHECK(harness_spit(p, b, len) == 0);
}

/* Every STRIDE-th byte of the module's code at pc: each symbol and DWARF
 * function boundary is near one. */
static void add_code(struct stacksnap_addrspace *as, const void *pc)
{
	const struct as_map *map = addrspace__find(as, (uint64_t)(uintptr_t)pc);

	CHECK(map && map->mod);
	for (size_t i = 0; map && map->mod && i < map->mod->img->nsegs; i++) {
		const struct elf_segment *s = &map->mod->img->segs[i];

		if (!(s->flags & 1))
			continue;
		for (uint64_t a = s->vaddr; a < s->vaddr + s->filesz; a += STRIDE) {
			uint64_t *p = realloc(addrs, (naddrs + 1) * sizeof(*addrs));

			if (!p)
				return;
			addrs = p;
			addrs[naddrs++] = a + map->bias;
		}
	}
}

static void setup(void)
{
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct module *m;
	struct stat st;
	/* libstdc++, loaded for it: C++ names, demangled when looked up,
	 * and PLT stubs, "foo@plt" with foo demangled. */
	void *h = dlopen("libstdc++.so.6", RTLD_NOW);
	void *cxx = h ? dlsym(h, "_ZNSt9exceptionD1Ev") : NULL;

	CHECKF(cxx, "libstdc++ not loaded: %s", dlerror());
	CHECK(mkdtemp(dir) != NULL);
	m = libc_module(&ctx, &as, NULL);
	if (!m) {
		done(ctx, as);
		return;
	}
	add_code(as, (const void *)&gnu_get_libc_version);
	if (cxx)
		add_code(as, cxx);
	/* The reference answers: read from ELF and DWARF. */
	want = calloc(naddrs, sizeof(*want));
	CHECK(naddrs > 5000 && want);
	if (want)
		answers(ctx, as, want, 1);
	CHECK(sym_cache__path(dir, m->img->build_id, m->img->build_id_len, path,
			      sizeof(path)) == 0);
	done(ctx, as);
	write_file();
	CHECKF(stat(path, &st) == 0, "%s not written", path);
	CHECK((st.st_mode & 0777) == 0600);
	fresh = slurp(path, &fresh_len);
	/* A context on the cache writes libstdc++'s file when it ends. */
	CHECK(run_uses_cache(101, "first"));
	char syms[4200];
	snprintf(syms, sizeof(syms), "%s/symbols", dir);
	CHECK(stat(syms, &st) == 0 && (st.st_mode & 0777) == 0700);
}

/* The test's point: the file gives libc's every name as ELF and DWARF do. */
static void every_address_named_the_same(void)
{
	CHECK(run_uses_cache(1, "cached"));
	CHECK(cxx_from_cache);
}

static void damaged(const char *what, bool used)
{
	CHECKF(run_uses_cache(61, what) == used, "%s: a damaged file was%s used",
	       what, used ? " not" : "");
	spit(path, fresh, fresh_len);
}

static void truncated_and_corrupt(void)
{
	size_t cuts[] = { 0, 7, 100, 135, 136, fresh_len / 2, fresh_len - 1 };
	uint8_t *b = malloc(fresh_len);

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		CHECK(truncate(path, (off_t)cuts[i]) == 0);
		damaged("truncated", false);
	}
	/* The header and the block checksums: refused at once. */
	size_t head[] = { 0, 8, 16, 30, 64, 72, 90, 100, 112, 120, 130, 140 };
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++) {
		memcpy(b, fresh, fresh_len);
		b[head[i]] ^= 0x40;
		spit(path, b, fresh_len);
		damaged("corrupt header", false);
	}
	/* Deep in the data: the file is mapped, the block fails its check
	 * when a lookup touches it, and the answers are still the right
	 * ones (read again from the ELF). */
	for (size_t k = 1; k < 8; k++) {
		memcpy(b, fresh, fresh_len);
		b[fresh_len * k / 8] ^= 0x40;
		spit(path, b, fresh_len);
		CHECK(run_uses_cache(61, "corrupt block"));
		spit(path, fresh, fresh_len);
	}
	free(b);
}

/* Every flipped byte and every length through decode plus a check of all
 * blocks: a damaged file is never taken as whole. */
static void decode_rejects_every_flip(void)
{
	uint8_t *b = malloc(fresh_len);
	size_t step = fresh_len / 3000 + 1, accepted = 0;
	uint32_t id_len = 0;
	uint64_t key;
	struct sym_cache *c;

	memcpy(&id_len, fresh + 16, 4);
	memcpy(&key, fresh + 64, 8);
	CHECK(sym_cache__decode(fresh, fresh_len, fresh + 24, id_len, key, &c, NULL) == 0);
	CHECK(c && sym_cache__check_all(c));
	sym_cache__free(c);
	for (size_t i = 0; i < fresh_len; i += step) {
		memcpy(b, fresh, fresh_len);
		b[i] ^= 1;
		if (sym_cache__decode(b, fresh_len, fresh + 24, id_len, key, &c, NULL) == 0) {
			accepted += sym_cache__check_all(c);
			sym_cache__free(c);
		}
		if (sym_cache__decode(fresh, i, fresh + 24, id_len, key, &c, NULL) == 0) {
			accepted++;
			sym_cache__free(c);
		}
	}
	CHECKF(accepted == 0, "%zu damaged files accepted", accepted);
	free(b);
}

static void foreign_owned_and_world_writable(void)
{
	char link[4200];

	if (geteuid() == 0) {
		CHECK(chown(path, 65534, 65534) == 0);
		CHECK(!run_uses_cache(61, "foreign-owned"));
		CHECK(chown(path, 0, 0) == 0);
	} else {
		CHECKF(0, "foreign-owned cache file: needs root to make one");
	}
	CHECK(run_uses_cache(61, "own"));
	CHECK(chmod(path, 0666) == 0);
	CHECK(!run_uses_cache(61, "world-writable"));
	CHECK(chmod(path, 0620) == 0);
	CHECK(!run_uses_cache(61, "group-writable"));
	CHECK(chmod(path, 0600) == 0);
	CHECK(run_uses_cache(61, "own"));
	snprintf(link, sizeof(link), "%s/elsewhere.sym", dir);
	CHECK(rename(path, link) == 0);
	CHECK(symlink(link, path) == 0);
	CHECK(!run_uses_cache(61, "symlink"));
	unlink(path);
	CHECK(rename(link, path) == 0);
	CHECK(run_uses_cache(61, "own"));
}

/* Valid files that are not libc's: never used. */
static void stale_file_never_used(void)
{
	uint8_t *b = malloc(fresh_len);

	/* Another build-id, checksums made right. */
	memcpy(b, fresh, fresh_len);
	b[24] ^= 0xff;
	sym_cache__seal(b, fresh_len);
	spit(path, b, fresh_len);
	CHECK(!run_uses_cache(61, "other build-id"));
	/* Symbols made from other debug files (libc6-dbg installed or
	 * removed since). */
	memcpy(b, fresh, fresh_len);
	b[64] ^= 0x01;
	sym_cache__seal(b, fresh_len);
	spit(path, b, fresh_len);
	CHECK(!run_uses_cache(61, "other debug file"));
	/* Another format version. */
	memcpy(b, fresh, fresh_len);
	b[8] = 99;
	sym_cache__seal(b, fresh_len);
	spit(path, b, fresh_len);
	CHECK(!run_uses_cache(61, "other version"));
	spit(path, fresh, fresh_len);
	CHECK(run_uses_cache(61, "own"));
	free(b);
}

/* Writers racing on one file while a reader maps it: every read finds
 * a whole file or none. */
static int real_writer(void)
{
	int before = harness_failed_checks;

	write_file_with(false);
	return harness_failed_checks != before;
}

static void concurrent_writers(void)
{
	harness_race_cache_writers(path, fresh, fresh_len, 4, real_writer, whole);
	CHECK(run_uses_cache(61, "after the race"));
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "ls %s/symbols | grep -q tmp", dir);
	CHECK(system(cmd) != 0);
}

static void cleanup(void)
{
	char cmd[4200];

	free(fresh);
	free(addrs);
	free(want);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST_MAIN("sym_cache", TEST(setup), TEST(every_address_named_the_same),
	  TEST(truncated_and_corrupt), TEST(decode_rejects_every_flip),
	  TEST(foreign_owned_and_world_writable), TEST(stale_file_never_used),
	  TEST(concurrent_writers), TEST(cleanup))
