/* nonstop.h - the records the non-stop capture's task iterator
 * (nonstop.bpf.c) writes for every thread of the target, and the
 * user-side loader that runs it (nonstop.c); shared by both sides. */
#ifndef SS_BPF_NONSTOP_H
#define SS_BPF_NONSTOP_H

#ifndef __bpf__
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "base/log.h"
#endif

#define NONSTOP_PAGE 4096u	   /* bytes of one page of the stack buffer */
#define NONSTOP_MAX_PAGES 64u	   /* pages one thread may copy (256 KiB): a
				      bound the verifier can see; the rest of
				      a deeper range is read after the thaw */
#define NONSTOP_NREGS 17	   /* DWARF order, as enum stacksnap_reg */
#define NONSTOP_KSTACK 24	   /* kernel frames kept of a thread read */

/* rec.flags */
#define NONSTOP_CANDIDATE 0x1	/* asleep and off CPU at the first read:
				   its registers were saved on kernel entry */
#define NONSTOP_ON_CPU 0x2	/* on a CPU at the first or second read */
#define NONSTOP_COPIED 0x4	/* stack bytes copied, pages [first_page,
				   first_page + npages) */
#define NONSTOP_NO_ROOM 0x8	/* the buffer was full: no copy */
#define NONSTOP_NO_VMA 0x10	/* rsp is in no writable mapping (or the
				   mapping lock was busy) */
#define NONSTOP_EXITING 0x20	/* PF_EXITING, or no mm */
#define NONSTOP_COPY_FAILED 0x40 /* a page of the range could not be read */
#define NONSTOP_TRUNCATED 0x80	/* the range was longer than
				   NONSTOP_MAX_PAGES: copy_len says how much
				   was copied, want_len how much is wanted */
#define NONSTOP_UNCHANGED 0x100	/* settle run, CHECK: the witness of its
				   last read, off CPU; nothing read */
#define NONSTOP_MOVED 0x200	/* settle run, CHECK: it ran since its last
				   read (read again if COPIED) */

/* "Has it run?": a thread that was switched in and out again moved one of
 * the switch counters, and one switched in and not out is on a CPU. So two
 * equal witnesses, off CPU both times, prove it did not run in between. */
struct nonstop_witness {
	__u64 nvcsw, nivcsw;	/* voluntary / involuntary context switches */
	__u64 runtime_ns;	/* se.sum_exec_runtime (a second opinion) */
};

/* What a settle run does with a thread (struct nonstop_settle.what). */
#define NONSTOP_SETTLE_READ 1	/* not read yet: read it */
#define NONSTOP_SETTLE_CHECK 2	/* read, witness w: read it again if moved */

/* An entry of the settle map (key: tid); a thread without one gets only
 * its witness. */
struct nonstop_settle {
	struct nonstop_witness w; /* CHECK: the witness of its last read */
	__u32 what;		   /* NONSTOP_SETTLE_* */
	__u32 pad;
};

/* One thread, as one run of the iterator saw it. In a witness-only run
 * (copy == 0) only tid, state, flags & NONSTOP_ON_CPU|EXITING and w1 are
 * set. Invariant: COPIED implies CANDIDATE, w1 == w2 and not ON_CPU. */
struct nonstop_rec {
	__u32 tid;
	__u32 state;		/* task->__state: 0 running/runnable */
	__u32 flags;		/* NONSTOP_* */
	__u32 first_page;	/* index of its first page in the buffer */
	__u64 regs[NONSTOP_NREGS]; /* user registers from task_pt_regs */
	__u64 orig_ax;		/* its system call (pt_regs orig_ax; -1 none) */
	__u64 copy_start;	/* rsp - red zone, clamped to the mapping */
	__u64 copy_len;		/* bytes copied from copy_start */
	__u64 want_len;		/* bytes the clamp asked for (>= copy_len) */
	__u64 map_end;		/* top of the stack: the end of the mapping
				   holding rsp, or the thread pointer */
	struct nonstop_witness w1, w2; /* before and after the copy */
	/* A candidate's kernel stack (bpf_get_task_stack, innermost first):
	 * nkstack return addresses, 0 when it could not be read. */
	__u64 kstack[NONSTOP_KSTACK];
	__u32 nkstack;
	__u32 pad;
	/* A candidate's time asleep, in the scheduler's clock (rq->clock):
	 * now (the freshest of this CPU's and its CPU's runqueue clocks)
	 * minus the moment it left its CPU (sched_info.last_arrival, when it
	 * was last switched in, plus the run time of that last slice,
	 * se.sum_exec_runtime - se.prev_sum_exec_runtime). 0: not known. */
	__u64 waited_ns;
};

#ifndef __bpf__
struct nonstop;

/* Loads and attaches the iterator for the threads of pid (about `threads`
 * of them); pages is the size of the stack buffer (mapped into this
 * process). Returns 0, or -errno with `reason` saying what is missing
 * (rights, BTF, the load). */
int nonstop__open(struct nonstop **out, pid_t pid, size_t threads,
		  size_t stack_size, size_t pages, const struct log_sink *log,
		  char *reason, size_t reason_len);
/* What one run of the iterator reads. */
enum nonstop_run {
	NONSTOP_RUN_WITNESS,	/* witnesses only */
	NONSTOP_RUN_COPY,	/* every candidate's registers and stack, into
				   the buffer from its first page */
	NONSTOP_RUN_SETTLE,	/* as nonstop__settle() named them: threads
				   to read and threads to read again if they
				   moved, into the buffer after the copies of
				   earlier runs; witnesses of the others */
};

/* Runs the iterator once. *recs (owned by ns, valid until the next run)
 * gets n records, one per thread. */
int nonstop__run(struct nonstop *ns, enum nonstop_run what,
		 const struct nonstop_rec **recs, size_t *n);
/* Two copy runs whose results are dropped, into the pages a first run
 * and its reads again use: the first write to a page of the buffer costs
 * the kernel ~6 us a page on the machines measured (a fresh mapping), and
 * would stretch the first real run ~4x. Returns 0 or -errno. */
int nonstop__warm(struct nonstop *ns);
/* Sets what NONSTOP_RUN_SETTLE runs do with threads tids[0..n) (vals[i]
 * for tids[i]; entries set before stay): at most the `threads` given to
 * nonstop__open, twice over, in all. Returns 0 or -errno. */
int nonstop__settle(struct nonstop *ns, const __u32 *tids,
		    const struct nonstop_settle *vals, size_t n);
/* The buffer's page `first` (NONSTOP_PAGE bytes each, contiguous), of
 * the pages the runs wrote so far (mapped on the first call that needs
 * them; pointers stay valid until nonstop__close), or NULL. */
const __u8 *nonstop__pages(struct nonstop *ns, __u32 first);
void nonstop__close(struct nonstop *ns);
#endif

#endif
