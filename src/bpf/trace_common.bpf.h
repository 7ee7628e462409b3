/* trace_common.bpf.h - the maps and the record writer every trace BPF
 * program shares (each object has its own copy; the loader makes them
 * share one ring buffer, filter and counters with bpf_map__reuse_fd). */
#ifndef SS_BPF_TRACE_COMMON_BPF_H
#define SS_BPF_TRACE_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "stacksnap.bpf.h"
#include "bpf/trace_record.h"
#include "bpf/kunwind_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile __u32 stack_size = 16384;	/* <= TRACE_STACK_MAX */
const volatile bool filter_tid = false;		/* traced holds tids, not tgids */
const volatile bool inherit = true;		/* follow new processes */
const volatile bool all_processes = false;	/* -a: every process but the
						   tracer's own (self_tgid) */
const volatile __u32 self_tgid = 0;
const volatile __u32 unwind_mode = KU_MODE_COPY; /* KU_MODE_*: stack copy,
						    in-kernel walk, or both */
const volatile bool compact = false;		/* compact stacks in the kernel */
const volatile bool python = false;		/* walk the Python frames of the
						   processes in py_procs, and the
						   Ruby frames of those in rb_procs
						   (PHP's: php_procs) */
/* Wakeups of the reader, batched: an event record wakes it only when
 * wake_bytes are waiting or wake_ns have passed since the last wakeup
 * (each wakeup is an irq_work self-IPI on the traced CPU: ~1 us in a VM,
 * more than the rest of the event); 0: the ring buffer's own rule (a
 * wakeup whenever the reader has caught up). The reader polls with a
 * timeout, so what waits below the mark is read by then. */
const volatile __u32 wake_bytes = 0;
const volatile __u64 wake_ns = 0;
/* Measurements only (bench/trace.py, SS_TRACE_EXP): 1 returns after the
 * filter, 2 sends no stack copy, 3 builds the record but sends nothing, 4
 * wakes the reader at every record as before batching. */
const volatile __u32 trace_exp = 0;
__u64 last_wake_ns = 0;	/* (racy between CPUs: at worst a wakeup more) */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

/* The processes (or, with filter_tid, threads) traced: key id, value 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TRACE_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* One record being built per CPU (the loader sets max_entries to the
 * number of CPUs); not shared between objects, so a sample taken while a
 * tracepoint program runs on the same CPU has its own. */
struct ss_scratch {
	struct trace_rec rec;
	/* area.in: the stack copy, sent from here (right after rec), then
	 * the tracepoint's raw record and the in-kernel walk's pcs (which may
	 * run on into area.out, unused by then); area.out: the copy's
	 * compaction, moved into area.in. */
	struct stacksnap_compact_area area;
	struct ku_event kev;	/* the in-kernel walk's result */
	__u64 kpcs[KU_MAX_FRAMES];
	struct trace_py_frame py[TRACE_PY_MAX_FRAMES]; /* the Python walk's */
	__u8 pyf[TRACE_PY_FRAME_SPAN];	/* one _PyInterpreterFrame's head, or
					   a Ruby control frame's and its env */
	struct stacksnap_capture more;	/* the normal stack's copy (a
					   handler on the alternate stack) */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ss_scratch);
} scratch SEC(".maps");
_Static_assert(sizeof(struct stacksnap_compact_area) >=
	       TRACE_STACK_MAX + TRACE_RAW_MAX + KU_MAX_FRAMES * 8 +
	       sizeof(struct ku_end_state) + sizeof(struct trace_py_frame) * TRACE_PY_MAX_FRAMES,
	       "the stack copy, raw record, pcs, end state and Python frames fit in the area");

/* The interpreters of the traced processes (key: tgid), for the Python
 * walk; written by the user side. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct trace_py_proc);
} py_procs SEC(".maps");

/* The Ruby VMs of the traced processes (key: tgid), for the Ruby walk;
 * written by the user side. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct trace_rb_proc);
} rb_procs SEC(".maps");

/* The thread state last found for a thread (key: tid), checked by its
 * native thread id before use: a sample then reads one word instead of
 * walking the thread list. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} py_tstates SEC(".maps");

/* Executable ranges per traced process (key: tgid), for compaction;
 * written by the loader from /proc/PID/maps. A process without an entry
 * sends its stack as it is. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct stacksnap_exec_ranges);
} exec_ranges SEC(".maps");

/* Atomic: a program nested on this CPU (a sample's, in an NMI) may count
 * in between, and the counts must stay exact. */
