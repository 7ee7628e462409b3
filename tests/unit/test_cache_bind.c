/* test_cache_bind.c - what cache entries are bound to (base/cache_bind.h):
 * BLAKE2b-256 against RFC 7693's function as Python's hashlib computes it;
 * a record matches its own file by identity, a copy by its bytes, and a
 * file with the same build-id but other bytes not at all; and the
 * context's modules: a copy of libc with one byte of .eh_frame changed is
 * another module (its table is not libc's), a byte-identical copy is the
 * same one, and a table cache file written for the changed copy is not
 * used for libc. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/cache_bind.h"
#include "elf/elf_image.h"
#include "harness.h"
#include "stacksnap.h"
#include "table/table_cache.h"

static char dir[] = "/tmp/stacksnap-bind-XXXXXX";
static char libc_path[4096], changed[4200], same[4200];

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* Known answers from Python's hashlib.blake2b(digest_size=32). */
static void blake2b_known_answers(void)
{
	uint8_t d[32], *b = malloc(1280);
	char h[65];

	blake2b_256((const uint8_t *)"abc", 3, d);
	hex(d, h);
	CHECKF(!strcmp(h, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"), "%s", h);
	blake2b_256(NULL, 0, d);
	hex(d, h);
	CHECKF(!strcmp(h, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"), "%s", h);
	for (int i = 0; b && i < 1280; i++)
		b[i] = (uint8_t)i;
	blake2b_256(b, 1280, d);
	hex(d, h);
	CHECKF(!strcmp(h, "82628cbfc9689e234b0923a531f4578fe2e7138a03e2f81ed6cde97517336650"), "%s", h);
	free(b);
}

static void records_match_file_then_bytes(void)
{
	uint8_t bytes[300], rec[CACHE_BIND_SIZE];
	struct cache_source s = { 1, 2, 300, 3, 4, bytes, sizeof(bytes) };

	memset(bytes, 7, sizeof(bytes));
	cache_bind__put(rec, &s);
	CHECK(cache_bind__check(rec, &s) == CACHE_BIND_SAME_FILE);
	struct cache_source copy = s;
	copy.ino = 99;
	CHECK(cache_bind__check(rec, &copy) == CACHE_BIND_SAME_BYTES);
	copy.ctime_ns = 5; /* the same inode changed since */
	copy.ino = 2;
	CHECK(cache_bind__check(rec, &copy) == CACHE_BIND_SAME_BYTES);
	bytes[150] = 8;
	CHECK(cache_bind__check(rec, &copy) == CACHE_BIND_OTHER);
	/* Bytes from memory (no inode) match by digest only. */
	struct cache_source mem = { 0, 0, 300, 0, 0, bytes, sizeof(bytes) };
	cache_bind__put(rec, &mem);
	CHECK(cache_bind__check(rec, &mem) == CACHE_BIND_SAME_BYTES);
	bytes[0] = 9;
	CHECK(cache_bind__check(rec, &mem) == CACHE_BIND_OTHER);
}

static void setup(void)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	const struct as_map *m = as ? addrspace__find(as, (uint64_t)(uintptr_t)&fprintf) : NULL;
	struct elf_image *img = NULL;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(m && m->mod);
	if (m && m->mod)
		snprintf(libc_path, sizeof(libc_path), "%s", m->mod->img->path);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	snprintf(changed, sizeof(changed), "%s/changed.so", dir);
	snprintf(same, sizeof(same), "%s/same.so", dir);
	CHECK(harness_sh("cp %s %s && cp %s %s", libc_path, changed, libc_path,
			 same) == 0);
	/* One byte in the middle of .eh_frame: same build-id, other rows. */
	CHECK(elf_image__open(libc_path, NULL, &img) == 0 && img->eh_frame.size);
	if (img) {
		FILE *f = fopen(changed, "r+b");
		long at = (long)(img->eh_frame.offset + img->eh_frame.size / 2);
		int c;

		CHECK(f && fseek(f, at, SEEK_SET) == 0 && (c = fgetc(f)) != EOF &&
		      fseek(f, at, SEEK_SET) == 0 && fputc(c ^ 0x5a, f) != EOF);
		if (f)
			fclose(f);
	}
	elf_image__free(img);
}

static void modules_by_bytes_not_build_id(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .cache_dir = dir);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&o);
	struct module *real = NULL, *other = NULL, *copy = NULL;

	CHECK(module__get_file(ctx, changed, changed, NULL, 0, &other) == 0);
	CHECK(module__get_file(ctx, libc_path, libc_path, NULL, 0, &real) == 0);
	CHECK(module__get_file(ctx, same, same, NULL, 0, &copy) == 0);
	CHECK(real && other && copy);
	if (!real || !other || !copy)
		goto out;
	CHECK(real->img->build_id_len &&
	      real->img->build_id_len == other->img->build_id_len &&
	      !memcmp(real->img->build_id, other->img->build_id,
		      real->img->build_id_len));
	CHECKF(other != real, "a file with other bytes shares libc's module");
	CHECKF(copy == real, "a byte-identical copy is another module");
	/* A caller's build-id does not find a module of another path. */
	struct module *byid = NULL;
	CHECK(module__get_file(ctx, libc_path, libc_path, other->img->build_id,
			       other->img->build_id_len, &byid) == 0);
	CHECK(byid == real);
out:
	stacksnap_ctx__free(ctx);
}

/* A table cache file written from the changed copy (under libc's
 * build-id) is refused for libc, and accepted for a byte-identical copy
 * of the file it was made from. */
static void table_file_of_other_bytes_refused(void)
{
	struct elf_image *a = NULL, *b = NULL;
	struct unwind_table *t = NULL, *got = NULL;
	uint64_t sig[TABLE_CACHE_MAX_SIGRETURN];
	unsigned nsig = 0;

	CHECK(elf_image__open(changed, NULL, &a) == 0);
	CHECK(elf_image__open(libc_path, NULL, &b) == 0);
	if (!a || !b)
		goto out;
	struct cfi_input in = { a->eh_frame.data, a->eh_frame.size,
				a->eh_frame.vaddr, 1 };
	struct cache_source fa = elf_image__source(a), fb = elf_image__source(b);
	struct table_cache_key ka = { a->build_id, a->build_id_len, &in, 1, &fa };
	if (unwind_table__compile(&in, 1, NULL, &t) == 0) {
		CHECK(table_cache__store(dir, &ka, t, sig, 0, NULL) == 0);
		struct cfi_input inb = { b->eh_frame.data, b->eh_frame.size,
					 b->eh_frame.vaddr, 1 };
		struct table_cache_key kb = { b->build_id, b->build_id_len, &inb, 1, &fb };
		CHECK(table_cache__load(dir, &kb, NULL, sig, &nsig, &got) == -EINVAL &&
		      !got);
		unwind_table__free(got);
		got = NULL;
		/* The file it was made from: used. */
		CHECK(table_cache__load(dir, &ka, NULL, sig, &nsig, &got) == 0 && got);
		unwind_table__free(got);
		/* A key without its file: never used. */
		ka.file = NULL;
		got = NULL;
		CHECK(table_cache__load(dir, &ka, NULL, sig, &nsig, &got) == -EINVAL);
		unwind_table__free(got);
	}
	unwind_table__free(t);
out:
	elf_image__free(a);
	elf_image__free(b);
}

static void cleanup(void)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

TEST_MAIN("cache_bind", TEST(blake2b_known_answers),
	  TEST(records_match_file_then_bytes), TEST(setup),
	  TEST(modules_by_bytes_not_build_id),
	  TEST(table_file_of_other_bytes_refused), TEST(cleanup))
