/* test_ruby.c - the Ruby frame reader (src/runtime/ruby/) over a
 * synthetic memory image laid out as Ruby 3.1's structures: a thread
 * pointer whose DTV leads to ruby_current_ec, an execution context whose
 * VM stack ends in three control frames (a C method, named through its
 * method entry and the symbol table, a method, the dummy outermost frame), an iseq with an embedded path String, a heap label
 * String, and an insns_info table looked up through the succinct index
 * table. Checks the named frames, the merge at rb_vm_exec and that
 * corrupt images (a control frame pointer outside the VM stack, an
 * unreadable iseq) give no wrong frame. RUBY_SEED_OUT=FILE writes the
 * image (the seed fuzz/corpus/fuzz_ruby_frames/seed_31). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "runtime/ruby/ruby.h"

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

/* The image; see the file's comment. Instructions starting an
 * insns_info entry: 0, 2, 5 (lines 5, 6, 7). */
static void build(uint8_t *m)
{
	uint64_t end = BASE + 0x1400, cfp = end - 3 * 64;
	uint64_t w = 0;

	memset(m, 0, SIZE);
	put64(m, 0x8, BASE + 0x100);		/* tcbhead_t.dtv */
	put64(m, 0x100 + 16, BASE + 0x200);	/* dtv[1].val */
	put64(m, 0x200, BASE + 0x300);		/* ruby_current_ec */
	put64(m, 0x300, BASE + 0x1000);		/* ec->vm_stack */
	put64(m, 0x308, 0x400 / 8);		/* ec->vm_stack_size */
	put64(m, 0x310, cfp);			/* ec->cfp */
	/* the VM's thread list: one thread, its pthread_t's tid 42 */
	put64(m, 0x20, BASE + 0x400);		/* ruby_current_vm_ptr */
	put64(m, 0x400 + 40, BASE + 0x500);	/* vm->ractor.main_thread */
	put64(m, 0x500, BASE + 0x500);		/* lt_node.next: itself */
	put64(m, 0x500 + 32, BASE + 0x400);	/* thread->vm */
	put64(m, 0x500 + 80, BASE);		/* thread->thread_id */
	put32(m, 0x2d0, 42);			/* struct pthread's tid */
	/* cfunc frame: no iseq, VM_FRAME_MAGIC_CFUNC | CFRAME | LOCAL;
	   ep[-2] its method entry (imemo_ment), whose definition's
	   original_id is ID 0x141 (serial 20) */
	put64(m, cfp - BASE + 32, BASE + 0x1100);
	put64(m, 0x1100, 0x55550083);
	put64(m, 0x10f0, BASE + 0x2a00);
	put64(m, 0x2a00, 0x1a | (6 << 12));
	put64(m, 0x2a00 + 16, BASE + 0x2a40);
	put64(m, 0x2a40 + 32, 0x141);
	/* ruby_global_symbols: last_id 100, ids a heap Array of one unit,
	   a heap Array of 1024 [String, Symbol] slots: slot 40 "pop" */
	put32(m, 0x2b00, 100);
	put64(m, 0x2b10, BASE + 0x2b40);
	put64(m, 0x2b40, 0x07);
	put64(m, 0x2b40 + 16, 1);
	put64(m, 0x2b40 + 32, BASE + 0x2b80);
	put64(m, 0x2b80, BASE + 0x2c00);
	put64(m, 0x2c00, 0x07);
	put64(m, 0x2c00 + 16, 1024);
	put64(m, 0x2c00 + 32, BASE + 0x2c40);
	put64(m, 0x2c40 + 40 * 8, BASE + 0x2e00);
	put64(m, 0x2e00, 0x05 | (3ull << 14));
	memcpy(m + 0x2e10, "pop", 3);
	/* method frame: pc after instruction 2, FINISH */
	put64(m, cfp - BASE + 64 + 0, BASE + 0x2400 + 3 * 8);
	put64(m, cfp - BASE + 64 + 16, BASE + 0x2000);
	put64(m, cfp - BASE + 64 + 32, BASE + 0x1108);
	put64(m, 0x1108, 0x20);
	/* the dummy outermost frame: an iseq with a pc, left out */
	put64(m, cfp - BASE + 128 + 0, BASE + 0x2400);
	put64(m, cfp - BASE + 128 + 16, BASE + 0x2000);
	put64(m, cfp - BASE + 128 + 32, BASE + 0x1110);
	put64(m, 0x1110, 0x20);
	/* iseq, body */
	put64(m, 0x2000 + 16, BASE + 0x2100);
	put32(m, 0x2100 + 4, 10);
	put64(m, 0x2100 + 8, BASE + 0x2400);
	put64(m, 0x2100 + 64, BASE + 0x2600);
	put64(m, 0x2100 + 80, BASE + 0x2700);
	put64(m, 0x2100 + 88, (5 << 1) | 1);
	put64(m, 0x2100 + 120, BASE + 0x2800);
	put64(m, 0x2100 + 136, 3);
	put64(m, 0x2100 + 144, BASE + 0x2900);
	/* path: embedded String "t.rb" */
	put64(m, 0x2600, 0x05 | (4ull << 14));
	memcpy(m + 0x2610, "t.rb", 4);
	/* label: heap String "take" */
	put64(m, 0x2700, 0x05 | (1ull << 13));
	put64(m, 0x2710, 4);
	put64(m, 0x2718, BASE + 0x2780);
	memcpy(m + 0x2780, "take", 4);
	/* insns_info entries {line_no, node_id, events} */
	put32(m, 0x2800, 5);
	put32(m, 0x2800 + 12, 6);
	put32(m, 0x2800 + 24, 7);
	/* succ_index_table.imm_part: rank of x for x < 9 */
	for (unsigned x = 0; x < 9; x++)
		w |= (uint64_t)(x < 2 ? 1 : x < 5 ? 2 : 3) << (x * 7);
	put64(m, 0x2900, w);
	for (unsigned i = 1; i < 6; i++) {
		w = 0;
		for (unsigned j = 0; j < 9; j++)
			w |= 3ull << (j * 7);
		put64(m, 0x2900 + i * 8, w);
	}
}

