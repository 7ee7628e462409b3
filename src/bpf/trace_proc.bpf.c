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

	if (all_processes) {
		if (ptgid != self_tgid)
			proc_rec(TRACE_REC_FORK, ctgid, cpid, ptgid, ppid);
		return 0;
	}
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
	if (!filter_tid && !all_processes && BPF_CORE_READ(p, signal, live.counter) == 0)
		bpf_map_delete_elem(&traced, &tgid);
	return 0;
}

/* --compact keeps only the stack words that point into the executable
 * ranges of exec_ranges; a mapping made executable after the loader last
 * wrote them (dlopen, a JIT) would have its return addresses dropped from
 * every compacted stack until a miss made the loader look again, and no
 * miss comes, since the dropped words are what would miss. So an mmap or
 * mprotect with PROT_EXEC by a traced process removes its ranges, at entry
 * (events inside the call go out whole) and again at exit (ranges the
 * loader wrote while the call ran may lack the new mapping): the next event
 * is sent whole and the loader writes ranges that have it. */
#define SS_PROT_EXEC 4

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);	/* tid inside an executable mmap/mprotect */
	__type(value, __u32);
} exec_mapping SEC(".maps");

static __always_inline int exec_map_enter(unsigned long prot)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, one = 1;

	if (!compact || !(prot & SS_PROT_EXEC) || !current_traced())
		return 0;
	bpf_map_delete_elem(&exec_ranges, &tgid);
	bpf_map_update_elem(&exec_mapping, &tid, &one, BPF_ANY);
	return 0;
}

static __always_inline int exec_map_exit(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;

	if (!compact || !bpf_map_lookup_elem(&exec_mapping, &tid))
		return 0;
	bpf_map_delete_elem(&exec_mapping, &tid);
	bpf_map_delete_elem(&exec_ranges, &tgid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int trace_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	return exec_map_enter(ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int trace_mmap_exit(void *ctx)
{
	return exec_map_exit();
}

SEC("tracepoint/syscalls/sys_enter_mprotect")
int trace_mprotect_enter(struct trace_event_raw_sys_enter *ctx)
{
	return exec_map_enter(ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_mprotect")
int trace_mprotect_exit(void *ctx)
{
	return exec_map_exit();
}
