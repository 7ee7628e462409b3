/* fuzz_ruby_frames.c - libFuzzer target for the Ruby control-frame reader
 * over corrupt memory: the input is the target's memory at BASE, read
 * through a copy source, with the thread pointer at BASE (its DTV pointer
 * at BASE + 8; libruby's TLS module 1, ruby_current_ec at offset 0 of its
 * block; ruby_current_vm_ptr at BASE + 0x20, for the VM's thread list;
 * ruby_global_symbols at BASE + 0x2b00, for C methods' names).
 * Capture, resolve (iseqs, strings, insns_info tables, method entries,
 * the symbol table's Arrays) and merge
 * must stay within their bounds and never read outside the input; the
 * tail of the input also goes to the line lookup directly. Seeds:
 * fuzz/corpus/fuzz_ruby_frames (made by tests/tools/ruby_seed.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ruby/ruby.h"
#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BASE 0x100000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rb_runtime rt = { 0 };
	struct rb_capture cap = { 0 };
	struct rb_resolver res;
	struct stacksnap_mem *mem;

	rt.found = true;
	rt.layout = rb_layout__find("3.1.2");
	rt.tls_modid = 1;
	rt.vm_ptr_addr = BASE + 0x20;
	rt.symbols = BASE + 0x2b00;	/* the seed's symbol table */
	rt.exec_start = 0x1000;
	rt.exec_end = 0x2000;
	mem = stacksnap_mem__new_copy(data, size, BASE);
	if (!mem)
		return 0;
	if (rb_capture__list(&rt, mem, &cap) == 0 && cap.nlisted > RB_MAX_THREADS)
		abort();
	if (rb_capture__thread(&rt, mem, 1, BASE, &cap) == 0) {
		if (cap.nthreads > 1 || cap.nframes > RB_MAX_FRAMES)
			abort();
		rb_resolver__init(&res, &rt, mem);
		for (size_t i = 0; i < cap.nthreads; i++) {
			struct stacksnap_frame native[4] = {
				{ .pc = 0x10 }, { .pc = 0x1001 }, { .pc = 0x20 },
				{ .pc = 0x1002 },
			};
			struct stacksnap_runtime_frame out[64];
			struct rb_frame *fr;
			size_t n, m;

			if (rb_resolve__thread(&res, &cap, &cap.threads[i], &fr, &n))
				continue;
			m = rb_merge(fr, n, native, 4, rt.exec_start, rt.exec_end,
				     out, 64);
			for (size_t k = 0; k < m && k < 64; k++)
				if (!out[k].function || !out[k].file ||
				    out[k].native_index > 4)
					abort();
			free(fr);
		}
		rb_resolver__free(&res);
	}
	rb_capture__free(&cap);
	stacksnap_mem__free(mem);
	/* The input as libruby's code: the symbol table's decoder. */
	(void)rb_code_jmp(data, size, BASE);
	(void)rb_code_symbols(data, size, BASE);
	if (size >= 16) {
		size_t ne = data[0] % 64, sl = size - 16;
		uint8_t *copy = malloc(sl ? sl : 1);

		if (copy) {
			uint32_t pos;

			memcpy(copy, data + 16, sl);
			memcpy(&pos, data + 4, 4);
			/* entries and the succinct table share the bytes:
			   ne entries of 12 bytes must fit. */
			if (ne * 12 <= sl)
				rb_insn_line(copy, ne, 12, NULL, copy, sl, pos);
			free(copy);
		}
	}
	return 0;
}
