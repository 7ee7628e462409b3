/* test_perf_data.c - the perf.data reader on files built here byte by
 * byte (header, attribute, COMM/MMAP2/FORK/SAMPLE records, rounds out of
 * time order, corruption), and the process table: fork copies mappings,
 * exec forgets them, a sample of this very process unwinds through it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "perfdata/perf_data.h"
#include "harness.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define ATTR_SIZE 128
#define SAMPLE_TYPE (PS_IP | PS_TID | PS_TIME | PS_PERIOD | PS_CALLCHAIN | \
		     PS_REGS_USER | PS_STACK_USER)
#define REGS_MASK 0xff0fffull /* perf's x86_64 user registers */

static struct stacksnap_ctx *ctx;
static char last_log[1024];

static void keep_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	snprintf(last_log, sizeof(last_log), "%s", msg);
}

/* A growing file image; every record is padded to 8 bytes. */
struct img {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct img *f, const void *p, size_t len)
{
	if (f->n + len > f->cap) {
		f->cap = (f->n + len) * 2 + 4096;
		f->b = realloc(f->b, f->cap);
	}
	memcpy(f->b + f->n, p, len);
	f->n += len;
}

static void put64(struct img *f, uint64_t v) { put(f, &v, 8); }
static void put32(struct img *f, uint32_t v) { put(f, &v, 4); }

static void pad8(struct img *f)
{
	static const uint8_t z[8];

	put(f, z, (8 - f->n % 8) % 8);
}

/* Record header; the size is patched in at the end of the record. */
static size_t rec_begin(struct img *f, uint32_t type, uint16_t misc)
{
	size_t at = f->n;

	put32(f, type);
	put(f, &misc, 2);
	put(f, &(uint16_t){ 0 }, 2);
	return at;
}

static void rec_end(struct img *f, size_t at, uint64_t time)
{
	put64(f, time); /* the trailer's last field: TIME */
	uint16_t size = (uint16_t)(f->n - at);
	memcpy(f->b + at + 6, &size, 2);
}

/* sample_id_all trailer for SAMPLE_TYPE: TID then TIME. */
static void trailer(struct img *f, uint32_t pid, uint32_t tid, size_t at,
		    uint64_t time)
{
	put32(f, pid);
	put32(f, tid);
	rec_end(f, at, time);
}

static void comm(struct img *f, uint32_t pid, uint32_t tid, const char *name,
		 bool exec, uint64_t time)
{
	size_t at = rec_begin(f, PERF_REC_COMM, exec ? PERF_MISC_COMM_EXEC : 0);

	put32(f, pid);
	put32(f, tid);
	put(f, name, strlen(name) + 1);
	pad8(f);
	trailer(f, pid, tid, at, time);
}

static void mmap2(struct img *f, uint32_t pid, uint64_t start, uint64_t len,
		  uint64_t pgoff, uint32_t prot, const char *path, uint64_t time)
{
	size_t at = rec_begin(f, PERF_REC_MMAP2, PERF_MISC_USER_MODE);

	put32(f, pid);
	put32(f, pid);
	put64(f, start);
	put64(f, len);
	put64(f, pgoff);
	put64(f, 0); /* maj, min */
	put64(f, 0); /* ino */
	put64(f, 0); /* ino_generation */
	put32(f, prot);
	put32(f, 0);
	put(f, path, strlen(path) + 1);
	pad8(f);
	trailer(f, pid, pid, at, time);
}

static void fork_rec(struct img *f, uint32_t type, uint32_t pid, uint32_t ppid,
		     uint32_t tid, uint32_t ptid, uint64_t time)
{
	size_t at = rec_begin(f, type, 0);

	put32(f, pid);
	put32(f, ppid);
	put32(f, tid);
	put32(f, ptid);
	put64(f, time);
	trailer(f, pid, tid, at, time);
}

static void round_end(struct img *f)
{
	size_t at = rec_begin(f, PERF_REC_FINISHED_ROUND, 0);
	uint16_t size = 8;

	memcpy(f->b + at + 6, &size, 2);
}

