/* malloc_tracer.bpf.c - the BPF half of the example tracer: a uprobe on
 * malloc that records, for allocations of at least min_size bytes, the
 * size and an unwind context (stacksnap.bpf.h) into a ring buffer.
 * Built with: clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I. -c */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <stacksnap.bpf.h>

#define STACK_MAX 16384

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 min_size = 65536;

/* What one allocation leaves in the ring buffer: the stack bytes follow
 * the header, cap.data_len of them. */
struct alloc_rec {
	__u64 size;
	__u64 time;		/* CLOCK_MONOTONIC, as the mmap records' */
	__u32 pid, tid;
	struct stacksnap_capture cap;
	__u8 stack[STACKSNAP_BPF_BUF(STACK_MAX)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alloc_rec);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} allocs SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(on_malloc, __u64 size)
{
	__u32 zero = 0;
	struct alloc_rec *r;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 len;

	if (size < min_size || !(r = bpf_map_lookup_elem(&scratch, &zero)))
		return 0;
	r->size = size;
	r->time = bpf_ktime_get_ns();
	r->pid = id >> 32;
	r->tid = (__u32)id;
	stacksnap_capture_regs(&r->cap, ctx);
	len = offsetof(struct alloc_rec, stack) +
	      stacksnap_capture_stack(&r->cap, r->stack, STACK_MAX, STACK_MAX);
	if (len <= sizeof(*r))
		bpf_ringbuf_output(&allocs, r, len, 0);
	return 0;
}
