/* kunwind.bpf.c - the in-kernel unwinder's own capture program: at a
 * tracepoint hit by a followed process, walk the user stack over the
 * tables in BPF maps (kunwind_walk.bpf.h) and send the frames' pcs (kernel
 * mode), a copy of the stack (copy mode), or both, for the same event, to
 * a ring buffer. Processes are followed across fork. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* SS_KUNWIND_EXP (measurements): 1 returns after the pid check, 2 sends
 * the event without walking, 3 walks without sending, 4 and 5 walk
 * without the row cache or the stack window. */
volatile const __u32 ku_exp = 0;
#define KU_WALK_EXP ku_exp
#include "bpf/kunwind_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before the program is loaded. */
volatile const __u32 ku_mode = KU_MODE_KERNEL;
volatile const __u32 ku_max_frames = KU_MAX_FRAMES;
volatile const __u32 ku_stack_size = KU_MAX_STACK;
volatile const __s32 ku_syscall_nr = -1; /* raw_syscalls filter; -1: all */
volatile const __u32 ku_follow_forks = 1;

/* Followed processes (tgid -> 1). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KU_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} ku_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} ku_events SEC(".maps");

/* Wake the reader only once this much is waiting: a wakeup per event
 * (the ring buffer's default when the reader has caught up) is an
 * irq_work self-IPI, ~1 us in a VM: more than the walk itself. The reader
 * polls with a timeout and drains what is there (kunwind__poll). */
#define KU_RB_WAKE_BYTES (1u << 20)

static __always_inline __u64 ku_rb_flags(void)
{
	return bpf_ringbuf_query(&ku_events, BPF_RB_AVAIL_DATA) >= KU_RB_WAKE_BYTES
		? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* One event under construction: header, pcs, then the stack copy right
 * after the last pc (so the record is exactly as long as it needs). The
 * verifier bounds a chunk's offset and length separately, so one chunk
 * more than the copy can use is reserved. */
struct ku_scratch {
	struct ku_event ev;
	__u64 pcs[KU_MAX_FRAMES];
	__u8 stack[KU_MAX_STACK + 4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ku_scratch);
} ku_scratch SEC(".maps");

/* Events dropped because the ring buffer was full. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ku_lost SEC(".maps");

/* Copies the user stack from sp into dst: the rest of sp's page, then
 * whole pages (the stack's end is page-aligned, so a page read never
 * crosses it), keeping what was read before the first page that faults (a
 * non-sleepable program cannot fault pages in). Constant-size page reads
 * keep the verifier's bounds simple. Returns the bytes kept (<= want). */
static __always_inline __u32 ku_copy_stack(__u8 *dst, __u64 sp, __u32 want)
{
	__u32 done = 4096 - (sp & 4095);

	if (want > KU_MAX_STACK)
		want = KU_MAX_STACK;
	if (bpf_probe_read_user(dst, done, (const void *)sp))
		return 0;
	for (int i = 0; i < KU_MAX_STACK / 4096; i++) {
		if (done >= want || done > KU_MAX_STACK)
			break;
		if (bpf_probe_read_user(dst + done, 4096, (const void *)(sp + done)))
			break;
		done += 4096;
	}
	return done < want ? done : want;
}

static __always_inline int ku_capture(__u32 event_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, zero = 0, len;
	struct task_struct *task;
	struct ku_scratch *s;
	struct pt_regs *regs;
	__u64 ip, sp, bp, bx;

	if (!bpf_map_lookup_elem(&ku_pids, &tgid))
		return 0;
	if (ku_exp == 1)
		return 0;
	s = bpf_map_lookup_elem(&ku_scratch, &zero);
	if (!s)
		return 0;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	/* Plain loads (the pointer is trusted BTF): no helper calls. */
	ip = regs->ip;
	sp = regs->sp;
	bp = regs->bp;
	bx = regs->bx;
	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.time_ns = bpf_ktime_get_ns();
	s->ev.pid = tgid;
	s->ev.tid = (__u32)pid_tgid;
	s->ev.event_id = event_id;
	s->ev.regs_ip = ip;
	s->ev.regs_sp = sp;
	s->ev.regs_bp = bp;
	s->ev.regs_bx = bx;
	bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));
	if (ip == 0 || sp == 0) {
		s->ev.end = KU_END_NO_REGS;
	} else if ((ku_mode & KU_MODE_KERNEL) && ku_exp != 2) {
		ku_walk(&s->ev, s->pcs, ip, sp, bp, bx, ku_max_frames);
	}
	len = s->ev.nframes;
	if (len > KU_MAX_FRAMES)
		len = KU_MAX_FRAMES;
	len *= 8;
	if ((ku_mode & KU_MODE_COPY) && sp) {
		__u32 off = len;

		if (off > KU_MAX_FRAMES * 8) /* spelt out for the verifier */
			off = KU_MAX_FRAMES * 8;
		s->ev.stack_start = sp;
		s->ev.stack_len = ku_copy_stack((__u8 *)s->pcs + off, sp, ku_stack_size);
		s->ev.flags |= KU_EV_COPY;
		len = off + s->ev.stack_len;
	}
	len += sizeof(s->ev);
	if (ku_exp == 3)
		return 0;
	if (len > sizeof(*s))
		len = sizeof(*s);
	if (bpf_ringbuf_output(&ku_events, s, len, ku_rb_flags())) {
		__u64 *lost = bpf_map_lookup_elem(&ku_lost, &zero);

		if (lost)
			(*lost)++;
	}
	return 0;
}

