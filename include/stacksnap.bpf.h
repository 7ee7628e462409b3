/* stacksnap.bpf.h - what a BPF program calls to capture an unwind context
 * (the user registers and a copy of the user stack from rsp up) into its own
 * record, for libstacksnap to unwind in user space
 * (stacksnap_procs__unwind_capture in stacksnap.h).
 *
 * For BPF programs compiled with clang -target bpf against vmlinux.h, after
 * <bpf/bpf_helpers.h>. The record layout, struct stacksnap_capture, is the
 * one stacksnap.h declares for user space (same fields, same size: checked
 * below and there). A typical program (a uprobe on malloc):
 *
 *   struct rec { __u64 size; struct stacksnap_capture cap;
 *                __u8 stack[STACKSNAP_BPF_BUF(16384)]; };
 *   (a per-CPU or per-cpu-indexed array map holds one struct rec)
 *
 *   SEC("uprobe") int on_malloc(struct pt_regs *ctx) {
 *       struct rec *r = scratch for this CPU;
 *       stacksnap_capture_regs(&r->cap, ctx);
 *       __u32 n = stacksnap_capture_stack(&r->cap, r->stack, 16384, 16384);
 *       bpf_ringbuf_output(&rb, r, offsetof(struct rec, stack) + n, 0);
 *   }
 *
 * In a non-sleepable program, reading user memory fails on a page that is
 * not resident: the stack is copied page by page and the copy ends at the
 * first page that cannot be read (STACKSNAP_CAPTURE_SHORT), keeping what
 * was read; the unwinder then ends a walk that needs more with "stack copy
 * too small". */
#ifndef STACKSNAP_BPF_H
#define STACKSNAP_BPF_H

/* Registers in DWARF order, as enum stacksnap_reg numbers them. */
#define STACKSNAP_BPF_NREGS 17

#define STACKSNAP_CAPTURE_REGS 0x1    /* regs[] are the user registers */
#define STACKSNAP_CAPTURE_SHORT 0x2   /* the copy ended early: a page could
					 not be read */
#define STACKSNAP_CAPTURE_COMPACT 0x4 /* stack bytes are compacted (only
					 words pointing into code or the
					 stack kept; see stacksnap.h) */
#define STACKSNAP_CAPTURE_KERNEL 0x8  /* registers came from a kernel
					 context: regs[] are the ones saved at
					 the last entry from user mode */

/* Invariant: stack_len <= wanted; the bytes of stack from stack_start on
 * follow the record where its owner put them (data_len bytes as stored:
 * stack_len unless COMPACT). */
struct stacksnap_capture {
	__u32 flags;		/* STACKSNAP_CAPTURE_* */
	__u32 data_len;		/* bytes stored for the stack */
	__u64 regs[STACKSNAP_BPF_NREGS];
	__u64 stack_start;	/* user rsp when captured */
	__u32 stack_len;	/* bytes of stack covered, from stack_start */
	__u32 wanted;		/* bytes the caller asked for */
};
_Static_assert(sizeof(struct stacksnap_capture) == 160,
	       "struct stacksnap_capture differs from stacksnap.h");

/* Stack copies go a page at a time (a failed read keeps the pages before
 * it). A buffer for a copy of up to MAX bytes must have STACKSNAP_BPF_BUF(MAX)
 * bytes: the verifier proves each chunk's bounds against MAX plus one page. */
#define STACKSNAP_BPF_PAGE 4096u
#define STACKSNAP_BPF_BUF(max) ((max) + STACKSNAP_BPF_PAGE)

/* Hides a value's known range from the compiler (not from the verifier). */
#define __stacksnap_opaque(v) asm volatile("" : "+r"(v))

/* Fills cap's registers from user-mode pt_regs (a uprobe's context, or
 * bpf_task_pt_regs of the current task). */
static __always_inline void stacksnap_capture_regs(struct stacksnap_capture *cap,
						   const struct pt_regs *r)
{
	cap->regs[0] = r->ax;
	cap->regs[1] = r->dx;
	cap->regs[2] = r->cx;
	cap->regs[3] = r->bx;
	cap->regs[4] = r->si;
	cap->regs[5] = r->di;
	cap->regs[6] = r->bp;
	cap->regs[7] = r->sp;
	cap->regs[8] = r->r8;
	cap->regs[9] = r->r9;
	cap->regs[10] = r->r10;
	cap->regs[11] = r->r11;
	cap->regs[12] = r->r12;
	cap->regs[13] = r->r13;
	cap->regs[14] = r->r14;
	cap->regs[15] = r->r15;
	cap->regs[16] = r->ip;
	cap->flags = STACKSNAP_CAPTURE_REGS;
	cap->stack_start = cap->regs[7];
	cap->stack_len = cap->data_len = cap->wanted = 0;
}