static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* The flags of an event record of len bytes made at now (ns): wake the
 * reader at the mark or after wake_ns, else not. */
static __always_inline __u64 wake_flags(__u64 now, __u64 len)
{
	if (!wake_bytes || trace_exp == 4)
		return 0;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + len >= wake_bytes ||
	    now - last_wake_ns >= wake_ns) {
		last_wake_ns = now;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

/* Whether the current task is one of the traced. */
static __always_inline bool current_traced(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 key = filter_tid ? (__u32)id : (__u32)(id >> 32);

	if (all_processes) /* (not the idle task, not the tracer) */
		return (__u32)(id >> 32) && (__u32)(id >> 32) != self_tgid;
	return bpf_map_lookup_elem(&traced, &key) != NULL;
}

static __always_inline struct ss_scratch *scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

static __always_inline void rec_header(struct trace_rec *r, __u32 kind)
{
	__u64 id = bpf_get_current_pid_tgid();

	r->kind = kind;
	r->event = 0;
	r->time = bpf_ktime_get_ns();
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->ppid = r->ptid = 0;
	r->cpu = bpf_get_smp_processor_id();
	r->raw_len = 0;
	r->pyframes = 0;
	r->pyend = TRACE_PY_NONE;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
}

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* The current thread's thread state in process c: the one cached for tid
 * if its native thread id is still tid, else the first of the first
 * interpreter's list (newest first: in a sub-interpreter, the innermost)
 * whose native thread id is tid; 0 when none. */
static __always_inline __u64 py_ts_tid(const struct trace_py_proc *c, __u64 ts)
{
	__u64 pt;
	__s32 tid;

	if (c->ts_native_thread_id >= 0)
		return read_u64(ts + c->ts_native_thread_id);
	/* Before 3.11: the kernel tid from the thread's struct pthread. */
	pt = read_u64(ts + c->ts_thread_id);
	if (!pt || bpf_probe_read_user(&tid, sizeof(tid),
				       (const void *)(pt + c->pthread_tid)))
		return 0;
	return (__u64)(__u32)tid;
}

static __always_inline __u64 py_tstate(const struct trace_py_proc *c, __u32 tid)
{
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid);
	__u64 interp, ts;

	if (cached && *cached && py_ts_tid(c, *cached) == tid)
		return *cached;
	interp = read_u64(c->interp_head);
	if (!interp)
		return 0;
	ts = read_u64(interp + c->interp_threads_head);
	for (int i = 0; i < TRACE_PY_MAX_THREADS && ts; i++) {
		if (py_ts_tid(c, ts) == tid) {
			bpf_map_update_elem(&py_tstates, &tid, &ts, BPF_ANY);
			return ts;
		}
		ts = read_u64(ts + c->ts_next);
	}
	return 0;
}

#include "bpf/trace_php.bpf.h"	/* trace_php_walk */

#define RB_FLAG_FINISH 0x20		/* VM_FRAME_FLAG_FINISH */
#define RB_FLAG_CFRAME 0x80		/* VM_FRAME_FLAG_CFRAME */
#define RB_MAGIC_MASK 0x7fff0001	/* VM_FRAME_MAGIC_MASK */
#define RB_MAGIC_CFUNC 0x55550001	/* VM_FRAME_MAGIC_CFUNC */

/* The current thread's Ruby control frames into s->py, innermost first,
 * bounded by TRACE_PY_MAX_FRAMES, as rb_capture__thread reads them
 * (src/runtime/ruby/rb_frames.c): the execution context through the
 * thread pointer's DTV, then per frame its head (pc, iseq, ep) and its
 * env from ep[-2] (a C method's entry) to ep[0] (flags). Two reads a
 * frame. */
