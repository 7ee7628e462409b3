/* nonstop.bpf.c - the non-stop capture's sleepable task iterator: for every
 * thread of the target, its state, whether it is on a CPU, its user
 * registers (saved on kernel entry), a copy of its stack clamped as the
 * ptrace capture clamps it, and a "has it run?" witness read before and
 * after the copy. Nothing is stopped; user space decides from the
 * witnesses which copies are exact (docs/nonstop-capture.md). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "bpf/nonstop.h"

#define RED_ZONE 128
#define VM_WRITE_ 0x2ull
#define PF_EXITING_ 0x4u
#define SCHED_NORMAL_ 0
#define SCHED_BATCH_ 3
#define SCHED_IDLE_ 5

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 stack_size = 256 << 10; /* per thread, from rsp up */
__u32 witness_only;	/* 1: no registers, no copy */
__u32 settle_run;	/* 1: each thread as the `settle` map says (none:
			   its witness only); the copies go on from
			   next_page */
__u32 next_page;	/* first free page; the iterator runs in one read(),
			   one task at a time, so no atomics are needed */
__u32 npages_total;	/* pages of stack_pages */

struct stack_page {
	__u8 b[NONSTOP_PAGE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct stack_page);
	__uint(max_entries, 1); /* set by the loader */
} stack_pages SEC(".maps");

/* tid -> what a settle run does with it: read it (READ), or compare its
 * witness with that of its last read and read it again at once if it
 * moved (CHECK), so that one run both finds a thread that ran and reads
 * it anew (docs/nonstop-capture.md, "Settle runs"). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct nonstop_settle);
	__uint(max_entries, 1); /* set by the loader */
} settle SEC(".maps");

/* The record being built for the current thread (one run of the iterator
 * visits one thread at a time, and a sleepable program keeps its CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct nonstop_rec);
	__uint(max_entries, 1);
} rec SEC(".maps");

struct vma_bounds {
	__u64 start, end;
	int writable;
};

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma,
		   struct vma_bounds *b)
{
	b->start = vma->vm_start;
	b->end = vma->vm_end;
	b->writable = !!(BPF_CORE_READ(vma, vm_flags) & VM_WRITE_);
	return 0;
}

static void witness(struct task_struct *t, struct nonstop_witness *w, __u32 *flags)
{
	w->nvcsw = t->nvcsw;
	w->nivcsw = t->nivcsw;
	w->runtime_ns = t->se.sum_exec_runtime;
	if (t->on_cpu)
		*flags |= NONSTOP_ON_CPU;
}

/* How long t, asleep and off CPU, has been (struct nonstop_rec.waited_ns):
 * all in the runqueues' clock (sched_clock, one clock for every CPU with a
 * stable TSC), which the switch that put t on its CPU read at once
 * (update_rq_clock before the pick). "Now" is a runqueue's clock too, as
 * its last update left it: the tick updates a busy CPU's (this one runs
 * us) every 1/HZ, so it is at most a tick behind. The runqueues are
 * reached through the tasks' cfs_rq (the `runqueues` per-CPU symbol is
 * not in kallsyms without CONFIG_KALLSYMS_ALL, and the load fails on it);
 * probe reads: 0 where a pointer is missing. */
static __u64 waited(struct task_struct *t)
{
	struct task_struct *me = bpf_get_current_task_btf();
	__u64 now = BPF_CORE_READ(me, se.cfs_rq, rq, clock);
	__u64 there = BPF_CORE_READ(t, se.cfs_rq, rq, clock);
	__u64 arrival = BPF_CORE_READ(t, sched_info.last_arrival), left;

	/* prev_sum_exec_runtime is set by the fair class's pick only: a
	 * real-time or deadline thread's last slice is not known. */
	if (t->policy != SCHED_NORMAL_ && t->policy != SCHED_BATCH_ &&
	    t->policy != SCHED_IDLE_)
		return 0;
	if (there > now)
		now = there;
	left = arrival + (t->se.sum_exec_runtime - t->se.prev_sum_exec_runtime);
	return arrival && now > left ? now - left : 0;
}

static void read_regs(struct task_struct *t, struct nonstop_rec *r)
{
	struct pt_regs *p = (struct pt_regs *)bpf_task_pt_regs(t);

	if (!p)
		return;
	r->regs[0] = p->ax;
	r->regs[1] = p->dx;
	r->regs[2] = p->cx;
	r->regs[3] = p->bx;
	r->regs[4] = p->si;
	r->regs[5] = p->di;
	r->regs[6] = p->bp;
	r->regs[7] = p->sp;
	r->regs[8] = p->r8;
	r->regs[9] = p->r9;
	r->regs[10] = p->r10;
	r->regs[11] = p->r11;
	r->regs[12] = p->r12;
	r->regs[13] = p->r13;
	r->regs[14] = p->r14;
	r->regs[15] = p->r15;
	r->regs[16] = p->ip;
	r->orig_ax = p->orig_ax;
}

struct copy_ctx {
	struct task_struct *t;
	struct nonstop_rec *r;
	int err;
};

/* One page of the copy (a bpf_loop body: the verifier checks it once,
 * where an open-coded loop of NONSTOP_MAX_PAGES pages made it walk ~74,000
 * instructions, most of the program's load time). */
