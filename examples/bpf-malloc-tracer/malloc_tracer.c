/* malloc_tracer.c - a complete small tracer built on libstacksnap's eBPF
 * capture API: it runs a command and prints the call stack of every
 * malloc() of at least MIN bytes, unwound from the registers and stack
 * bytes its own BPF program (malloc_tracer.bpf.c) captured with
 * stacksnap.bpf.h. Only installed headers and libraries are used:
 *   bpftool btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h
 *   clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I. $(pkg-config --cflags stacksnap) \
 *         -c malloc_tracer.bpf.c -o malloc_tracer.bpf.o
 *   bpftool gen skeleton malloc_tracer.bpf.o name malloc_tracer_bpf > malloc_tracer.skel.h
 *   cc -I. -o malloc_tracer malloc_tracer.c $(pkg-config --cflags --libs stacksnap libbpf)
 * Run (as root): ./malloc_tracer 100000 -- ./program args
 *
 * The command's address space is followed as the CLI's trace follows it:
 * a perf event on the command (perf_event_open, a software dummy event)
 * records its mmap, comm (exec) and exit records from before its
 * execve(), with CLOCK_MONOTONIC times; the tracer applies them to the
 * library's process table (stacksnap_perf_data__decode,
 * stacksnap_procs__apply_perf_event) up to each allocation's time before
 * unwinding it. A command that has exited, even one reaped already, keeps
 * its mappings, so its stacks are unwound all the same; reading
 * /proc/PID/maps when its first record is read would find nothing. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <stacksnap.h>

#include "malloc_tracer.skel.h"

/* The record of malloc_tracer.bpf.c, in user-space types. */
struct alloc_rec {
	uint64_t size;
	uint64_t time;
	uint32_t pid, tid;
	struct stacksnap_capture cap;
	uint8_t stack[];
};

#define SIDEBAND_PAGES 64	/* data pages of the mmap records' ring */

struct tracer {
	struct stacksnap_procs *procs;	/* address spaces, followed */
	struct stacksnap_unwinder *uw;
	struct stacksnap_perf_data *dec; /* decodes the sideband's records */
	struct perf_event_mmap_page *meta; /* the sideband ring */
	const uint8_t *data;
	uint64_t data_size;
	uint64_t rec[1024];		/* a record copied out of the ring */
};

/* The perf event that records the command's mmaps, comm (exec) and exit,
 * opened before its execve(): no records, no sample, times in
 * CLOCK_MONOTONIC (bpf_ktime_get_ns's clock). */
static int open_sideband(struct tracer *t, struct stacksnap_ctx *ctx, pid_t pid)
{
	struct perf_event_attr a = { 0 };
	size_t len = (1 + SIDEBAND_PAGES) * (size_t)getpagesize();
	void *m;
	int fd;

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	a.mmap = a.mmap2 = a.comm = a.task = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	t->meta = m;
	t->data = (const uint8_t *)m + t->meta->data_offset;
	t->data_size = t->meta->data_size;
	t->dec = stacksnap_perf_data__open_attr(ctx, &a, sizeof(a));
	return t->dec ? 0 : -1;
}

/* Applies the sideband's records up to time until (all: UINT64_MAX) to
 * the process table, in the order the kernel wrote them (their time
 * order: one task, one ring); a later record stays in the ring. */
static void follow_until(struct tracer *t, uint64_t until)
{
	uint64_t head = __atomic_load_n(&t->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = t->meta->data_tail;

	while (tail < head) {
		const struct perf_event_header *h;
		struct stacksnap_perf_event ev;
		uint64_t off = tail % t->data_size;
		size_t size;

		h = (const void *)(t->data + off); /* a header never wraps */
		size = h->size;
		if (size < sizeof(*h) || size > sizeof(t->rec))
			break;
		for (size_t i = 0; i < size; i++) /* a record may wrap */
			((uint8_t *)t->rec)[i] = t->data[(off + i) % t->data_size];
		if (stacksnap_perf_data__decode(t->dec, t->rec, size, &ev) == 0) {
			if (ev.time > until)
				break;
			stacksnap_procs__apply_perf_event(t->procs, &ev);
		}
		tail += size;
	}
	__atomic_store_n(&t->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static int on_alloc(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct alloc_rec *r = data;
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	int n;

	if (len < sizeof(*r) || len - sizeof(*r) < r->cap.data_len)
		return 0;
	follow_until(t, r->time);
	n = stacksnap_procs__unwind_capture(t->procs, t->uw, (pid_t)r->pid, &r->cap,
					    r->stack, frames, 64, &end);
	printf("malloc(%" PRIu64 ") by %u/%u\n", r->size, r->pid, r->tid);
	for (int i = 0; i < n; i++) {
		struct stacksnap_sym sym;
		struct stacksnap_addrspace *as = stacksnap_procs__addrspace(t->procs, (pid_t)r->pid);

		if (stacksnap_addrspace__symbolize(as, frames[i].pc,
						   stacksnap_frame__is_return(&frames[i]),
						   0, &sym, 1) > 0 &&
		    sym.function)
			printf("#%d %s\n", i, sym.function);
		else
			printf("#%d 0x%" PRIx64 "\n", i, frames[i].pc);
	}
	printf("end: %s\n\n", stacksnap_end__str(end));
	return 0;
}

static void print_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= STACKSNAP_LOG_ERROR)
		fprintf(stderr, "%s\n", msg);
}

int main(int argc, char **argv)
{
	struct malloc_tracer_bpf *skel;
	struct ring_buffer *rb = NULL;
	struct tracer t = { 0 };
	struct stacksnap_ctx *ctx;
	int go[2], status, rc = 1;
	pid_t child;
	char c = 'g';

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: %s MIN_BYTES -- COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = print_log);
	ctx = stacksnap_ctx__new(&copts);
	t.procs = stacksnap_procs__new(ctx, NULL);
	t.uw = stacksnap_unwinder__new(NULL);
	/* The command waits for us before its execve(). */
	if (pipe(go))
		return 1;
	child = fork();
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	close(go[0]);
	if (open_sideband(&t, ctx, child)) {
		perror("perf_event_open (mmap records of the command)");
		goto out;
	}
	skel = malloc_tracer_bpf__open();
	if (!skel)
		goto out;
	skel->rodata->min_size = strtoull(argv[1], NULL, 0);
	if (malloc_tracer_bpf__load(skel)) {
		fprintf(stderr, "cannot load the BPF program (root needed)\n");
		goto out;
	}
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "malloc");
	skel->links.on_malloc = bpf_program__attach_uprobe_opts(
		skel->progs.on_malloc, child, "libc.so.6", 0, &uo);
	if (!skel->links.on_malloc) {
		fprintf(stderr, "cannot attach to malloc in libc.so.6\n");
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.allocs), on_alloc, &t, NULL);
	if (!rb)
		goto out;
	(void)!write(go[1], &c, 1);
	while (waitpid(child, &status, WNOHANG) == 0)
		ring_buffer__poll(rb, 100);
	/* Its mappings stay in the table after its exit: the records still
	 * in the ring are unwound against them. */
	ring_buffer__consume(rb);
	follow_until(&t, UINT64_MAX);
	rc = 0;
out:
	close(go[1]);
	waitpid(child, &status, 0);
	ring_buffer__free(rb);
	malloc_tracer_bpf__destroy(skel);
	stacksnap_perf_data__free(t.dec);
	stacksnap_unwinder__free(t.uw);
	stacksnap_procs__free(t.procs);
	stacksnap_ctx__free(ctx);
	return rc;
}