static void sample(struct img *f, uint32_t pid, uint32_t tid, uint64_t time,
		   const uint64_t *regs, const void *stack, uint64_t stack_len)
{
	size_t at = rec_begin(f, PERF_REC_SAMPLE, PERF_MISC_USER_MODE);

	put64(f, regs ? regs[8] : 0x1000); /* ip */
	put32(f, pid);
	put32(f, tid);
	put64(f, time);
	put64(f, 1000000); /* period */
	put64(f, 0);	   /* callchain: none */
	put64(f, regs ? 2 : 0); /* abi 64 */
	/* Values in ascending bit order of the mask: bits 0-11, 16-23. */
	for (int b = 0; regs && b < 24; b++)
		if (REGS_MASK >> b & 1)
			put64(f, regs[b]);
	uint64_t padded = (stack_len + 7) & ~7ull;
	put64(f, padded);
	if (padded) {
		put(f, stack, stack_len);
		pad8(f);
		put64(f, stack_len); /* dyn_size */
	}
	uint16_t size = (uint16_t)(f->n - at);
	memcpy(f->b + at + 6, &size, 2);
}

/* Header + attribute section first; data appended by the test; then
 * finish() patches the data section and writes an empty feature table. */
static void start(struct img *f)
{
	memset(f, 0, sizeof(*f));
	put64(f, PERF_MAGIC2);
	put64(f, PERF_FILE_HEADER_SIZE);
	put64(f, ATTR_SIZE + 16);
	put64(f, PERF_FILE_HEADER_SIZE); /* attrs */
	put64(f, ATTR_SIZE + 16);
	put64(f, 0); /* data, patched */
	put64(f, 0);
	put64(f, 0); /* event_types */
	put64(f, 0);
	for (int i = 0; i < 4; i++)
		put64(f, 0); /* no features */
	uint8_t attr[ATTR_SIZE] = { 0 };
	uint32_t type = 1, size = ATTR_SIZE;
	uint64_t st = SAMPLE_TYPE, flags = PA_FLAG_SAMPLE_ID_ALL, mask = REGS_MASK;
	uint32_t stack = 8192;
	memcpy(attr + PA_TYPE, &type, 4);
	memcpy(attr + PA_SIZE, &size, 4);
	memcpy(attr + PA_SAMPLE_TYPE, &st, 8);
	memcpy(attr + PA_FLAGS, &flags, 8);
	memcpy(attr + PA_SAMPLE_REGS_USER, &mask, 8);
	memcpy(attr + PA_SAMPLE_STACK_USER, &stack, 4);
	put(f, attr, sizeof(attr));
	put64(f, 0); /* no ids: one event */
	put64(f, 0);
	/* data starts here */
	uint64_t doff = f->n;
	memcpy(f->b + 40, &doff, 8);
}

static void finish(struct img *f)
{
	uint64_t doff, dsize;

	memcpy(&doff, f->b + 40, 8);
	dsize = f->n - doff;
	memcpy(f->b + 48, &dsize, 8);
}

static struct stacksnap_perf_data *open_img(struct img *f)
{
	return stacksnap_perf_data__open_mem(ctx, f->b, f->n, NULL);
}