static int capture(uint8_t *m, struct rb_runtime *rt, struct rb_capture *cap,
		   struct stacksnap_mem **mem)
{
	memset(rt, 0, sizeof(*rt));
	rt->found = true;
	rt->layout = rb_layout__find("3.1.2");
	rt->tls_modid = 1;
	rt->vm_ptr_addr = BASE + 0x20;
	rt->symbols = BASE + 0x2b00;
	rt->exec_start = 0x1000;
	rt->exec_end = 0x2000;
	*mem = stacksnap_mem__new_copy(m, SIZE, BASE);
	if (!*mem)
		return -1;
	return rb_capture__thread(rt, *mem, 42, BASE, cap);
}

static void test_frames(void)
{
	static uint8_t m[SIZE];
	struct rb_runtime rt;
	struct rb_capture cap = { 0 };
	struct rb_resolver res;
	struct stacksnap_mem *mem;
	struct rb_frame *fr;
	size_t n;
	const char *seed = getenv("RUBY_SEED_OUT");

	build(m);
	if (seed) {
		FILE *f = fopen(seed, "wb");

		CHECK(f && fwrite(m, 1, SIZE, f) == SIZE);
		if (f)
			fclose(f);
	}
	CHECK(capture(m, &rt, &cap, &mem) == 0);
	CHECK(cap.nthreads == 1 && rb_capture__find(&cap, 42));
	/* A thread read without stopping it: its thread pointer from the
	   VM's list. */
	CHECK(rb_capture__list(&rt, mem, &cap) == 0 && cap.nlisted == 1 &&
	      rb_capture__listed_tp(&cap, 42) == BASE &&
	      rb_capture__listed_tp(&cap, 43) == 0);
	CHECK(cap.nthreads == 1 && cap.threads[0].n == 3 && !cap.threads[0].end);
	rb_resolver__init(&res, &rt, mem);
	CHECK(rb_resolve__thread(&res, &cap, &cap.threads[0], &fr, &n) == 0);
	CHECK(n == 3);
	if (n == 3) {
		CHECK(fr[0].ruby && fr[0].cfunc && fr[1].ruby && !fr[2].ruby);
		CHECK(!strcmp(fr[1].function, "take") && !strcmp(fr[1].file, "t.rb"));
		CHECKF(fr[1].line == 6, "line %u", fr[1].line);
		CHECK(fr[1].finish);
		/* The C method by its name, at its caller's place. */
		CHECKF(!strcmp(fr[0].function, "pop") && !strcmp(fr[0].file, "t.rb") &&
		       fr[0].line == 6, "%s %s:%u", fr[0].function, fr[0].file,
		       fr[0].line);

		/* rb_vm_exec at native frame 2: the C method and the method
		   frame replace it; frames after it stay. */
		struct stacksnap_frame native[4] = {
			{ .pc = 0x10 }, { .pc = 0x20 }, { .pc = 0x1001 }, { .pc = 0x30 },
		};
		struct stacksnap_runtime_frame out[8];
		size_t k = rb_merge(fr, n, native, 4, 0x1000, 0x2000, out, 8);

		CHECK(k == 2 && out[1].native_index == 2 && out[0].native_index == 2 &&
		      out[1].runtime == STACKSNAP_RUNTIME_RUBY && out[1].line == 6 &&
		      !strcmp(out[0].function, "pop"));
		/* No rb_vm_exec frame in the walk: left over, at the end. */
		native[2].pc = 0x40;
		k = rb_merge(fr, n, native, 4, 0x1000, 0x2000, out, 8);
		CHECK(k == 2 && out[0].native_index == 4);
		free(fr);
	}
	rb_resolver__free(&res);
	rb_capture__free(&cap);
	stacksnap_mem__free(mem);

	/* The positions array (before Ruby encodes it) gives the same. */
	uint8_t entries[36] = { 0 };
	uint32_t pos[3] = { 0, 2, 5 };

	entries[0] = 5;
	entries[12] = 6;
	entries[24] = 7;
	CHECK(rb_insn_line(entries, 3, 12, pos, NULL, 0, 0) == 5);
	CHECK(rb_insn_line(entries, 3, 12, pos, NULL, 0, 4) == 6);
	CHECK(rb_insn_line(entries, 3, 12, pos, NULL, 0, 9) == 7);
	CHECK(rb_insn_line(entries, 3, 12, NULL, NULL, 0, 4) == 0);
}