static long copy_page(__u32 i, struct copy_ctx *c)
{
	__u64 off = (__u64)i * NONSTOP_PAGE, n;
	__u32 key = c->r->first_page + i;
	struct stack_page *dst;

	if (off >= c->r->copy_len)
		return 1;
	dst = bpf_map_lookup_elem(&stack_pages, &key);
	if (!dst) {
		c->err = -1;
		return 1;
	}
	n = c->r->copy_len - off;
	if (n > NONSTOP_PAGE)
		n = NONSTOP_PAGE;
	if (bpf_copy_from_user_task(dst->b, n & (2 * NONSTOP_PAGE - 1),
				    (void *)(c->r->copy_start + off), c->t, 0)) {
		c->err = -1;
		return 1;
	}
	return 0;
}

/* Copies [r->copy_start, + r->copy_len) into pages from r->first_page. */
static int copy_stack(struct task_struct *t, struct nonstop_rec *r)
{
	struct copy_ctx c = { .t = t, .r = r };

	bpf_loop(NONSTOP_MAX_PAGES, copy_page, &c, 0);
	return c.err;
}

SEC("iter.s/task")
int capture(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	struct nonstop_rec *r;
	__u32 zero = 0;
	struct vma_bounds vb = {};
	__u64 sp, lo, hi, fsbase;
	__u32 npages;
	long kn;

	if (!t)
		return 0;
	/* The record in a map, not on the stack: the verifier copies and
	 * compares every stack slot at each state it keeps; with the
	 * 232-byte record on the stack (312 bytes in all) it processed 1,703
	 * instructions in 122 states, now 627 in 46 (with the registers read
	 * by direct loads, not one helper call each), and the load's CPU
	 * time went from ~6.7 to ~4.5 ms (load average ~13). */
	r = bpf_map_lookup_elem(&rec, &zero);
	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r));
	r->tid = t->pid;
	r->state = t->__state;
	/* mm read as a number (a probe read), not loaded as a pointer: for a
	 * pointer loaded from a trusted one the verifier searches the kernel's
	 * BTF for "task_struct__safe_trusted*" types, name by name (~1 ms of
	 * the ~6 ms load, measured with perf). */
	if ((t->flags & PF_EXITING_) || !BPF_CORE_READ(t, mm))
		r->flags |= NONSTOP_EXITING;
	witness(t, &r->w1, &r->flags);
	if (settle_run) {
		struct nonstop_settle *v = bpf_map_lookup_elem(&settle, &r->tid);

		if (!v)
			goto out;
		if (v->what == NONSTOP_SETTLE_CHECK) {
			if (!(r->flags & NONSTOP_ON_CPU) &&
			    v->w.nvcsw == r->w1.nvcsw && v->w.nivcsw == r->w1.nivcsw &&
			    v->w.runtime_ns == r->w1.runtime_ns) {
				r->flags |= NONSTOP_UNCHANGED;
				goto out;
			}
			r->flags |= NONSTOP_MOVED;
		}
	}
	/* A traced thread's tracer may change its registers and memory while
	 * it does not run: it goes the ptrace way (which says it is traced). */
	if (witness_only || r->state == 0 || t->ptrace ||
	    (r->flags & (NONSTOP_ON_CPU | NONSTOP_EXITING)))
		goto out;
	r->flags |= NONSTOP_CANDIDATE;
	read_regs(t, r);
	/* Its kernel stack, for the waits (docs/waits.md): asleep and off
	 * CPU, so it holds still as its user registers do. */
	kn = bpf_get_task_stack(t, r->kstack, sizeof(r->kstack), 0);
	r->nkstack = kn > 0 ? (__u32)kn / 8 : 0;
	r->waited_ns = waited(t);
	sp = r->regs[7];
	if (bpf_find_vma(t, sp, vma_cb, &vb, 0) || !vb.writable) {
		r->flags |= NONSTOP_NO_VMA;
		goto second;
	}
	lo = sp >= RED_ZONE ? sp - RED_ZONE : 0;
	if (lo < vb.start)
		lo = vb.start;
	hi = vb.end;
	/* As the ptrace copy: not above the thread descriptor (glibc's, at
	 * the thread pointer at the top of the stack mapping). */
	fsbase = BPF_CORE_READ(t, thread.fsbase);
	if (fsbase > sp && fsbase < hi)
		hi = fsbase;
	r->map_end = hi;
	if (hi - lo > stack_size)
		hi = lo + stack_size;
	r->copy_start = lo;
	r->want_len = hi - lo;
	r->copy_len = r->want_len;
	if (r->copy_len > (__u64)NONSTOP_MAX_PAGES * NONSTOP_PAGE) {
		r->copy_len = (__u64)NONSTOP_MAX_PAGES * NONSTOP_PAGE;
		r->flags |= NONSTOP_TRUNCATED;
	}
	npages = (__u32)((r->copy_len + NONSTOP_PAGE - 1) / NONSTOP_PAGE);
	if (next_page + npages > npages_total) {
		r->flags |= NONSTOP_NO_ROOM;
		goto second;
	}
	r->first_page = next_page;
	next_page += npages;
	if (copy_stack(t, r))
		r->flags |= NONSTOP_COPY_FAILED;
	else
		r->flags |= NONSTOP_COPIED;
second:
	witness(t, &r->w2, &r->flags);
	if ((r->flags & NONSTOP_ON_CPU) || r->w1.nvcsw != r->w2.nvcsw ||
	    r->w1.nivcsw != r->w2.nivcsw)
		r->flags &= ~NONSTOP_COPIED;
out:
	bpf_seq_write(seq, r, sizeof(*r));
	return 0;
}