static void test_events_in_time_order(void)
{
	struct img f;
	struct stacksnap_perf_event ev;
	uint64_t times[8];
	int n = 0, r;

	start(&f);
	comm(&f, 10, 10, "first", false, 100);
	fork_rec(&f, PERF_REC_FORK, 10, 10, 11, 10, 300);
	round_end(&f);
	/* Written late, but earlier than the round before's last record:
	 * perf's rule delivers it in time order. */
	comm(&f, 10, 10, "renamed", false, 200);
	fork_rec(&f, PERF_REC_EXIT, 10, 10, 11, 11, 400);
	round_end(&f);
	finish(&f);
	struct stacksnap_perf_data *pd = open_img(&f);
	CHECK(pd != NULL);
	while (pd && (r = stacksnap_perf_data__next(pd, &ev)) > 0 && n < 8) {
		times[n++] = ev.time;
		if (ev.time == 200) {
			CHECK(ev.type == STACKSNAP_PERF_COMM);
			CHECK(!strcmp(ev.comm, "renamed"));
			CHECK(ev.pid == 10 && ev.tid == 10);
		}
		if (ev.time == 300) {
			CHECK(ev.type == STACKSNAP_PERF_FORK);
			CHECK(ev.ppid == 10 && ev.tid == 11 && ev.ptid == 10);
		}
	}
	CHECK_EQ_U64(n, 4);
	for (int i = 1; i < n; i++)
		CHECKF(times[i - 1] <= times[i], "%d: %llu then %llu", i,
		       (unsigned long long)times[i - 1], (unsigned long long)times[i]);
	stacksnap_perf_data__free(pd);
	free(f.b);
}

static void test_corrupt_names_offset(void)
{
	struct img f;
	struct stacksnap_perf_event ev;

	start(&f);
	comm(&f, 10, 10, "x", false, 100);
	size_t bad = f.n;
	comm(&f, 10, 10, "y", false, 200);
	finish(&f);
	/* A record whose size runs past the data. */
	uint16_t size = 0x7ff8;
	memcpy(f.b + bad + 6, &size, 2);
	struct stacksnap_perf_data *pd = open_img(&f);
	CHECK(pd != NULL);
	int r;
	while (pd && (r = stacksnap_perf_data__next(pd, &ev)) > 0)
		;
	CHECK(pd && r == -EINVAL);
	char want[64];
	snprintf(want, sizeof(want), "at offset %#zx", bad);
	CHECKF(pd && strstr(stacksnap_perf_data__error(pd), want), "%s",
	       pd ? stacksnap_perf_data__error(pd) : "");
	stacksnap_perf_data__free(pd);

	/* A file cut inside its data section fails at open. */
	f.n -= 20;
	CHECK(open_img(&f) == NULL && errno == EINVAL);
	CHECKF(strstr(last_log, "offset 0x38"), "%s", last_log);
	/* Not perf.data at all. */
	memset(f.b, 'x', 16);
	CHECK(open_img(&f) == NULL);
	CHECKF(strstr(last_log, "offset 0: not a perf.data"), "%s", last_log);
	free(f.b);
}

/* The mappings of this process, as MMAP2 records. */
static void my_mmaps(struct img *f, uint32_t pid, uint64_t time)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4352];

	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long a, b, off;
		char perms[8], path[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &a, &b, perms,
			   &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		mmap2(f, pid, a, b - a, off, PROT_READ | PROT_EXEC, path, time);
	}
	if (m)
		fclose(m);
}

static uint64_t regs[24];
static uint8_t stack_copy[16384];
static size_t stack_len;