static void test_corrupt(void)
{
	static uint8_t m[SIZE];
	struct rb_runtime rt;
	struct rb_capture cap = { 0 };
	struct rb_resolver res;
	struct stacksnap_mem *mem;
	struct rb_frame *fr;
	size_t n;

	/* cfp not inside the VM stack: no frames, a reason. */
	build(m);
	put64(m, 0x310, BASE + 0x2000);
	CHECK(capture(m, &rt, &cap, &mem) == 0);
	CHECK(cap.nthreads == 1 && cap.threads[0].n == 0 && cap.threads[0].end);
	stacksnap_mem__free(mem);
	rb_capture__clear(&cap);

	/* The iseq's body points outside memory: "<unknown iseq>", not a
	   wrong name. */
	build(m);
	put64(m, 0x2000 + 16, 0x7000000);
	CHECK(capture(m, &rt, &cap, &mem) == 0);
	rb_resolver__init(&res, &rt, mem);
	CHECK(rb_resolve__thread(&res, &cap, &cap.threads[0], &fr, &n) == 0);
	CHECK(n == 3 && !strcmp(fr[1].function, "<unknown iseq>") && fr[1].line == 0);
	free(fr);
	rb_resolver__free(&res);
	stacksnap_mem__free(mem);
	rb_capture__clear(&cap);

	/* No thread pointer, or no ec in the TLS block: not a Ruby thread. */
	build(m);
	put64(m, 0x200, 0);
	CHECK(capture(m, &rt, &cap, &mem) == 0 && cap.nthreads == 0);
	stacksnap_mem__free(mem);
	rb_capture__free(&cap);

	/* The C method's entry is no method entry (an imemo_cref), or the
	   symbol table is unknown: "<unknown cfunc>", never a wrong name. */
	for (int c = 0; c < 2; c++) {
		build(m);
		if (c == 0)
			put64(m, 0x2a00, 0x1a | (1 << 12));
		CHECK(capture(m, &rt, &cap, &mem) == 0);
		if (c == 1)
			rt.symbols = 0;
		rb_resolver__init(&res, &rt, mem);
		CHECK(rb_resolve__thread(&res, &cap, &cap.threads[0], &fr, &n) == 0);
		CHECK(n == 3 && fr[0].ruby && !strcmp(fr[0].function, "<unknown cfunc>") &&
		      !strcmp(fr[1].function, "take"));
		free(fr);
		rb_resolver__free(&res);
		stacksnap_mem__free(mem);
		rb_capture__free(&cap);
	}

	/* The method frame's env moved off the VM stack (a block's env a
	   Proc kept, on the heap): read on its own, the same frame. */
	build(m);
	put64(m, 0x1400 - 2 * 64 + 32, BASE + 0x2f00);	/* its ep */
	put64(m, 0x2f00, 0x20);
	put64(m, 0x1108, 0);
	CHECK(capture(m, &rt, &cap, &mem) == 0);
	rb_resolver__init(&res, &rt, mem);
	CHECK(rb_resolve__thread(&res, &cap, &cap.threads[0], &fr, &n) == 0);
	CHECK(n == 3 && fr[1].ruby && fr[1].finish && !strcmp(fr[1].function, "take") &&
	      !strcmp(fr[0].function, "pop"));
	free(fr);
	rb_resolver__free(&res);
	stacksnap_mem__free(mem);
	rb_capture__free(&cap);

	/* An unknown version has no layout. */
	CHECK(!rb_layout__find("3.2.0") && !rb_layout__find("") && rb_layout__find("3.1.4"));
}