/* The current task's user registers, from any tracing program (a
 * tracepoint, a perf_event sample taken in the kernel): the ones saved on
 * its last entry into the kernel. Returns 0, or -1 for a kernel thread. */
static __always_inline int stacksnap_capture_task_regs(struct stacksnap_capture *cap)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *r;

	if (task->flags & 0x00200000 /* PF_KTHREAD */)
		return -1;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return -1;
	stacksnap_capture_regs(cap, r);
	cap->flags |= STACKSNAP_CAPTURE_KERNEL;
	return 0;
}

static long stacksnap__vma_end(struct task_struct *task,
			       struct vm_area_struct *vma, void *data)
{
	*(__u64 *)data = vma->vm_end;
	return 0;
}

/* Copies up to `want` bytes of user stack from cap->stack_start into buf
 * (which has STACKSNAP_BPF_BUF(max) bytes; max a power of two and a
 * constant, want <= max), page by page, stopping at the first page that
 * cannot be read, and not past the end of the stack (its mapping, or on
 * the main thread the kernel's initial stack pointer). Sets stack_len,
 * data_len, wanted and SHORT; returns the bytes copied. */
static __always_inline __u32 stacksnap_capture_stack(struct stacksnap_capture *cap,
						     __u8 *buf, __u32 want,
						     const __u32 max)
{
	__u64 sp = cap->stack_start;
	__u32 off = 0;

	__u64 end = 0;

	if (want > max)
		want = max;
	cap->wanted = want;
	/* Not past the end of the stack's mapping (of the current task):
	 * bytes beyond it are not stack, and a failed read there is not a
	 * page missing. */
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 top;

	if (!bpf_find_vma(task, sp, stacksnap__vma_end, &end, 0) &&
	    end > sp && end - sp < want)
		want = (__u32)(end - sp);
	/* On the main thread's stack, nothing the unwinder reads lies above
	 * where the kernel left argc at exec (_start's frame ends there;
	 * above are argv, the environment and auxv: often kilobytes). */
	top = BPF_CORE_READ(task, mm, start_stack) + 256;
	if (sp < top && top <= end && top - sp < want)
		want = (__u32)(top - sp);
	for (int i = 0; i < (int)(max / STACKSNAP_BPF_PAGE) + 1; i++) {
		__u64 len = STACKSNAP_BPF_PAGE - ((sp + off) & (STACKSNAP_BPF_PAGE - 1));
		__u64 o = off;

		if (off >= want)
			break;
		if (len > want - off)
			len = want - off;
		/* The compiler knows these bounds and would drop the masks;
		 * the verifier needs to see them on the registers passed. */
		__stacksnap_opaque(o);
		__stacksnap_opaque(len);
		o &= max - 1;
		len &= 2 * STACKSNAP_BPF_PAGE - 1;
		if (len == 0 || len > STACKSNAP_BPF_PAGE)
			break;
		if (bpf_probe_read_user(buf + o, (__u32)len, (const void *)(sp + off))) {
			cap->flags |= STACKSNAP_CAPTURE_SHORT;
			break;
		}
		off += (__u32)len;
	}
	cap->stack_len = cap->data_len = off;
	return off;
}

/* ---- Compaction in the kernel ----
 * Only the stack words the unwinder may need leave the kernel: words
 * pointing into an executable mapping of the process (return addresses)
 * or into the copied stack itself (saved frame pointers, CFA bases);
 * the rest (data, keys, passwords) become zeros. Encoding, per block of
 * 64 words of the copy: a 64-bit mask of the words kept (bit j: word j of
 * the block), then those words in order. A copy of L bytes (a multiple of
 * 8) gives ceil(L / 512) blocks; user space expands it back
 * (stacksnap_procs__unwind_capture does).
 *
 * The executable ranges of the process are the caller's: a sorted array
 * in a map value, kept current from user space. */
#define STACKSNAP_EXEC_RANGES 64

/* Invariant: start[0..n) sorted, ranges disjoint, end[i] > start[i]. */
struct stacksnap_exec_ranges {
	__u32 n;
	__u32 pad;
	__u64 start[STACKSNAP_EXEC_RANGES];
	__u64 end[STACKSNAP_EXEC_RANGES];
};

static __always_inline bool stacksnap__in_exec(const struct stacksnap_exec_ranges *r,
					       __u64 w)
{
	__u64 lo = 0, hi = r->n, mid;

	/* The number of ranges starting at or below w, by binary search;
	 * the bounds are hidden from the compiler so that the verifier sees
	 * ranges, not one path per constant. */
	for (int i = 0; i < 7; i++) {
		__stacksnap_opaque(lo);
		__stacksnap_opaque(hi);
		if (lo >= hi || hi > STACKSNAP_EXEC_RANGES)
			break;
		mid = ((lo + hi) / 2) & (STACKSNAP_EXEC_RANGES - 1);
		if (r->start[mid] <= w)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo > STACKSNAP_EXEC_RANGES)
		return false;
	return w < r->end[(lo - 1) & (STACKSNAP_EXEC_RANGES - 1)];
}

