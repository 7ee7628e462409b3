/* perf-ring-unwind.c - a live profiler on libstacksnap's sample API: it
 * runs a command with a perf event of its own (perf_event_open: cpu-clock
 * samples with the user registers and 16 KiB of user stack, plus the
 * command's mmap, comm and exit records), reads the event's ring buffer
 * as the kernel fills it, decodes each record with
 * stacksnap_perf_data__decode, follows the command's address space with
 * stacksnap_procs__apply_perf_event and unwinds each sample with
 * stacksnap_procs__unwind_sample; then prints the stacks seen most often.
 * The event is opened on the command before its execve(), so even a
 * command that exits at once is unwound (its mappings come from the
 * records, not from /proc). Built against the installed library:
 *   cc -O2 perf-ring-unwind.c $(pkg-config --cflags --libs stacksnap)
 * Run: ./perf-ring-unwind COMMAND [ARGS...]   (perf_event_paranoid <= 1,
 * or root) */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stacksnap.h>

#define DATA_PAGES 256		/* 1 MiB of ring */
#define STACK_BYTES 16384
#define MAX_STACKS 256

/* Stacks aggregated by their text: "leaf <- caller <- ...". */
struct stack_count {
	char *text;
	unsigned count;
};

struct profiler {
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_perf_data *dec;
	struct perf_event_mmap_page *meta;
	const uint8_t *data;
	uint64_t data_size;
	uint64_t *rec;			/* one record, copied out of the ring */
	struct stack_count stacks[MAX_STACKS];
	unsigned nstacks, samples, lost;
};

static void print_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= STACKSNAP_LOG_ERROR)
		fprintf(stderr, "libstacksnap: %s\n", msg);
}

static void count_stack(struct profiler *p, const char *text)
{
	for (unsigned i = 0; i < p->nstacks; i++)
		if (!strcmp(p->stacks[i].text, text)) {
			p->stacks[i].count++;
			return;
		}
	if (p->nstacks < MAX_STACKS) {
		p->stacks[p->nstacks].text = strdup(text);
		p->stacks[p->nstacks++].count = 1;
	}
}

/* One sample: unwound against the process's mappings as the records so
 * far describe them, each frame named (looked up at pc - 1 where
 * stacksnap_frame__is_return says). */
static void on_sample(struct profiler *p, const struct stacksnap_perf_event *ev)
{
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	char text[2048];
	size_t len = 0;
	int n;

	if (!ev->regs_abi)
		return; /* no user registers (a sample in the kernel thread) */
	STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev->pid, .tid = ev->tid,
		       .perf_regs_mask = ev->regs_mask, .perf_regs = ev->regs,
		       .stack = ev->stack, .stack_len = ev->stack_len);
	n = stacksnap_procs__unwind_sample(p->procs, p->uw, &s, frames, 64, &end);
	if (n < 0)
		return;
	p->samples++;
	text[0] = 0;
	for (int i = 0; i < n && i < 8; i++) {
		struct stacksnap_addrspace *as = stacksnap_procs__addrspace(p->procs, ev->pid);
		struct stacksnap_sym sym;
		const char *name = "??";

		if (as && stacksnap_addrspace__symbolize(as, frames[i].pc,
							 stacksnap_frame__is_return(&frames[i]),
							 STACKSNAP_SYM_SYMTAB, &sym, 1) > 0 &&
		    sym.function)
			name = sym.function;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s",
					i ? " <- " : "", name);
		if (len >= sizeof(text))
			break;
	}
	count_stack(p, text);
}

/* Reads every record the kernel has written since the last call. */
static void drain(struct profiler *p)
{
	uint64_t head = __atomic_load_n(&p->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = p->meta->data_tail;

	while (tail < head) {
		uint64_t off = tail % p->data_size;
		const struct perf_event_header *h = (const void *)(p->data + off);
		struct stacksnap_perf_event ev;
		size_t size = h->size;

		if (size < sizeof(*h))
			break;
		/* A record may wrap around the ring's end: decode a copy. */
		for (size_t i = 0; i < size; i++)
			((uint8_t *)p->rec)[i] = p->data[(off + i) % p->data_size];
		if (stacksnap_perf_data__decode(p->dec, p->rec, size, &ev) == 0) {
			if (ev.type == STACKSNAP_PERF_SAMPLE)
				on_sample(p, &ev);
			else if (ev.type == STACKSNAP_PERF_LOST)
				p->lost += (unsigned)ev.lost;
			else
				stacksnap_procs__apply_perf_event(p->procs, &ev);
		}
		tail += size;
	}
	__atomic_store_n(&p->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static int by_count(const void *a, const void *b)
{
	const struct stack_count *x = a, *y = b;

	return (int)y->count - (int)x->count;
}

int main(int argc, char **argv)
{
	struct perf_event_attr a = { 0 };
	struct profiler p = { 0 };
	struct stacksnap_ctx *ctx;
	size_t ring = (1 + DATA_PAGES) * (size_t)getpagesize();
	int go[2], fd, status;
	pid_t child;
	char c = 'g';
	void *m;

	if (argc < 2) {
		fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = print_log);
	ctx = stacksnap_ctx__new(&copts);
	p.procs = stacksnap_procs__new(ctx, NULL);
	p.uw = stacksnap_unwinder__new(NULL);
	p.rec = malloc(65536); /* a record's size field is 16 bits */
	if (!ctx || !p.procs || !p.uw || !p.rec || pipe(go))
		return 1;
	child = fork(); /* the command waits for its event before execve() */
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	close(go[0]);

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_freq = 999;
	a.freq = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = 0xff01ff; /* ax..sp, ip, r8..r15 (perf_regs.h) */
	a.sample_stack_user = STACK_BYTES;
	a.sample_id_all = 1;
	a.mmap = a.mmap2 = a.comm = a.task = 1;
	a.exclude_kernel = 1;
	a.wakeup_events = 16;
	fd = (int)syscall(SYS_perf_event_open, &a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		perror("perf_event_open (perf_event_paranoid <= 1, or root)");
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		return 1;
	}
	m = mmap(NULL, ring, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 1;
	p.meta = m;
	p.data = (const uint8_t *)m + p.meta->data_offset;
	p.data_size = p.meta->data_size;
	/* The decoder of the records this event's attributes describe. */
	p.dec = stacksnap_perf_data__open_attr(ctx, &a, sizeof(a));
	if (!p.dec)
		return 1;

	(void)!write(go[1], &c, 1);
	close(go[1]);
	while (waitpid(child, &status, WNOHANG) == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		poll(&pfd, 1, 100);
		drain(&p);
	}
	drain(&p); /* what the exit left in the ring */

	qsort(p.stacks, p.nstacks, sizeof(p.stacks[0]), by_count);
	printf("%u samples, %u lost\n", p.samples, p.lost);
	for (unsigned i = 0; i < p.nstacks && i < 5; i++)
		printf("%6u  %s\n", p.stacks[i].count, p.stacks[i].text);
	for (unsigned i = 0; i < p.nstacks; i++)
		free(p.stacks[i].text);
	munmap(m, ring);
	close(fd);
	stacksnap_perf_data__free(p.dec);
	stacksnap_unwinder__free(p.uw);
	stacksnap_procs__free(p.procs);
	stacksnap_ctx__free(ctx);
	free(p.rec);
	return 0;
}
