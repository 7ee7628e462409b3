/* offcpu.bpf.c - the off-CPU capture: at a context switch, a traced
 * thread going off the CPU to wait (blocked, not preempted) sends its
 * user stack (an event of index off_event, as trace_tp sends one), and
 * when a traced thread is woken a record without stack names it (index
 * wake_event), so the loader's user pairs the two by thread: the time
 * between is the time it was blocked (not the wait for a CPU after). */
#include "bpf/trace_common.bpf.h"

/* The loader's event indexes, set before load. */
const volatile __u32 off_event = 0, wake_event = 0;

/* Kernels before 5.14 name the state field "state". */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* Whether t left the CPU to wait (sleeping, stopped...), not preempted
 * while it could run (TASK_RUNNING is 0), nor exiting (it never comes
 * back: its last switch is no wait). */
static __always_inline bool task_blocked(struct task_struct *t)
{
	if (t->flags & 0x00000004 /* PF_EXITING */)
		return false;
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state) != 0;
	return BPF_CORE_READ((struct task_struct___old *)t, state) != 0;
}

static __always_inline bool task_traced(struct task_struct *t)
{
	__u32 key = filter_tid ? (__u32)t->pid : (__u32)t->tgid;

	return bpf_map_lookup_elem(&traced, &key) != NULL;
}

/* Woken (in the waker's context): a header only, naming the woken thread
 * (pid, tid, comm of t, the time). */
static __always_inline void wake_mark(struct task_struct *t)
{
	struct trace_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		count(TRACE_STAT_LOST);
		return;
	}
	r->kind = TRACE_REC_EVENT;
	r->event = wake_event;
	r->time = bpf_ktime_get_ns();
	r->pid = t->tgid;
	r->tid = t->pid;
	r->ppid = r->ptid = 0;
	r->cpu = bpf_get_smp_processor_id();
	r->raw_len = 0;
	r->kframes = 0;
	r->kend = 0;
	__builtin_memcpy(r->comm, t->comm, sizeof(r->comm));
	__builtin_memset(&r->cap, 0, sizeof(r->cap));
	bpf_ringbuf_submit(r, 0);
	count(TRACE_STAT_EMITTED);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(trace_wakeup, struct task_struct *t)
{
	if (task_traced(t))
		wake_mark(t);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(trace_offcpu, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	struct ss_scratch *s;

	/* Going off to wait (a preemption is not a wait: the thread could
	 * run): the tracepoint runs on prev (still current), whose user
	 * registers were saved when it entered the kernel. */
	if (!task_blocked(prev) || !task_traced(prev) || !(s = scratch_get()))
		return 0;
	rec_header(&s->rec, TRACE_REC_EVENT);
	if (stacksnap_capture_task_regs(&s->rec.cap))
		return 0;
	return emit_event(s, TRACE_COOKIE(off_event, 0), NULL);
}
