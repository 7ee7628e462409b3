/* test_php.c - the PHP frame reader (src/runtime/php/) over a synthetic
 * memory image laid out as PHP 8.2's structures: executor_globals whose
 * VM stack page holds a chain of five zend_execute_data (sleep, an
 * internal function; a closure of class Handler entered from C; the
 * internal array_map calling it; an include'd file's code; the script's
 * {main}), their functions, a class entry, zend_strings and opcodes.
 * Checks the names PHP's backtraces give, files and lines, the merge at
 * two execute_ex frames, and that corrupt images (a VM stack page that
 * does not match EG, a function of no known type, a chain that loops, an
 * opline outside its function) give no wrong frame. PHP_SEED_OUT=FILE
 * writes the image (the seed fuzz/corpus/fuzz_php_frames/seed_82). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "runtime/php/php.h"

#define BASE 0x100000ull
#define SIZE 0x3000

static void put64(uint8_t *m, uint64_t off, uint64_t v)
{
	memcpy(m + off, &v, 8);
}

static void put32(uint8_t *m, uint64_t off, uint32_t v)
{
	memcpy(m + off, &v, 4);
}

/* A zend_string at off. */
static void put_str(uint8_t *m, uint64_t off, const char *s)
{
	put32(m, off, 1);			/* refcount */
	put32(m, off + 4, 6);			/* IS_STRING */
	put64(m, off + 16, strlen(s));
	memcpy(m + off + 24, s, strlen(s));
}

/* A frame at off: func, opline, call info, prev (0: none). */
static void put_frame(uint8_t *m, uint64_t off, uint64_t func, uint64_t opline,
		      uint32_t info, uint64_t prev)
{
	put64(m, off, opline);
	put64(m, off + 24, func);
	put32(m, off + 40, info);
	put64(m, off + 48, prev);
}

/* A user function at off: name (0: top-level code), scope, last,
 * opcodes, filename. */
static void put_user(uint8_t *m, uint64_t off, uint64_t name, uint64_t scope,
		     uint32_t last, uint64_t opcodes, uint64_t file)
{
	m[off] = 2;
	put64(m, off + 8, name);
	put64(m, off + 16, scope);
	put32(m, off + 80, last);
	put64(m, off + 88, opcodes);
	put64(m, off + 152, file);
}

#define TOP (1u << 17)

static void build(uint8_t *m)
{
	memset(m, 0, SIZE);
	/* executor_globals at BASE; the VM stack page at 0x1000 */
	put64(m, 456, BASE + 0x1400);		/* vm_stack_top */
	put64(m, 464, BASE + 0x2000);		/* vm_stack_end */
	put64(m, 472, BASE + 0x1000);		/* vm_stack */
	put64(m, 480, 0x1000);
	put64(m, 488, BASE + 0x1100);		/* current_execute_data */
	put64(m, 0x1000, BASE + 0x1400);	/* page: top, end */
	put64(m, 0x1008, BASE + 0x2000);
	/* the chain */
	put_frame(m, 0x1100, BASE + 0x2000, 0, 0, BASE + 0x1180);
	put_frame(m, 0x1180, BASE + 0x2100, BASE + 0x2c20, TOP | 0x308, BASE + 0x1200);
	put_frame(m, 0x1200, BASE + 0x2200, 0, 0, BASE + 0x1280);
	put_frame(m, 0x1280, BASE + 0x2300, BASE + 0x2d00, 1u << 16, BASE + 0x1300);
	put_frame(m, 0x1300, BASE + 0x2480, BASE + 0x2e40, TOP | (1u << 16), 0);
	/* functions */
	m[0x2000] = 1;				/* sleep */
	put64(m, 0x2008, BASE + 0x2800);
	put_user(m, 0x2100, BASE + 0x2840, BASE + 0x2400, 3, BASE + 0x2c00,
		 BASE + 0x28c0);
	m[0x2200] = 1;				/* array_map */
	put64(m, 0x2208, BASE + 0x2900);
	put_user(m, 0x2300, 0, 0, 2, BASE + 0x2d00, BASE + 0x2940);
	put_user(m, 0x2480, 0, 0, 4, BASE + 0x2e00, BASE + 0x28c0);
	put64(m, 0x2400 + 8, BASE + 0x2880);	/* class entry: name */
	put_str(m, 0x2800, "sleep");
	put_str(m, 0x2840, "{closure}");
	put_str(m, 0x2880, "Handler");
	put_str(m, 0x28c0, "/t/a.php");
	put_str(m, 0x2900, "array_map");
	put_str(m, 0x2940, "/t/inc.php");
	/* opcodes: lineno at 24, opcode at 28, extended_value at 20 */
	put32(m, 0x2c20 + 24, 7);
	put32(m, 0x2d00 + 24, 3);
	put32(m, 0x2e40 + 24, 12);
	m[0x2e40 + 28] = 73;			/* ZEND_INCLUDE_OR_EVAL */
	put32(m, 0x2e40 + 20, 1 << 1);		/* ZEND_INCLUDE */
}