/* The symbol table found in the code of Debian's libruby 3.1.2:
 * rb_id2str's tail jump, then get_id_serial_entry's `cmp %edi,
 * last_id(%rip)` and `mov ids(%rip), %rdi`. */
static void test_symbol_code(void)
{
	static const uint8_t id2str[] = {
		0x48, 0x89, 0xf8, 0x48, 0xc1, 0xe8, 0x04, 0x48, 0x81, 0xff,
		0xa9, 0x00, 0x00, 0x00, 0x0f, 0x47, 0xf8, 0x31, 0xf6,
		0xe9, 0x78, 0xdd, 0xff, 0xff,
	};
	static const uint8_t entry[] = {
		0x85, 0xff, 0x74, 0x67,
		0x39, 0x3d, 0x71, 0x85, 0x1a, 0x00,	/* at 0x206c49 */
		0x72, 0x5f,
		0x48, 0x8b, 0x3d, 0x78, 0x85, 0x1a, 0x00,
		0x89, 0xde,
	};

	CHECK(rb_code_jmp(id2str, sizeof(id2str), 0x208e80) == 0x206c10);
	CHECK(rb_code_jmp(id2str, 19, 0x208e80) == 0);
	CHECK(rb_code_symbols(entry, sizeof(entry), 0x206c45) == 0x3af1c0);
	/* ids not 16 bytes after last_id: not the table. */
	uint8_t bad[sizeof(entry)];

	memcpy(bad, entry, sizeof(bad));
	bad[15] = 0x79;
	CHECK(rb_code_symbols(bad, sizeof(bad), 0x206c45) == 0);
	CHECK(rb_code_symbols(entry, 10, 0x206c45) == 0);
}

int main(int argc, char **argv)
{
	static const struct harness_test tests[] = {
		{ "frames", test_frames },
		{ "corrupt", test_corrupt },
		{ "symbol_code", test_symbol_code },
	};

	return harness_run("ruby", tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