__attribute__((noinline)) int trace_rb_walk(struct ss_scratch *s)
{
	const struct trace_rb_proc *c;
	struct task_struct *task;
	__u32 tgid;
	__u64 fs, dtv, blk, ec, stack, size, cfp, end;
	__u16 n = 0;

	if (!s)
		return 0;
	tgid = s->rec.pid;
	if (!(c = bpf_map_lookup_elem(&rb_procs, &tgid)))
		return trace_php_walk(s);	/* or a PHP engine's */
	task = (struct task_struct *)bpf_get_current_task();
	fs = BPF_CORE_READ(task, thread.fsbase);
	s->rec.pyend = TRACE_PY_NO_THREAD;
	if (!fs || !(dtv = read_u64(fs + 8)) ||
	    !(blk = read_u64(dtv + 16 * (c->tls_modid & 0xfff))) || blk == ~0ull ||
	    !(ec = read_u64(blk + c->ec_tls_off)))
		return 0;
	stack = read_u64(ec + c->ec_vm_stack);
	size = read_u64(ec + c->ec_vm_stack_size);
	cfp = read_u64(ec + c->ec_cfp);
	end = stack + size * 8;
	if (!stack || size > (1u << 28) || cfp < stack || cfp >= end) {
		s->rec.pyend = TRACE_PY_BAD_MEMORY;
		return 0;
	}
	s->rec.pyend = TRACE_PY_FRAME_LIMIT;
	__u32 step = c->cfp_size & (TRACE_RB_SPAN * 2 - 8);
	__u32 o_pc = c->cfp_pc & (TRACE_RB_SPAN - 8);
	__u32 o_iseq = c->cfp_iseq & (TRACE_RB_SPAN - 8);
	__u32 o_ep = c->cfp_ep & (TRACE_RB_SPAN - 8);
	__u32 back = c->ep_me_cref & 0x38;	/* 16 in 3.1 */

	if (!step)
		return 0;
	for (int i = 0; i < TRACE_PY_MAX_FRAMES; i++) {
		__u64 pc, iseq, ep, flags = 0, me = 0, f = 0;

		if (cfp >= end) {
			s->rec.pyend = TRACE_PY_COMPLETE;
			break;
		}
		if (bpf_probe_read_user(s->pyf, TRACE_RB_SPAN, (const void *)cfp)) {
			s->rec.pyend = TRACE_PY_BAD_MEMORY;
			break;
		}
		pc = *(__u64 *)(s->pyf + o_pc);
		iseq = *(__u64 *)(s->pyf + o_iseq);
		ep = *(__u64 *)(s->pyf + o_ep);
		if (ep > back &&
		    !bpf_probe_read_user(s->pyf + TRACE_RB_SPAN, back + 8,
					 (const void *)(ep - back))) {
			me = *(__u64 *)(s->pyf + TRACE_RB_SPAN);
			flags = *(__u64 *)(s->pyf + TRACE_RB_SPAN + back);
			if (flags & RB_FLAG_FINISH)
				f |= TRACE_RB_FINISH;
			if (!(flags & RB_FLAG_CFRAME) && iseq && pc)
				f |= TRACE_RB_SHOWN;
			if ((flags & RB_MAGIC_MASK) == RB_MAGIC_CFUNC && !iseq) {
				f |= TRACE_RB_SHOWN | TRACE_RB_CFUNC;
				iseq = me;
			}
		}
		s->py[i & (TRACE_PY_MAX_FRAMES - 1)] = (struct trace_py_frame){
			.code = (iseq & ~7ull) | f,
			.instr = pc,
		};
		n++;
		cfp += step;
	}
	s->rec.pyframes = n;
	return 0;
}

/* The current thread's Python frame chain into s->py: (code object,
 * instruction pointer, entry flag, owner) per frame, innermost first,
 * bounded by TRACE_PY_MAX_FRAMES; the user side names them. A global
 * function, so that the verifier checks its loops once, not once per
 * path of emit_event. */
