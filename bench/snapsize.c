/* snapsize.c - bytes per thread stack of a live capture under each snapshot
 * encoding (full copy, pointer-preserving, exact) and whether unwinding the
 * decoded compact stacks gives the full copy's frames; a helper of
 * bench/snapshot_size.py, which starts the targets.
 *
 * usage: snapsize PID
 * Prints one line per captured thread:
 *   thread TID full N pointers N exact N needed N frames N same_pointers 0|1 same_exact 0|1
 * where needed is the bytes from the copy's start to the last frame's CFA
 * (what a fixed-size copy such as perf's 8 KiB sample must hold). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "save/snapfile_writer.h"
#include "save/stack_words.h"
#include "stacksnap.h"

#define MAX_FRAMES 1024

static int walk(struct stacksnap_unwinder *uw, struct stacksnap_addrspace *as,
		struct stacksnap_mem *mem, const struct stacksnap_regs *regs,
		const uint8_t *stack, size_t len, uint64_t base,
		struct stacksnap_frame *frames, enum stacksnap_end *end)
{
	stacksnap_mem__set_copy(mem, stack, len, base);
	return stacksnap_unwind(uw, as, regs, mem, frames, MAX_FRAMES, end);
}

static bool same(const struct stacksnap_frame *a, int na, enum stacksnap_end ea,
		 const struct stacksnap_frame *b, int nb, enum stacksnap_end eb)
{
	if (na != nb || ea != eb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i].pc != b[i].pc || a[i].sp != b[i].sp)
			return false;
	return true;
}

/* Decodes what enc kept of th and walks it like the original. */
static size_t measure(struct stacksnap_addrspace *as, struct stacksnap_unwinder *uw,
		      struct stacksnap_mem *mem, const struct stacksnap_thread *th,
		      enum stacksnap_stack_encoding enc, const struct stacksnap_frame *ref,
		      int nref, enum stacksnap_end eref, bool *ok)
{
	static struct stacksnap_frame scratch[MAX_FRAMES], frames[MAX_FRAMES];
	struct byte_buf b = { 0 };
	uint8_t *dec = calloc(1, th->stack_len + 8);
	enum stacksnap_end end;
	struct cursor c;
	size_t bad, n;
	int nf;

	struct stack_words sw = { .enc = enc, .uw = uw, .frames = scratch,
				  .max_frames = MAX_FRAMES };
	uint64_t *keep = NULL;

	if (!stack_words__choose(&sw, as, th, &keep))
		snapfile__put_stack(&b, th, keep);
	else
		b.failed = true;
	free(keep);
	n = b.n;
	cursor_init(&c, b.p, b.n);
	*ok = dec && !b.failed &&
	      !compact_stack__decode(&c, dec, th->stack_len, th->stack_base,
				     enc != STACKSNAP_ENCODING_FULL, &bad);
	if (*ok) {
		nf = walk(uw, as, mem, &th->regs, dec, th->stack_len, th->stack_base,
			  frames, &end);
		*ok = same(ref, nref, eref, frames, nf, end);
	}
	free(dec);
	byte_buf__free(&b);
	return n;
}

int main(int argc, char **argv)
{
	static struct stacksnap_frame ref[MAX_FRAMES];
	struct stacksnap_ctx *ctx;
	struct stacksnap_addrspace *as;
	struct stacksnap_snapshot *snap;
	struct stacksnap_unwinder *uw;
	struct stacksnap_mem *mem;
	pid_t pid;

	if (argc != 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: snapsize PID\n");
		return 1;
	}
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = MAX_FRAMES);
	ctx = stacksnap_ctx__new(NULL);
	as = ctx ? stacksnap_addrspace__from_pid(ctx, pid) : NULL;
	snap = as ? stacksnap_snapshot__capture(ctx, pid, NULL) : NULL;
	uw = stacksnap_unwinder__new(&uo);
	mem = stacksnap_mem__new_copy(NULL, 0, 0);
	if (!snap || !uw || !mem) {
		fprintf(stderr, "snapsize: pid %d: %s\n", (int)pid, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap); i++) {
		const struct stacksnap_thread *th = stacksnap_snapshot__thread(snap, i);
		enum stacksnap_end end;
		bool okp, oke;
		uint64_t top = 0;
		int n;

		if (th->error || !th->stack)
			continue;
		n = walk(uw, as, mem, &th->regs, th->stack, th->stack_len,
			 th->stack_base, ref, &end);
		for (int k = 0; k < n; k++)
			if (ref[k].cfa > top)
				top = ref[k].cfa;
		size_t p = measure(as, uw, mem, th, STACKSNAP_ENCODING_POINTERS, ref, n, end, &okp);
		size_t e = measure(as, uw, mem, th, STACKSNAP_ENCODING_EXACT, ref, n, end, &oke);
		printf("thread %d full %zu pointers %zu exact %zu needed %llu frames %d "
		       "same_pointers %d same_exact %d\n", (int)th->tid, th->stack_len, p, e,
		       (unsigned long long)(top > th->stack_base ? top - th->stack_base : 0),
		       n, okp, oke);
	}
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
	stacksnap_snapshot__free(snap);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return 0;
}
