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
 * Run (as root): ./malloc_tracer 100000 -- ./program args */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <stacksnap.h>

#include "malloc_tracer.skel.h"

/* The record of malloc_tracer.bpf.c, in user-space types. */
struct alloc_rec {
	uint64_t size;
	uint32_t pid, tid;
	struct stacksnap_capture cap;
	uint8_t stack[];
};

struct tracer {
	struct stacksnap_procs *procs;	/* address spaces, once per process */
	struct stacksnap_unwinder *uw;
	pid_t attached;			/* pid whose maps were read */
};

static int on_alloc(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct alloc_rec *r = data;
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	int n;

	if (len < sizeof(*r) || len - sizeof(*r) < r->cap.data_len)
		return 0;
	if (t->attached != (pid_t)r->pid) {
		stacksnap_procs__attach_pid(t->procs, (pid_t)r->pid);
		t->attached = (pid_t)r->pid;
	}
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
	ring_buffer__consume(rb);
	rc = 0;
out:
	close(go[1]);
	waitpid(child, &status, 0);
	ring_buffer__free(rb);
	malloc_tracer_bpf__destroy(skel);
	stacksnap_unwinder__free(t.uw);
	stacksnap_procs__free(t.procs);
	stacksnap_ctx__free(ctx);
	return rc;
}