__attribute__((noinline)) int trace_py_walk(struct ss_scratch *s)
{
	const struct trace_py_proc *c;
	__u32 tgid;
	__u64 ts, frame;
	__u16 n = 0;

	if (!s)
		return 0;
	tgid = s->rec.pid;
	s->rec.pyframes = 0;
	s->rec.pyend = TRACE_PY_NONE;
	if (!python)
		return 0;
	if (!(c = bpf_map_lookup_elem(&py_procs, &tgid)))
		return trace_rb_walk(s);	/* or a Ruby VM's */
	ts = py_tstate(c, s->rec.tid);
	if (!ts) {
		s->rec.pyend = TRACE_PY_NO_THREAD;
		return 0;
	}
	if (c->ts_cframe >= 0) {
		__u64 cf = read_u64(ts + c->ts_cframe);

		frame = cf ? read_u64(cf + c->cframe_current_frame) : 0;
	} else {
		frame = read_u64(ts + c->ts_current_frame);
	}
	s->rec.pyend = TRACE_PY_FRAME_LIMIT;
	/* One read per frame, of the span of the fields used: the offsets
	 * are masked into the buffer (the user side checked them). */
	__u32 span = c->frame_span & (TRACE_PY_FRAME_SPAN * 2 - 1);
	__u32 o_code = c->frame_code & (TRACE_PY_FRAME_SPAN - 8);
	__u32 o_instr = c->frame_instr & (TRACE_PY_FRAME_SPAN - 8);
	__u32 o_prev = c->frame_previous & (TRACE_PY_FRAME_SPAN - 8);
	__u32 o_owner = c->frame_owner & (TRACE_PY_FRAME_SPAN - 1);
	__u32 o_entry = c->frame_is_entry & (TRACE_PY_FRAME_SPAN - 1);
	bool has_entry = c->frame_is_entry >= 0;
	bool lasti = c->frame_lasti >= 0;
	__u32 o_lasti = c->frame_lasti & (TRACE_PY_FRAME_SPAN - 4);

	if (span > TRACE_PY_FRAME_SPAN)
		span = TRACE_PY_FRAME_SPAN;
	for (int i = 0; i < TRACE_PY_MAX_FRAMES; i++) {
		__u64 code, instr, prev;
		__u8 entry = 0, owner = 0;

		if (!frame) {
			s->rec.pyend = TRACE_PY_COMPLETE;
			break;
		}
		if (bpf_probe_read_user(s->pyf, span, (const void *)frame)) {
			s->rec.pyend = TRACE_PY_BAD_MEMORY;
			break;
		}
		code = *(__u64 *)(s->pyf + o_code);
		prev = *(__u64 *)(s->pyf + o_prev);
		if (lasti) {
			/* PyFrameObject: each its own C call of the loop. */
			instr = (__u64)(__s64)*(__s32 *)(s->pyf + o_lasti);
			entry = 1;
		} else {
			instr = *(__u64 *)(s->pyf + o_instr);
			owner = s->pyf[o_owner];
			if (has_entry)
				entry = s->pyf[o_entry];
		}
		s->py[i & (TRACE_PY_MAX_FRAMES - 1)] = (struct trace_py_frame){
			.code = (code & ~7ull) | (entry ? TRACE_PY_ENTRY : 0) |
				((__u64)(owner & 3) << 1),
			.instr = instr,
		};
		n++;
		frame = prev;
	}
	s->rec.pyframes = n;
	return 0;
}

/* A thread whose sp lies on its alternate signal stack runs a handler
 * there: the walk crosses the signal frame onto its normal stack, which a
 * copy from sp does not hold. The outermost signal frame (the one that
 * interrupted the normal stack) is the highest on the alternate stack: its
 * ucontext (16-aligned, after the frame's return address) names that stack
 * in uc_stack and holds the interrupted rsp. Looked for in the copy (n
 * bytes from sp) downwards from the alternate stack's top, over the first
 * frame's bound (its xstate area included); then the normal stack is
 * copied from that rsp after the first copy, within TRACE_STACK_MAX.
 * A stack with SS_AUTODISARM is not looked at (the kernel clears it while
 * the handler runs). Returns the bytes copied (rec.more_*). Global
 * functions both: each is verified once, not once per path of emit_event
 * (inlined, they made loading the programs take a second longer). */
