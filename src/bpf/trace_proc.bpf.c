/* trace_proc.bpf.c - following the traced processes: new processes join
 * the filter at fork (unless --no-inherit), and fork, exec and exit are
 * reported to the loader, which keeps its address spaces current. */
#include "bpf/trace_common.bpf.h"

static __always_inline void proc_rec(__u32 kind, __u32 pid, __u32 tid,
				     __u32 ppid, __u32 ptid)
{
	struct trace_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		count(TRACE_STAT_LOST);
		return;
	}
	rec_header(r, kind);
	r->pid = pid;
	r->tid = tid;
	r->ppid = ppid;
	r->ptid = ptid;
	bpf_ringbuf_submit(r, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(trace_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ppid = parent->pid;
	__u32 ctgid = child->tgid, cpid = child->pid;
	__u32 one = 1;

	if (filter_tid || !bpf_map_lookup_elem(&traced, &ptgid))
		return 0;
	if (ctgid != ptgid) {
		if (!inherit)
			return 0;
		bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY);
	}
	proc_rec(TRACE_REC_FORK, ctgid, cpid, ptgid, ppid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(trace_exec, struct task_struct *p, pid_t old_pid)
{
	if (!current_traced())
		return 0;
	proc_rec(TRACE_REC_EXEC, p->tgid, p->pid, p->tgid, old_pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(trace_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;

	if (!current_traced())
		return 0;
	proc_rec(TRACE_REC_EXIT, tgid, p->pid, 0, 0);
	/* The last thread: a later process with this pid is not ours. */
	if (!filter_tid && BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&traced, &tgid);
	return 0;
}