static struct stacksnap_mem *capture(const uint8_t *m, struct php_runtime *rt,
				     struct php_capture *cap)
{
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(m, SIZE, BASE);

	memset(rt, 0, sizeof(*rt));
	rt->found = true;
	rt->layout = php_layout__find("8.2.36");
	rt->eg = BASE;
	rt->exec_start = 0x1000;
	rt->exec_end = 0x2000;
	if (mem && php_capture__take(rt, mem, cap))
		CHECK(!"take");
	return mem;
}

static void test_frames(void)
{
	static uint8_t m[SIZE];
	struct php_runtime rt;
	struct php_capture cap = { 0 };
	struct php_resolver res;
	struct stacksnap_mem *mem;
	struct php_frame *fr;
	size_t n;
	const char *seed = getenv("PHP_SEED_OUT");

	build(m);
	if (seed) {
		FILE *f = fopen(seed, "wb");

		CHECK(f && fwrite(m, 1, SIZE, f) == SIZE);
		if (f)
			fclose(f);
	}
	mem = capture(m, &rt, &cap);
	CHECK(mem && cap.nframes == 5 && !cap.end);
	php_resolver__init(&res, &rt, mem);
	CHECK(php_resolve(&res, &cap, &fr, &n) == 0 && n == 5);
	if (n == 5) {
		CHECK(!strcmp(fr[0].function, "sleep") && !fr[0].file && !fr[0].line &&
		      !fr[0].top);
		CHECK(!strcmp(fr[1].function, "Handler::{closure}") &&
		      !strcmp(fr[1].file, "/t/a.php") && fr[1].line == 7 && fr[1].top);
		CHECK(!strcmp(fr[2].function, "array_map") && !fr[2].file);
		CHECKF(!strcmp(fr[3].function, "include") &&
		       !strcmp(fr[3].file, "/t/inc.php") && fr[3].line == 3 && !fr[3].top,
		       "%s", fr[3].function);
		CHECK(!strcmp(fr[4].function, "{main}") && fr[4].line == 12 && fr[4].top);

		/* execute_ex at native frames 1 and 4: the closure's call
		   runs sleep and the closure, the outer one the rest. */
		struct stacksnap_frame native[6] = {
			{ .pc = 0x10 }, { .pc = 0x1001 }, { .pc = 0x20 },
			{ .pc = 0x30 }, { .pc = 0x1002 }, { .pc = 0x40 },
		};
		/* execute_ex and its cold part */
		const uint64_t exec[2][2] = { { 0x1000, 0x2000 }, { 0x8000, 0x9000 } };
		struct stacksnap_runtime_frame out[8];
		size_t k = php_merge(fr, n, native, 6, exec, 2, out, 8);

		CHECK(k == 5 && out[0].native_index == 1 && out[1].native_index == 1 &&
		      out[2].native_index == 4 && out[4].native_index == 4 &&
		      out[0].runtime == STACKSNAP_RUNTIME_PHP && out[1].line == 7);
		/* One execute_ex only (no second in the walk): the rest left
		   over, at the end. */
		native[4].pc = 0x50;
		k = php_merge(fr, n, native, 6, exec, 2, out, 8);
		CHECK(k == 5 && out[1].native_index == 1 && out[2].native_index == 6);
		/* The closure innermost (no callee frame): it runs VM code,
		   its line unknown (the opline in memory may be stale); the
		   lines of frames that called out are kept. The VM's cold
		   part counts as execute_ex. */
		native[4].pc = 0x8001;
		k = php_merge(fr + 1, n - 1, native, 6, exec, 2, out, 8);
		CHECK(k == 4 && !strcmp(out[0].function, "Handler::{closure}") &&
		      out[0].line == 0 && out[1].line == 0 && out[2].line == 3 &&
		      out[0].native_index == 1 && out[1].native_index == 4);
		native[4].pc = 0x50;
		/* A thread without execute_ex runs no PHP. */
		native[1].pc = 0x60;
		CHECK(php_merge(fr, n, native, 6, exec, 2, out, 8) == 0);
		free(fr);
	}
	php_resolver__free(&res);
	stacksnap_mem__free(mem);

	/* No script running: no frames, no reason. */
	build(m);
	put64(m, 488, 0);
	mem = capture(m, &rt, &cap);
	CHECK(cap.nframes == 0 && !cap.end);
	stacksnap_mem__free(mem);
	php_capture__free(&cap);
}