/* Any tracepoint: the loader attaches this one to the event asked for. */
SEC("tracepoint")
int ku_tracepoint(void *ctx)
{
	return ku_capture(0);
}

/* Threads with an executable mmap in flight (tid -> 1): its mapping
 * exists only once the call returns. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} ku_exec_mmaps SEC(".maps");

/* Tells user space that a followed process's code mappings changed
 * (exec, executable mmap), so it loads the new tables at once rather than
 * when a walk first misses them. */
static __always_inline void ku_notify(__u32 tgid, __u32 tid, __u8 flag)
{
	struct ku_event *ev = bpf_ringbuf_reserve(&ku_events, sizeof(*ev), 0);

	if (!ev)
		return;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->time_ns = bpf_ktime_get_ns();
	ev->pid = tgid;
	ev->tid = tid;
	ev->flags = flag;
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP); /* rare, and urgent */
}

#define KU_NR_MMAP 9
#define KU_PROT_EXEC 4

/* raw_syscalls:sys_enter with a syscall-number filter. */
SEC("tp_btf/sys_enter")
int BPF_PROG(ku_sys_enter, struct pt_regs *regs, long id)
{
	if (id == KU_NR_MMAP && (BPF_CORE_READ(regs, dx) & KU_PROT_EXEC)) {
		__u64 pid_tgid = bpf_get_current_pid_tgid();
		__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid, one = 1;

		if (bpf_map_lookup_elem(&ku_pids, &tgid))
			bpf_map_update_elem(&ku_exec_mmaps, &tid, &one, BPF_ANY);
	}
	if (ku_syscall_nr == -2 || (ku_syscall_nr >= 0 && id != ku_syscall_nr))
		return 0;
	return ku_capture((__u32)id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ku_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;

	if (!bpf_map_lookup_elem(&ku_exec_mmaps, &tid))
		return 0;
	bpf_map_delete_elem(&ku_exec_mmaps, &tid);
	ku_notify(pid_tgid >> 32, tid, KU_EV_MAPS_CHANGED);
	return 0;
}

/* Children of followed processes are followed, starting with a copy of
 * their parent's mapping table (a fork shares the parent's code). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(ku_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u32 one = 1;
	struct ku_proc *p;

	if (!ku_follow_forks || ptgid == ctgid || !bpf_map_lookup_elem(&ku_pids, &ptgid))
		return 0;
	bpf_map_update_elem(&ku_pids, &ctgid, &one, BPF_ANY);
	p = bpf_map_lookup_elem(&ku_procs, &ptgid);
	if (p)
		bpf_map_update_elem(&ku_procs, &ctgid, p, BPF_ANY);
	return 0;
}

/* exec replaces the code: the old table must not be used (walks end with
 * KU_END_NO_PROC until user space has loaded the new one). */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ku_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!bpf_map_lookup_elem(&ku_pids, &tgid))
		return 0;
	bpf_map_delete_elem(&ku_procs, &tgid);
	ku_notify(tgid, (__u32)bpf_get_current_pid_tgid(), KU_EV_MAPS_CHANGED);
	return 0;
}