NOINLINE static void capture_here(void)
{
	uint64_t rip, rsp, rbp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	memset(regs, 0, sizeof(regs));
	regs[6] = rbp; /* by perf register number: ax bx cx dx si di bp sp ip */
	regs[7] = rsp;
	regs[8] = rip;
	/* Through the kernel: ASan's redzones forbid a plain copy. */
	struct iovec l = { stack_copy, sizeof(stack_copy) };
	struct iovec r = { (void *)(uintptr_t)rsp, sizeof(stack_copy) };
	ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	stack_len = got > 0 ? (size_t)got : 0;
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void sampled_caller(void)
{
	capture_here();
	__asm__ volatile("" ::: "memory");
}

static void test_sample_unwinds_through_procs(void)
{
	struct img f;
	struct stacksnap_perf_event ev;
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	int r, nframes = -1;
	pid_t me = getpid();

	sampled_caller();
	start(&f);
	comm(&f, 42, 42, "old-image", false, 1);
	mmap2(&f, 42, 0x1000, 0x1000, 0, PROT_READ | PROT_EXEC, "/nonexistent", 1);
	fork_rec(&f, PERF_REC_FORK, (uint32_t)me, 42, (uint32_t)me, 42, 2);
	comm(&f, (uint32_t)me, (uint32_t)me, "test_perf_data", true, 3);
	my_mmaps(&f, (uint32_t)me, 4);
	sample(&f, (uint32_t)me, (uint32_t)me, 5, regs, stack_copy,
	       stack_len > 8000 ? 8000 : stack_len);
	finish(&f);

	struct stacksnap_procs *procs = stacksnap_procs__new(ctx, NULL);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 64);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uo);
	struct stacksnap_perf_data *pd = open_img(&f);
	CHECK(procs && uw && pd);
	while (pd && (r = stacksnap_perf_data__next(pd, &ev)) > 0) {
		if (ev.type != STACKSNAP_PERF_SAMPLE) {
			CHECK(stacksnap_procs__apply_perf_event(procs, &ev) == 0);
			continue;
		}
		CHECK(ev.regs_abi == 2 && ev.regs_mask == REGS_MASK);
		CHECKF(ev.stack_len == (stack_len > 8000 ? 8000 : stack_len), "%llu vs %zu",
		       (unsigned long long)ev.stack_len, stack_len);
		STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev.pid, .tid = ev.tid,
			       .perf_regs_mask = ev.regs_mask, .perf_regs = ev.regs,
			       .stack = ev.stack, .stack_len = ev.stack_len);
		nframes = stacksnap_procs__unwind_sample(procs, uw, &s, frames, 64, &end);
	}
	CHECK(nframes >= 3);
	CHECK(!strcmp(stacksnap_procs__comm_of(procs, me) ?: "", "test_perf_data"));
	struct stacksnap_addrspace *as = stacksnap_procs__addrspace(procs, me);
	/* The exec forgot the parent's mapping at 0x1000. */
	STACKSNAP_OPTS(stacksnap_mapping, m);
	CHECK(stacksnap_addrspace__find_mapping(as, 0x1000, &m) == -ENOENT);
	/* Frame 1 is sampled_caller, frame 2 this test. */
	const char *want[] = { "capture_here", "sampled_caller",
			       "test_sample_unwinds_through_procs" };
	for (int i = 0; i < 3 && i < nframes; i++) {
		struct stacksnap_sym sym;

		CHECK(stacksnap_addrspace__symbolize(as, frames[i].pc, i > 0,
						     STACKSNAP_SYM_SYMTAB, &sym, 1) == 1);
		CHECKF(sym.function && !strcmp(sym.function, want[i]),
		       "frame %d: %s, want %s", i, sym.function ? sym.function : "?",
		       want[i]);
	}
	/* The old process keeps its mapping; a forked child copies it. */
	CHECK(stacksnap_procs__fork(procs, 42, 42, 43, 43) == 0);
	CHECK(stacksnap_addrspace__find_mapping(stacksnap_procs__addrspace(procs, 43),
						0x1800, &m) == 0 &&
	      m.start == 0x1000 && !strcmp(m.path, "/nonexistent"));
	CHECK(!strcmp(stacksnap_procs__comm_of(procs, 43) ?: "", "old-image"));
	/* A stack copy too small ends the walk as such. */
	STACKSNAP_OPTS(stacksnap_sample, s2, .pid = me, .tid = me,
		       .perf_regs_mask = REGS_MASK, .perf_regs = regs,
		       .stack = stack_copy, .stack_len = 8);
	stacksnap_procs__unwind_sample(procs, uw, &s2, frames, 64, &end);
	CHECK(end == STACKSNAP_END_STACK_COPY);
	stacksnap_perf_data__free(pd);
	stacksnap_unwinder__free(uw);
	stacksnap_procs__free(procs);
	free(f.b);
}

static void setup(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, o, .log = keep_log);
	ctx = stacksnap_ctx__new(&o);
}

static void teardown(void)
{
	stacksnap_ctx__free(ctx);
}

TEST_MAIN("perf_data", TEST(setup), TEST(test_events_in_time_order),
	  TEST(test_corrupt_names_offset), TEST(test_sample_unwinds_through_procs),
	  TEST(teardown))