#define ALT_SCAN_BYTES 16384u
#define UC_STACK_SP 16
#define UC_STACK_SIZE 32
#define UC_RSP 160 /* uc_mcontext.gregs[REG_RSP] */

/* The offset in the copy a (n bytes from sp) of the outermost ucontext
 * naming the alternate stack [alt, alt + size), or -1. */
__attribute__((noinline)) int trace_find_ucontext(struct stacksnap_compact_area *a,
						   __u64 sp, __u32 n, __u64 alt, __u64 size)
{
	__u64 top = alt + size, hi;

	if (!a || n < UC_RSP + 8 || n > TRACE_STACK_MAX)
		return -1;
	/* Candidates: 16-aligned, their rsp inside the copy, from the
	 * alternate stack's top (or the copy's end) down. */
	hi = top - sp < n ? top - sp : n;
	if (hi < UC_RSP + 8)
		return -1;
	hi = (hi - UC_RSP - 8 + sp) & ~15ull;
	for (__u32 i = 0; i < ALT_SCAN_BYTES / 16; i++) {
		__u64 uc = hi - (__u64)i * 16, o;

		if (uc < sp)
			break;
		o = uc - sp;
		__stacksnap_opaque(o);
		o &= TRACE_STACK_MAX - 1;
		if (*(__u64 *)(a->in + o + UC_STACK_SP) == alt &&
		    *(__u64 *)(a->in + o + UC_STACK_SIZE) == size &&
		    *(__u64 *)(a->in + o + 8) == 0 /* uc_link */ &&
		    !(*(__u64 *)(a->in + o) & ~7ull) /* uc_flags */)
			return (int)o;
	}
	return -1;
}

/* The interrupted sp on the normal stack (into rec.more_start) of a
 * thread whose copy (n bytes from sp) lies on its alternate signal stack;
 * returns 1, or 0 when there is none. */
__attribute__((noinline)) int trace_find_interrupted_sp(struct ss_scratch *s, __u32 n)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 alt = BPF_CORE_READ(task, sas_ss_sp), size = BPF_CORE_READ(task, sas_ss_size);
	__u64 sp, rsp;
	int o;

	if (!s)
		return 0;
	sp = s->rec.cap.stack_start;
	if (!alt || sp < alt || sp - alt >= size)
		return 0;
	o = trace_find_ucontext(&s->area, sp, n, alt, size);
	if (o < 0)
		return 0;
	o &= TRACE_STACK_MAX - 1;
	rsp = *(__u64 *)(s->area.in + o + UC_RSP);
	if (!rsp || rsp - alt < size)
		return 0; /* interrupted on the alternate stack itself */
	s->rec.more_start = rsp;
	return 1;
}

/* Copies the normal stack from rec.more_start after the first copy's n
 * bytes (rounded to words), within TRACE_STACK_MAX. */
__attribute__((noinline)) int trace_copy_interrupted_stack(struct ss_scratch *s, __u32 n)
{
	__u64 want, at;
	__u32 got;

	if (!s || !s->rec.more_start)
		return 0;
	at = (n + 7) & ~7u;
	if (at >= TRACE_STACK_MAX - 8)
		return 0;
	want = TRACE_STACK_MAX - 8 - at;
	if (want > stack_size)
		want = stack_size;
	__stacksnap_opaque(at);
	at &= TRACE_STACK_MAX - 1;
	s->more.stack_start = s->rec.more_start;
	s->more.flags = 0;
	got = stacksnap_capture_stack(&s->more, s->area.in + at, (__u32)want,
				      TRACE_STACK_MAX);
	s->rec.more_len = got;
	return got;
}

/* stacksnap_compact_area, keeping also the words that point into the
 * stack_size bytes from also (0: none): under --compact, the signal
 * frame's interrupted rsp (and rbp) into the normal stack copied after
 * it, without which the walk could not cross to that copy. */
