/* test_debug_cache.c - the cache of uncompressed debug files: a fixture's
 * debug file with zlib-compressed sections is stored once, uncompressed,
 * under the cache's .build-id path; contexts then find the copy first and
 * symbolize the same; unusable cache directories are harmless. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "elf/elf_image.h"
#include "harness.h"
#include "stacksnap.h"

static char tmpdir[] = "/tmp/ss_cachetest.XXXXXX";
static char prog[256], cache[256], debugdir[256];
static int ready;

static const char src[] =
	"int fixture_leaf(int x) { return x * 3 + 1; }\n"
	"int main(int c, char **v) { return fixture_leaf(c); }\n";

static void setup(void)
{
	char srcf[300], dbg[300];
	FILE *f;

	CHECK(mkdtemp(tmpdir) != NULL);
	snprintf(srcf, sizeof(srcf), "%s/p.c", tmpdir);
	snprintf(prog, sizeof(prog), "%s/p", tmpdir);
	snprintf(cache, sizeof(cache), "%s/cache", tmpdir);
	snprintf(debugdir, sizeof(debugdir), "%s/debug", tmpdir);
	f = fopen(srcf, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(src, f);
	fclose(f);
	/* A stripped program whose debug file, found by build-id, has
	 * compressed sections, as Debian's -dbg packages ship them. */
	snprintf(dbg, sizeof(dbg), "%s/p.debug", tmpdir);
	ready = harness_sh("gcc -O1 -g -Wl,--build-id -o %s %s && "
			   "objcopy --only-keep-debug --compress-debug-sections=zlib %s %s && "
			   "strip --strip-debug %s && "
			   "id=$(readelf -n %s | awk '/Build ID/{print $3}') && "
			   "mkdir -p %s/.build-id/$(echo $id | cut -c1-2) && "
			   "mv %s %s/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug",
			   prog, srcf, prog, dbg, prog, prog, debugdir, dbg, debugdir) == 0;
	CHECK(ready);
}

static int count_compressed(const char *path)
{
	char cmd[600];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "readelf -S -W %s | grep -c ' [A-Z]*C[A-Z]* *[0-9]* *[0-9]* *[0-9]*$'", path);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

/* Symbolizes fixture_leaf through a fresh context; returns the path of the
 * debug file the module used (static buffer), "" when none. */
static const char *symbolize_leaf(const char *cache_dir, const char **name)
{
	static char used[4096];
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .debug_dirs = debugdir,
		       .cache_dir = cache_dir);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&o);
	struct stacksnap_addrspace *as = stacksnap_addrspace__new(ctx);
	STACKSNAP_OPTS(stacksnap_mapping, m, .start = 0x400000, .end = 0x800000,
		       .offset = 0, .path = prog);
	struct elf_image *img;
	struct stacksnap_sym sym;
	static char fn[256];
	uint64_t addr = 0;

	used[0] = fn[0] = 0;
	*name = fn;
	if (elf_image__open(prog, NULL, &img))
		return used;
	/* Map the whole file at 0x400000 from offset 0: the first PT_LOAD. */
	m.end = 0x400000 + ((img->size + 0xfff) & ~0xfffull) + 0x10000;
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "nm %s | awk '/ T fixture_leaf/{print $1}'", prog);
	FILE *p = popen(cmd, "r");
	if (p && fscanf(p, "%lx", &addr) != 1)
		addr = 0;
	if (p)
		pclose(p);
	CHECK(addr != 0);
	if (stacksnap_addrspace__add_mapping(as, &m) == 0 &&
	    stacksnap_addrspace__symbolize(as, 0x400000 + addr + 2, false, 0, &sym, 1) == 1 &&
	    sym.function)
		snprintf(fn, sizeof(fn), "%s", sym.function);
	const struct as_map *am = addrspace__find(as, 0x400000 + addr);
	if (am && am->mod && am->mod->debug)
		snprintf(used, sizeof(used), "%s", am->mod->debug->path);
	elf_image__free(img);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return used;
}

static void stored_once_then_found(void)
{
	const char *name, *used;

	if (!ready)
		return;
	/* Without a cache: the compressed file from the debug directory. */
	used = symbolize_leaf(NULL, &name);
	CHECKF(strstr(used, debugdir) == used, "used %s", used);
	CHECKF(count_compressed(used) > 0, "%s has no compressed section", used);
	CHECK(!strcmp(name, "fixture_leaf"));
	/* First context with the cache: stores the copy and uses it. */
	used = symbolize_leaf(cache, &name);
	CHECKF(strstr(used, cache) == used, "used %s", used);
	CHECK(!strcmp(name, "fixture_leaf"));
	CHECKF(count_compressed(used) == 0, "cached copy %s still compressed", used);
	/* The copy is a valid ELF with the program's build-id. */
	struct elf_image *a, *b;
	CHECK(elf_image__open(used, NULL, &a) == 0);
	CHECK(elf_image__open(prog, NULL, &b) == 0);
	CHECK(a->build_id_len == 20 && b->build_id_len == 20 &&
	      !memcmp(a->build_id, b->build_id, 20));
	elf_image__free(a);
	elf_image__free(b);
	struct stat st1, st2;
	char first[4096];
	snprintf(first, sizeof(first), "%s", used);
	CHECK(stat(first, &st1) == 0);
	/* A later context finds the copy first and does not rewrite it. */
	used = symbolize_leaf(cache, &name);
	CHECK(!strcmp(used, first));
	CHECK(!strcmp(name, "fixture_leaf"));
	CHECK(stat(first, &st2) == 0 && st1.st_ino == st2.st_ino &&
	      st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
}

static void unusable_cache_dir_is_harmless(void)
{
	const char *name, *used;
	char file[300];

	if (!ready)
		return;
	/* The cache "directory" is a regular file: nothing can be stored. */
	snprintf(file, sizeof(file), "%s/not-a-dir", tmpdir);
	CHECK(harness_sh("touch %s", file) == 0);
	used = symbolize_leaf(file, &name);
	CHECK(strstr(used, debugdir) == used);
	CHECK(!strcmp(name, "fixture_leaf"));
}

static void cleanup(void)
{
	harness_sh("rm -rf %s", tmpdir);
}

TEST_MAIN("debug_cache", TEST(setup), TEST(stored_once_then_found),
	  TEST(unusable_cache_dir_is_harmless), TEST(cleanup))
