/* sideband.c - the kernel's own records of the traced processes' code
 * mappings, execs, forks and exits (a dummy perf event per CPU, as perf
 * record keeps them), applied to the process table in time order up to
 * each event's time: an event resolves against the mappings its process
 * had when it happened, whenever it is read, even after the process (or a
 * library it dlclose()d) is gone. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "trace/trace_internal.h"

/* Records a ring can hold before they are applied: bursts of execs (a
 * build, a shell pipeline) write ~10 mmap records each. */
#define SB_RING_PAGES 128
/* A record is applied once it is this old at the start of a drain of the
 * BPF ring buffer even when no event asks for it: an event raised before
 * it is in the ring by then, and read by that drain. */
#define SB_SLACK_NS 50000000ull
#define SB_REC_WORDS 1024

/* One CPU's ring. Invariant: data is size bytes (a power of two) after
 * the metadata page; records in [data_tail, data_head) not applied yet. */
struct sb_ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size, map_len;
	/* The record at the tail, copied whole and decoded (has_head): its
	 * time decides the merge of the rings. */
	bool has_head;
	uint64_t head_time;
	uint32_t head_len;
};

/* Invariant: rec holds SB_REC_WORDS words per ring, more than the
 * largest record they carry (a mmap2 record: its fields and a path of
 * at most PATH_MAX); a larger one is skipped. */
struct trace_sideband {
	struct sb_ring *rings;
	size_t nrings;
	struct stacksnap_perf_data *dec;
	struct stacksnap_ctx *dec_ctx;	/* its log: records lost are said once */
	uint64_t *rec;		/* the head record of each ring */
	uint64_t applied, lost;
};

static void make_attr(struct perf_event_attr *a, bool build_id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	/* The BPF programs' bpf_ktime_get_ns(): one clock for both sides. */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	/* The file's build-id in the record (5.12+): the module is found by
	 * it, whatever happened to the path since. */
	a->build_id = build_id;
}

static int open_ring(struct sb_ring *r, struct perf_event_attr *a, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *m;

	if (fd < 0 && a->build_id) {
		a->build_id = 0;
		fd = syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	r->map_len = (SB_RING_PAGES + 1) * page;
	m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (m == MAP_FAILED) {
		int err = -errno;

		close((int)fd);
		return err;
	}
	r->fd = (int)fd;
	r->meta = m;
	r->data = (uint8_t *)m + page;
	r->size = SB_RING_PAGES * page;
	return 0;
}

void trace_sideband__free(struct trace_sideband *sb)
{
	if (!sb)
		return;
	for (size_t i = 0; i < sb->nrings; i++) {
		munmap(sb->rings[i].meta, sb->rings[i].map_len);
		close(sb->rings[i].fd);
	}
	free(sb->rings);
	free(sb->rec);
	stacksnap_perf_data__free(sb->dec);
	free(sb);
}

struct trace_sideband *trace_sideband__open(struct stacksnap_trace *tr)
{
	int ncpu = libbpf_num_possible_cpus();
	struct trace_sideband *sb = calloc(1, sizeof(*sb));
	struct perf_event_attr a;
	int err = 0;

	if (!sb || ncpu <= 0 || !(sb->rings = calloc((size_t)ncpu, sizeof(*sb->rings))) ||
	    !(sb->rec = malloc((size_t)ncpu * SB_REC_WORDS * 8))) {
		trace_sideband__free(sb);
		return NULL;
	}
	make_attr(&a, true);
	for (int cpu = 0; cpu < ncpu; cpu++) {
		err = open_ring(&sb->rings[sb->nrings], &a, cpu);
		if (err == -ENODEV || err == -ENOENT || err == -EINVAL)
			continue; /* an offline or absent CPU */
		if (err)
			break;
		sb->nrings++;
	}
	if (!err && sb->nrings)
		sb->dec = stacksnap_perf_data__open_attr(tr->ctx, &a, sizeof(a));
	sb->dec_ctx = tr->ctx;
	if (err || !sb->dec) {
		log_debug(LOG(tr), "no mmap records from the kernel (%s): mappings are "
			  "read from /proc when events are read",
			  strerror(err ? -err : ENODEV));
		trace_sideband__free(sb);
		return NULL;
	}
	return sb;
}

/* Copies the record at r's tail into buf and reads its time; false when
 * the ring holds no whole record. */
static bool peek(struct trace_sideband *sb, struct sb_ring *r, uint64_t *buf)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	struct perf_event_header h;
	struct stacksnap_perf_event ev;

	while (tail + sizeof(h) <= head) {
		size_t off = tail & (r->size - 1);

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(off + i) & (r->size - 1)];
		if (h.size < sizeof(h) || tail + h.size > head)
			return false;
		if (h.size > SB_REC_WORDS * 8) {
			tail += h.size;
			__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
			continue;
		}
		for (size_t i = 0; i < h.size; i++)
			((uint8_t *)buf)[i] = r->data[(off + i) & (r->size - 1)];
		if (h.type == PERF_RECORD_LOST && !sb->lost++)
			log_warn(&sb->dec_ctx->log, "the kernel dropped mmap records (ring "
				 "full): events of the processes concerned may not unwind");
		if (!stacksnap_perf_data__decode(sb->dec, buf, h.size, &ev) && ev.time) {
			r->has_head = true;
			r->head_time = ev.time;
			r->head_len = h.size;
			return true;
		}
		/* Without a time (lost, unknown): nothing to apply. */
		tail += h.size;
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return false;
}