__attribute__((noinline)) int trace_compact_area(struct stacksnap_compact_area *a,
						 const struct stacksnap_exec_ranges *r,
						 __u64 lo, __u32 len, __u64 also)
{
	struct stacksnap__compact_ctx c = {
		.lo = lo, .hi = lo + len, .words = len / 8,
		.also_lo = also, .also_hi = also ? also + stack_size : 0,
	};

	if (!a || !r)
		return 0;
	c.in = a->in;
	c.out = a->out;
	c.ranges = r;
	bpf_loop(c.words, stacksnap__compact_word, &c, 0);
	return (int)c.out_len;
}

/* stacksnap_compact through trace_compact_area. */
static __always_inline __u32 trace_compact(struct stacksnap_capture *cap,
					   struct stacksnap_compact_area *area,
					   const struct stacksnap_exec_ranges *ranges,
					   __u64 also)
{
	__u32 words = cap->stack_len / 8;
	int n;

	if (!words)
		return 0;
	n = trace_compact_area(area, ranges, cap->stack_start, words * 8, also);
	if (n <= 0 || (__u32)n >= cap->stack_len)
		return 0;
	cap->flags |= STACKSNAP_CAPTURE_COMPACT;
	cap->stack_len = words * 8;
	cap->data_len = (__u32)n;
	return (__u32)n;
}

/* The bytes of stack worth copying from sp: stack_size, but not past the
 * thread pointer when it lies above sp within that: x86_64's TLS is
 * variant II (the TLS blocks below the thread pointer, the thread control
 * block at it), and a thread's stack ends below both, so the copy to the
 * end of a glibc thread's stack mapping took its struct pthread along
 * (~2.3 KiB) for nothing. A stack never holds its own thread's control
 * block, so no frame is cut. (The main thread's stack is bounded by
 * argc's place instead: stacksnap_capture_stack.) */
static __always_inline __u32 copy_want(__u64 sp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tp = BPF_CORE_READ(task, thread.fsbase);

	if (tp > sp && tp - sp < stack_size)
		return (__u32)(tp - sp);
	return stack_size;
}

/* Copies the stack (cap's registers already set), then raw_len bytes of
 * the tracepoint record at raw (may be NULL), and writes the record. */