/* State of one compaction (bpf_loop's context): the block being built
 * has its mask at mask_at, its kept words after it. */
struct stacksnap__compact_ctx {
	const __u8 *in;		/* the copy */
	__u8 *out;		/* the encoding */
	const struct stacksnap_exec_ranges *ranges;
	__u64 lo, hi;		/* the copy's addresses */
	__u64 also_lo, also_hi;	/* another stack whose pointers are kept
				   (0, 0: none) */
	__u64 mask;		/* of the block being built */
	__u32 words;		/* in the copy */
	__u32 out_len;
	__u32 mask_at;
};

/* Compaction works on copies of at most 64 KiB, in buffers of
 * STACKSNAP_BPF_BUF(STACKSNAP_COMPACT_MAX) bytes. */
#define STACKSNAP_COMPACT_MAX 65536u
#define STACKSNAP__OUT_MASK 0x1ffffull
#define STACKSNAP__OUT_LIMIT (STACKSNAP_COMPACT_MAX + STACKSNAP_BPF_PAGE - 8)

static long stacksnap__compact_word(__u32 i, void *data)
{
	struct stacksnap__compact_ctx *c = data;
	__u64 w, o = (__u64)i * 8, at;

	if (i >= c->words)
		return 1;
	if ((i & 63) == 0) {	/* a new block: room for its mask */
		c->mask_at = c->out_len;
		c->mask = 0;
		c->out_len += 8;
	}
	__stacksnap_opaque(o);
	o &= (STACKSNAP_COMPACT_MAX - 1) & ~7ull;
	w = *(const __u64 *)(c->in + o);
	if ((w >= c->lo && w < c->hi) || (w >= c->also_lo && w < c->also_hi) ||
	    stacksnap__in_exec(c->ranges, w)) {
		at = c->out_len;
		__stacksnap_opaque(at);
		at &= STACKSNAP__OUT_MASK;
		if (at > STACKSNAP__OUT_LIMIT)
			return 1;
		*(__u64 *)(c->out + at) = w;
		c->out_len += 8;
		c->mask |= 1ull << (i & 63);
	}
	if ((i & 63) == 63 || i + 1 == c->words) {
		at = c->mask_at;
		__stacksnap_opaque(at);
		at &= STACKSNAP__OUT_MASK;
		if (at > STACKSNAP__OUT_LIMIT)
			return 1;
		*(__u64 *)(c->out + at) = c->mask;
	}
	return 0;
}

/* The buffers of a compaction: the copy (in, what stacksnap_capture_stack
 * fills) and the encoding (out). In a map value (too large for the BPF
 * stack). */
struct stacksnap_compact_area {
	__u8 in[STACKSNAP_BPF_BUF(STACKSNAP_COMPACT_MAX)];
	__u8 out[STACKSNAP_BPF_BUF(STACKSNAP_COMPACT_MAX)];
};

/* Encodes the copy in a->in (len bytes of stack at address lo) into
 * a->out; returns the encoding's length. A global function, so that the
 * verifier checks it once, not once per path of its caller. */
__attribute__((noinline)) int stacksnap_compact_area(struct stacksnap_compact_area *a,
						    const struct stacksnap_exec_ranges *r,
						    __u64 lo, __u32 len)
{
	struct stacksnap__compact_ctx c = {
		.lo = lo, .hi = lo + len, .words = len / 8,
	};

	if (!a || !r)
		return 0;
	c.in = a->in;
	c.out = a->out;
	c.ranges = r;
	bpf_loop(c.words, stacksnap__compact_word, &c, 0);
	return (int)c.out_len;
}

/* Compacts cap's stack copy in area->in (stack_len bytes) into
 * area->out against the process's executable ranges. Sets data_len,
 * COMPACT, and stack_len to whole words; returns the bytes of the
 * encoding, or 0 when it would not be smaller (the copy is then kept as
 * it is, in area->in). */
static __always_inline __u32 stacksnap_compact(struct stacksnap_capture *cap,
					       struct stacksnap_compact_area *area,
					       const struct stacksnap_exec_ranges *ranges)
{
	__u32 words = cap->stack_len / 8;
	int n;

	if (!words)
		return 0;
	n = stacksnap_compact_area(area, ranges, cap->stack_start, words * 8);
	if (n <= 0 || (__u32)n >= cap->stack_len)
		return 0;
	cap->flags |= STACKSNAP_CAPTURE_COMPACT;
	cap->stack_len = words * 8;
	cap->data_len = (__u32)n;
	return (__u32)n;
}

#endif /* STACKSNAP_BPF_H */