/* Whether record ev concerns a process the trace follows (a child of
 * one, for a fork). */
static bool followed(struct stacksnap_trace *tr, const struct stacksnap_perf_event *ev)
{
	if (ev->pid <= 0)
		return false;
	if (tr->o.all_processes) {
		/* Every process: one met first here is read from its maps
		 * (the parent, for a fork: the child's life is in the
		 * records); a process gone is left out. */
		pid_t known = ev->type == STACKSNAP_PERF_FORK ? ev->ppid : ev->pid;

		if (known == getpid())
			return false;
		return procs_alive(tr->procs, known) ||
		       stacksnap_procs__attach_pid(tr->procs, known) == 0;
	}
	if (ev->type == STACKSNAP_PERF_FORK)
		return procs_alive(tr->procs, ev->ppid);
	return procs_alive(tr->procs, ev->pid);
}

void trace_sideband__apply(struct stacksnap_trace *tr, uint64_t until_ns)
{
	struct trace_sideband *sb = tr->sb;

	if (!sb)
		return;
	for (;;) {
		struct sb_ring *best = NULL;
		struct stacksnap_perf_event ev;
		uint64_t *buf;

		for (size_t i = 0; i < sb->nrings; i++) {
			struct sb_ring *r = &sb->rings[i];

			if (!r->has_head && !peek(sb, r, sb->rec + i * SB_REC_WORDS))
				continue;
			if (r->head_time <= until_ns && (!best || r->head_time < best->head_time))
				best = r;
		}
		if (!best)
			return;
		buf = sb->rec + (size_t)(best - sb->rings) * SB_REC_WORDS;
		if (!stacksnap_perf_data__decode(sb->dec, buf, best->head_len, &ev) &&
		    followed(tr, &ev)) {
			stacksnap_procs__apply_perf_event(tr->procs, &ev);
			sb->applied++;
		}
		best->has_head = false;
		__atomic_store_n(&best->meta->data_tail,
				 best->meta->data_tail + best->head_len, __ATOMIC_RELEASE);
	}
}

void trace_sideband__settle(struct stacksnap_trace *tr, uint64_t drained_from_ns)
{
	/* Not up to now: events raised after the drain began may be in the
	 * ring unread (the reader slowed by load, stopped, or its poll
	 * interrupted), and a record after them (their process's exit)
	 * applied first would leave them without mappings. */
	if (tr->sb && drained_from_ns > SB_SLACK_NS)
		trace_sideband__apply(tr, drained_from_ns - SB_SLACK_NS);
}