static __always_inline int emit_event(struct ss_scratch *s, __u64 cookie,
				      const void *raw)
{
	__u32 n;
	__u64 raw_len = TRACE_COOKIE_RAW(cookie), total;

	s->rec.event = TRACE_COOKIE_INDEX(cookie);
	s->rec.kframes = 0;
	s->rec.kend = 0;
	s->rec.kflags = 0;
	s->rec.pyframes = 0;
	s->rec.pyend = TRACE_PY_NONE;
	if (unwind_mode & KU_MODE_KERNEL) {
		s->kev.pid = s->rec.pid;
		s->kev.nframes = 0;
		ku_walk(&s->kev, s->kpcs, s->rec.cap.regs[16], s->rec.cap.regs[7],
			s->rec.cap.regs[6], s->rec.cap.regs[3], KU_MAX_FRAMES);
		s->rec.kframes = s->kev.nframes;
		s->rec.kend = s->kev.end;
	}
	if (!(unwind_mode & KU_MODE_COPY) || trace_exp == 2) {
		n = 0; /* no stack bytes leave the kernel */
	} else {
		n = stacksnap_capture_stack(&s->rec.cap, s->area.in,
					    copy_want(s->rec.cap.stack_start), TRACE_STACK_MAX);
		if (s->rec.cap.flags & STACKSNAP_CAPTURE_SHORT)
			count(TRACE_STAT_SHORT);
	}
	s->rec.more_start = 0;
	s->rec.more_len = 0;
	/* Found in the copy before it is compacted; copied after it. */
	if ((unwind_mode & KU_MODE_COPY) && n)
		trace_find_interrupted_sp(s, n);
	if (compact && n) {
		__u32 tgid = s->rec.pid;
		const struct stacksnap_exec_ranges *r = bpf_map_lookup_elem(&exec_ranges, &tgid);
		__u32 c = r ? trace_compact(&s->rec.cap, &s->area, r, s->rec.more_start) : 0;
		__u64 cl = c;

		__stacksnap_opaque(cl);
		cl &= 0x1ffff;
		if (c && cl <= TRACE_STACK_MAX &&
		    !bpf_probe_read_kernel(s->area.in, (__u32)cl, s->area.out))
			n = c;
		else if (c) {
			/* Could not move it: send the copy as it is. */
			s->rec.cap.flags &= ~STACKSNAP_CAPTURE_COMPACT;
			s->rec.cap.data_len = s->rec.cap.stack_len;
		}
	}
	if (s->rec.more_start) {
		__u32 m = (__u32)trace_copy_interrupted_stack(s, n);

		if (m && m <= TRACE_STACK_MAX - 8 - ((n + 7) & ~7u))
			n = ((n + 7) & ~7u) + m;
		else
			s->rec.more_len = 0;
	}
	n = (n + 7) & ~7u;
	if (raw && raw_len) {
		__u64 o = n;

		__stacksnap_opaque(o);
		__stacksnap_opaque(raw_len);
		o &= TRACE_STACK_MAX - 1;
		raw_len &= TRACE_RAW_MAX * 2 - 1;
		if (raw_len > TRACE_RAW_MAX)
			raw_len = TRACE_RAW_MAX;
		if (n == TRACE_STACK_MAX || bpf_probe_read_kernel(s->area.in + o, raw_len, raw))
			raw_len = 0;
	} else {
		raw_len = 0;
	}
	s->rec.raw_len = raw_len;
	raw_len = (raw_len + 7) & ~7ull;
	if (s->rec.kframes) {
		__u64 o = n + raw_len, len = (__u64)s->rec.kframes * 8;

		__stacksnap_opaque(o);
		__stacksnap_opaque(len);
		if (o > TRACE_STACK_MAX + TRACE_RAW_MAX || len > KU_MAX_FRAMES * 8 ||
		    bpf_probe_read_kernel(s->area.in + o, len, s->kpcs))
			s->rec.kframes = 0;
		if (s->rec.kframes && unwind_mode == KU_MODE_BOTH) {
			/* Where the walk stopped, for the hybrid. */
			struct ku_end_state es = {
				.pc = s->kpcs[(s->rec.kframes - 1) & (KU_MAX_FRAMES - 1)],
				.sp = s->kev.end_sp, .rbp = s->kev.end_rbp,
				.rbx = s->kev.end_rbx, .valid = s->kev.end_valid,
				.end = s->kev.end,
			};

			o += len;
			__stacksnap_opaque(o);
			if (o <= TRACE_STACK_MAX + TRACE_RAW_MAX + KU_MAX_FRAMES * 8 &&
			    !bpf_probe_read_kernel(s->area.in + o, sizeof(es), &es))
				s->rec.kflags |= TRACE_KEND_STATE;
		}
	}
	total = sizeof(s->rec) + n + raw_len + (__u64)s->rec.kframes * 8 +
		(s->rec.kflags & TRACE_KEND_STATE ? sizeof(struct ku_end_state) : 0);
	if (python) {
		__u64 o = total - sizeof(s->rec), len;

		trace_py_walk(s);
		len = (__u64)s->rec.pyframes * sizeof(struct trace_py_frame);
		__stacksnap_opaque(o);
		__stacksnap_opaque(len);
		if (o > TRACE_STACK_MAX + TRACE_RAW_MAX + KU_MAX_FRAMES * 8 +
			sizeof(struct ku_end_state) ||
		    len > sizeof(s->py) ||
		    bpf_probe_read_kernel(s->area.in + o, len, s->py))
			s->rec.pyframes = 0;
		total += (__u64)s->rec.pyframes * sizeof(struct trace_py_frame);
	}
	__stacksnap_opaque(total);
	if (total > sizeof(*s) || trace_exp == 3)
		return 0;
	if (bpf_ringbuf_output(&events, s, total, wake_flags(s->rec.time, total))) {
		count(TRACE_STAT_LOST);
		return 0;
	}
	count(TRACE_STAT_EMITTED);
	return 0;
}

#endif