static void test_corrupt(void)
{
	static uint8_t m[SIZE];
	struct php_runtime rt;
	struct php_capture cap = { 0 };
	struct php_resolver res;
	struct stacksnap_mem *mem;
	struct php_frame *fr;
	size_t n;

	/* EG read with another layout: the VM stack page does not end
	   where EG says. No frames, a reason. */
	build(m);
	put64(m, 0x1008, BASE + 0x1800);
	mem = capture(m, &rt, &cap);
	CHECK(cap.nframes == 0 && cap.end);
	stacksnap_mem__free(mem);

	/* A function of no known type: "<unknown function>" without a
	   file; an opline outside its function: no line; the chain looping
	   back: cut with a reason. */
	build(m);
	m[0x2200] = 9;
	put64(m, 0x1180, BASE + 0x2d00);
	put64(m, 0x1280 + 48, BASE + 0x1280);
	mem = capture(m, &rt, &cap);
	CHECK(cap.nframes == 4 && cap.end && strstr(cap.end, "loops"));
	php_resolver__init(&res, &rt, mem);
	CHECK(php_resolve(&res, &cap, &fr, &n) == 0 && n == 4);
	if (n == 4) {
		CHECK(!strcmp(fr[2].function, "<unknown function>") && !fr[2].file);
		CHECK(!strcmp(fr[1].function, "Handler::{closure}") && fr[1].line == 0);
		/* include's caller is gone: its code is named as a script's. */
		CHECK(!strcmp(fr[3].function, "{main}"));
		free(fr);
	}
	php_resolver__free(&res);
	stacksnap_mem__free(mem);

	/* A name that is not a zend_string: the function is not named. */
	build(m);
	put32(m, 0x2840 + 4, 7);
	mem = capture(m, &rt, &cap);
	php_resolver__init(&res, &rt, mem);
	CHECK(php_resolve(&res, &cap, &fr, &n) == 0 && n == 5 &&
	      !strcmp(fr[1].function, "<unknown function>"));
	free(fr);
	php_resolver__free(&res);
	stacksnap_mem__free(mem);
	php_capture__free(&cap);

	/* An unknown version has no layout. */
	CHECK(!php_layout__find("8.3.0") && !php_layout__find("") &&
	      php_layout__find("8.2.0"));
	CHECK(php_image_candidate("/usr/sbin/php-fpm8.2") &&
	      php_image_candidate("/usr/lib/libphp8.2.so") &&
	      !php_image_candidate("/usr/bin/python3"));
}

int main(int argc, char **argv)
{
	static const struct harness_test tests[] = {
		{ "frames", test_frames },
		{ "corrupt", test_corrupt },
	};

	return harness_run("php", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
