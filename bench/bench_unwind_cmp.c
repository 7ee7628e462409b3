/* bench_unwind_cmp.c - unwinding speed side by side: the same captured
 * snapshots of the stall target (registers + copied stacks) unwound by
 * stacksnap, by libunwind remote-from-copy (unw_create_addr_space with
 * accessors reading the copy) and by libdw (dwfl_attach_state fed the same
 * registers and memory, dwfl_getthread_frames); ns per frame warm and cold,
 * for a deep-stack case and a many-libraries case. */
#define _GNU_SOURCE
#include "lu_remote.h"

#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "stacksnap.h"

#define MAX_THREADS 64
#define MAX_FRAMES 2048
#define COLD_RUNS 5
#define WARM_BATCHES 9

static char target_path[4096], hop_path[4096];
static struct lu_thread threads[MAX_THREADS];
static int nthreads;
static int target_pid;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct result {
	double cold[COLD_RUNS], warm[WARM_BATCHES];
	double cold_cpu[COLD_RUNS]; /* the cold runs' CPU time: the wall time
				       on a shared machine includes waits */
	double cached[COLD_RUNS]; /* stacksnap: cold, the table cache filled */
	double cached_cpu[COLD_RUNS];
	int have_cached;
	long frames;	/* per walk of every thread */
	int complete;	/* threads whose walk reached the bottom */
	int ok;		/* 0: the unwinder could not run at all */
};

/* ---- stacksnap ---- */

static struct stacksnap_regs ss_regs(const struct lu_thread *t)
{
	struct stacksnap_regs r = { .valid = (1u << STACKSNAP_REG_COUNT) - 1 };

	memcpy(r.regs, t->regs, sizeof(r.regs));
	return r;
}

static long ss_walk_all(struct stacksnap_addrspace *as,
			struct stacksnap_unwinder *uw,
			struct stacksnap_mem *mem, int *complete)
{
	static struct stacksnap_frame frames[MAX_FRAMES];
	long total = 0;

	*complete = 0;
	for (int i = 0; i < nthreads; i++) {
		struct stacksnap_regs r = ss_regs(&threads[i]);
		enum stacksnap_end end;
		int n;

		stacksnap_mem__set_copy(mem, threads[i].stack, threads[i].stack_len,
					threads[i].stack_base);
		n = stacksnap_unwind(uw, as, &r, mem, frames, MAX_FRAMES, &end);
		total += n > 0 ? n : 0;
		*complete += end == STACKSNAP_END_COMPLETE;
	}
	return total;
}

/* Cold runs of stacksnap only, for a profiler (--profile-cold). */
static int profile_cold_runs;
static const char *profile_cache_dir; /* --profile-cold ... DIR: with that cache */

/* Cold again, with a table cache directory that a first context filled
 * (its whole tables written as it made them): what a tool that keeps a
 * cache pays from its second run on. The default context above has no
 * cache: nothing is read from or written to disk. */
static void bench_stacksnap_cached(struct result *res,
				   struct stacksnap_unwinder *uw,
				   struct stacksnap_mem *mem)
{
	char dir[] = "/tmp/bench-unwind-cache-XXXXXX", cmd[64];
	int complete;

	if (!mkdtemp(dir))
		return;
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .cache_dir = dir);
	for (int r = -1; r < COLD_RUNS; r++) {
		uint64_t c0 = cpu_ns(), t0 = now_ns();
		struct stacksnap_ctx *ctx = stacksnap_ctx__new(&co);
		struct stacksnap_addrspace *as = ctx ? stacksnap_addrspace__from_pid(ctx, target_pid)
						     : NULL;
		long frames = as ? ss_walk_all(as, uw, mem, &complete) : 0;

		if (r >= 0) { /* run -1 fills the cache */
			res->cached[r] = (double)(now_ns() - t0) / (frames ? frames : 1);
			res->cached_cpu[r] = (double)(cpu_ns() - c0) / (frames ? frames : 1);
		}
		stacksnap_addrspace__free(as);
		stacksnap_ctx__free(ctx);
		if (!frames)
			goto out;
	}
	res->have_cached = 1;
out:
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "bench_unwind_cmp: could not remove %s\n", dir);
}

/* --profile-cold: the context's phases, medians over the runs. */
#define PROFILE_MAX 4096
static double prof_total[PROFILE_MAX], prof_module[PROFILE_MAX], prof_table[PROFILE_MAX];
static double prof_cpu[PROFILE_MAX];


static void profile_phases(const struct stacksnap_ctx *ctx, double total_ns,
			   double cpu, int r)
{
	struct stacksnap_ctx_stats st = { .sz = sizeof(st) };

	if (r >= PROFILE_MAX || stacksnap_ctx__stats(ctx, &st))
		return;
	prof_total[r] = total_ns;
	prof_cpu[r] = cpu;
	prof_module[r] = (double)st.module_ns;
	prof_table[r] = (double)st.table_ns;
	if (r == 0)
		printf("modules %u, tables whole %u lazy %u (%u FDEs) cached %u\n",
		       st.modules, st.tables_whole, st.tables_lazy, st.lazy_fdes,
		       st.tables_cached);
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

static void bench_stacksnap(struct result *res, int warm_iters)
{
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = MAX_FRAMES);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uo);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy("", 0, 0);
	struct stacksnap_ctx *ctx = NULL;
	struct stacksnap_addrspace *as = NULL;

	/* Cold: a new context (empty module cache) and address space, then
	 * one walk of every thread: maps, ELF, table compilation included. */
	int cold_runs = profile_cold_runs ? profile_cold_runs : COLD_RUNS;

	for (int r = 0; r < cold_runs; r++) {
		if (as)
			stacksnap_addrspace__free(as);
		if (ctx)
			stacksnap_ctx__free(ctx);
		uint64_t c0 = cpu_ns(), t0 = now_ns();
		STACKSNAP_OPTS(stacksnap_ctx_opts, co, .cache_dir = profile_cache_dir);
		ctx = stacksnap_ctx__new(&co);
		as = stacksnap_addrspace__from_pid(ctx, target_pid);
		if (!as)
			return;
		res->frames = ss_walk_all(as, uw, mem, &res->complete);
		res->cold[r % COLD_RUNS] = (double)(now_ns() - t0) / (res->frames ? res->frames : 1);
		res->cold_cpu[r % COLD_RUNS] = (double)(cpu_ns() - c0) / (res->frames ? res->frames : 1);
		if (profile_cold_runs)
			profile_phases(ctx, (double)(now_ns() - t0),
				       (double)(cpu_ns() - c0), r);
	}
	for (int b = 0; b < WARM_BATCHES; b++) {
		int complete;
		uint64_t t0 = now_ns();
		long f = 0;

		for (int i = 0; i < warm_iters; i++)
			f += ss_walk_all(as, uw, mem, &complete);
		res->warm[b] = (double)(now_ns() - t0) / (f ? f : 1);
	}
	res->ok = 1;
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	if (!profile_cold_runs)
		bench_stacksnap_cached(res, uw, mem);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
}

/* --warm deep|libs BATCHES [ITERS]: stacksnap's warm walk alone (one cold
 * walk first, then BATCHES batches of ITERS walks of every thread), for a
 * profiler and for runs of two builds interleaved: prints the median and
 * range of wall and thread-CPU ns per frame. */
static void bench_warm_only(int batches, int iters)
{
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = MAX_FRAMES);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uo);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy("", 0, 0);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as = ctx ? stacksnap_addrspace__from_pid(ctx, target_pid) : NULL;
	double *wall = calloc((size_t)batches, sizeof(double));
	double *cpu = calloc((size_t)batches, sizeof(double));
	int complete = 0;
	long frames = 0;

	if (!uw || !mem || !as || !wall || !cpu) {
		fprintf(stderr, "bench_unwind_cmp: --warm: setup failed\n");
		exit(1);
	}
	frames = ss_walk_all(as, uw, mem, &complete);
	for (int b = 0; b < batches; b++) {
		uint64_t c0 = cpu_ns(), t0 = now_ns();
		long f = 0;

		for (int i = 0; i < iters; i++)
			f += ss_walk_all(as, uw, mem, &complete);
		wall[b] = (double)(now_ns() - t0) / (f ? f : 1);
		cpu[b] = (double)(cpu_ns() - c0) / (f ? f : 1);
	}
	qsort(wall, (size_t)batches, sizeof(double), cmp_double);
	qsort(cpu, (size_t)batches, sizeof(double), cmp_double);
	printf("warm: %ld frames, %d/%d complete, %d batches of %d walks: wall ns/frame "
	       "median %.2f (%.2f-%.2f), CPU ns/frame median %.2f (%.2f-%.2f)\n",
	       frames, complete, nthreads, batches, iters, wall[batches / 2], wall[0],
	       wall[batches - 1], cpu[batches / 2], cpu[0], cpu[batches - 1]);
	free(wall);
	free(cpu);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(uw);
}

/* ---- libunwind, remote from the copy ---- */

static long lu_walk_all(unw_addr_space_t as, struct lu_walk *w, int *complete)
{
	static uint64_t pcs[MAX_FRAMES];
	long total = 0;

	*complete = 0;
	for (int i = 0; i < nthreads; i++) {
		int step_ret;

		w->thread = &threads[i];
		total += lu_walk_copy(as, w, pcs, MAX_FRAMES, &step_ret);
		*complete += step_ret == 0;
	}
	return total;
}

static void bench_libunwind(struct result *res, int warm_iters)
{
	static struct lu_maps maps;
	struct lu_walk w = { .maps = &maps };
	unw_addr_space_t as = NULL;

	for (int r = 0; r < COLD_RUNS; r++) {
		if (as) {
			unw_destroy_addr_space(as);
			_UPT_destroy(w.upt);
			lu_maps_release(&maps);
		}
		uint64_t c0 = cpu_ns(), t0 = now_ns();
		lu_maps_read(&maps, target_pid);
		as = unw_create_addr_space(&lu_copy_accessors, 0);
		unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
		w.upt = _UPT_create(target_pid);
		res->frames = lu_walk_all(as, &w, &res->complete);
		res->cold[r] = (double)(now_ns() - t0) / (res->frames ? res->frames : 1);
		res->cold_cpu[r] = (double)(cpu_ns() - c0) / (res->frames ? res->frames : 1);
	}
	for (int b = 0; b < WARM_BATCHES; b++) {
		int complete;
		uint64_t t0 = now_ns();
		long f = 0;

		for (int i = 0; i < warm_iters; i++)
			f += lu_walk_all(as, &w, &complete);
		res->warm[b] = (double)(now_ns() - t0) / (f ? f : 1);
	}
	res->ok = 1;
	unw_destroy_addr_space(as);
	_UPT_destroy(w.upt);
	lu_maps_release(&maps);
}

/* ---- libdw: dwfl_attach_state over the copy ---- */

static const struct lu_thread *dw_current;

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	intptr_t i = (intptr_t)*thread_argp;

	if (i >= nthreads)
		return 0;
	*thread_argp = (void *)(i + 1);
	return threads[i].tid;
}

static bool dw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i].tid == tid) {
			*thread_argp = (void *)(intptr_t)(i + 1);
			return true;
		}
	return false;
}

/* Reads of the stack only, from the copy (libdw reads CFI from the module
 * files itself). */
static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			   void *arg)
{
	const struct lu_thread *t = dw_current;

	if (addr < t->stack_base || addr + 8 > t->stack_base + t->stack_len)
		return false;
	memcpy(result, t->stack + (addr - t->stack_base), 8);
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct lu_thread *t = &threads[(intptr_t)thread_arg - 1];

	/* DWARF 0..15 are the general registers, 16 the return address
	 * column, which holds rip in the first frame. */
	if (!dwfl_thread_state_registers(thread, 0, LU_REGS, t->regs))
		return false;
	dwfl_thread_state_register_pc(thread, t->regs[16]);
	return true;
}

static const Dwfl_Thread_Callbacks dw_thread_callbacks = {
	.next_thread = dw_next_thread,
	.get_thread = dw_get_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

static const Dwfl_Callbacks dw_proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static int dw_frame(Dwfl_Frame *state, void *arg)
{
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	return ++*(long *)arg >= MAX_FRAMES ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static Dwfl *dw_open(void)
{
	Dwfl *d = dwfl_begin(&dw_proc_callbacks);

	if (!d)
		return NULL;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, target_pid) || dwfl_report_end(d, NULL, NULL) ||
	    !dwfl_attach_state(d, NULL, target_pid, &dw_thread_callbacks, NULL)) {
		fprintf(stderr, "libdw: %s\n", dwfl_errmsg(-1));
		dwfl_end(d);
		return NULL;
	}
	return d;
}

static long dw_walk_all(Dwfl *d, int *complete)
{
	long total = 0;

	*complete = 0;
	for (int i = 0; i < nthreads; i++) {
		long n = 0;

		dw_current = &threads[i];
		/* 0: the walk reached the outermost frame. */
		*complete += dwfl_getthread_frames(d, threads[i].tid, dw_frame, &n) == 0;
		total += n;
	}
	return total;
}

static void bench_libdw(struct result *res, int warm_iters)
{
	Dwfl *d = NULL;

	for (int r = 0; r < COLD_RUNS; r++) {
		if (d)
			dwfl_end(d);
		uint64_t c0 = cpu_ns(), t0 = now_ns();
		if (!(d = dw_open()))
			return;
		res->frames = dw_walk_all(d, &res->complete);
		res->cold[r] = (double)(now_ns() - t0) / (res->frames ? res->frames : 1);
		res->cold_cpu[r] = (double)(cpu_ns() - c0) / (res->frames ? res->frames : 1);
	}
	for (int b = 0; b < WARM_BATCHES; b++) {
		int complete;
		uint64_t t0 = now_ns();
		long f = 0;

		for (int i = 0; i < warm_iters; i++)
			f += dw_walk_all(d, &complete);
		res->warm[b] = (double)(now_ns() - t0) / (f ? f : 1);
	}
	res->ok = 1;
	dwfl_end(d);
}

/* ---- the target and its snapshot ---- */

static int start_target(int n, int depth, int nhops)
{
	char sn[16], sd[16], sh[16];
	int fds[2];

	snprintf(sn, sizeof(sn), "%d", n);
	snprintf(sd, sizeof(sd), "%d", depth);
	snprintf(sh, sizeof(sh), "%d", nhops);
	if (pipe(fds))
		return -1;
	target_pid = fork();
	if (target_pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(target_path, target_path, "--threads", sn, "--mode", "sleep",
		      "--depth", sd, "--hops", hop_path, "--nhops", sh, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char line[64] = "";
	ssize_t got = read(fds[0], line, sizeof(line) - 1);
	close(fds[0]);
	if (got <= 0 || strncmp(line, "ready", 5)) {
		fprintf(stderr, "bench_unwind_cmp: %s did not start\n", target_path);
		return -1;
	}
	return 0;
}

static void stop_target(void)
{
	kill(target_pid, SIGTERM);
	waitpid(target_pid, NULL, 0);
}

static int capture(void)
{
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_snapshot *snap = stacksnap_snapshot__capture(ctx, target_pid, NULL);

	if (!snap) {
		fprintf(stderr, "bench_unwind_cmp: capture of pid %d: %s\n",
			target_pid, strerror(errno));
		return -1;
	}
	nthreads = 0;
	for (size_t i = 0; i < stacksnap_snapshot__thread_count(snap) && nthreads < MAX_THREADS; i++) {
		const struct stacksnap_thread *st = stacksnap_snapshot__thread(snap, i);
		struct lu_thread *t = &threads[nthreads];

		if (st->error || !st->stack)
			continue;
		free(t->stack);
		t->tid = st->tid;
		memcpy(t->regs, st->regs.regs, sizeof(t->regs));
		t->stack = malloc(st->stack_len);
		memcpy(t->stack, st->stack, st->stack_len);
		t->stack_len = st->stack_len;
		t->stack_base = st->stack_base;
		nthreads++;
	}
	stacksnap_snapshot__free(snap);
	stacksnap_ctx__free(ctx);
	return 0;
}

static void print_row(const char *name, struct result *r, double base_warm,
		      double base_cold, double base_cpu)
{
	if (!r->ok) {
		printf("| %-22s | %s |\n", name, "failed to run");
		return;
	}
	qsort(r->warm, WARM_BATCHES, sizeof(double), cmp_double);
	qsort(r->cold, COLD_RUNS, sizeof(double), cmp_double);
	qsort(r->cold_cpu, COLD_RUNS, sizeof(double), cmp_double);
	double w = r->warm[WARM_BATCHES / 2], c = r->cold[COLD_RUNS / 2];
	double cc = r->cold_cpu[COLD_RUNS / 2];
	char rw[32] = "-", rc[32] = "-", rcc[32] = "-";
	if (base_warm > 0) {
		snprintf(rw, sizeof(rw), "%.1fx", w / base_warm);
		snprintf(rc, sizeof(rc), "%.1fx", c / base_cold);
		snprintf(rcc, sizeof(rcc), "%.1fx", cc / base_cpu);
	}
	printf("| %-22s | %9.1f | %6.1f-%-8.1f | %10.0f | %7.0f-%-9.0f | %9.0f | %6ld | %5d/%-5d | %6s | %6s | %6s |\n",
	       name, w, r->warm[0], r->warm[WARM_BATCHES - 1], c, r->cold[0],
	       r->cold[COLD_RUNS - 1], cc, r->frames, r->complete, nthreads, rw, rc, rcc);
}

static void run_case(const char *label, int n, int depth, int nhops, int warm_iters)
{
	struct result ss = { 0 }, lu = { 0 }, dw = { 0 };

	if (start_target(n, depth, nhops))
		return;
	if (capture()) {
		stop_target();
		return;
	}
	bench_stacksnap(&ss, warm_iters);
	if (profile_cold_runs) {
		stop_target();
		qsort(ss.cold, COLD_RUNS, sizeof(double), cmp_double);
		printf("%s: %d stacksnap cold runs, the last %d: median %.0f ns/frame (%.0f-%.0f)\n",
		       label, profile_cold_runs, COLD_RUNS, ss.cold[COLD_RUNS / 2],
		       ss.cold[0], ss.cold[COLD_RUNS - 1]);
		int runs = profile_cold_runs < PROFILE_MAX ? profile_cold_runs : PROFILE_MAX;
		printf("  medians: total %.0f us (cpu %.0f), opening modules %.0f us, tables %.0f us\n",
		       median_of(prof_total, runs) / 1e3, median_of(prof_cpu, runs) / 1e3, median_of(prof_module, runs) / 1e3,
		       median_of(prof_table, runs) / 1e3);
		return;
	}
	bench_libunwind(&lu, warm_iters);
	bench_libdw(&dw, warm_iters);
	stop_target();
	printf("\n### %s: %d threads, %d-deep chain, %d hop libraries\n\n", label,
	       nthreads, depth, nhops);
	printf("| unwinder               | warm ns/f | warm min-max    | cold ns/f  | cold min-max      | cold CPU ns/f | frames | complete    | warm vs stacksnap | cold vs stacksnap | cold CPU vs stacksnap |\n");
	printf("|------------------------|-----------|-----------------|------------|-------------------|-----------|--------|-------------|--------|--------|--------|\n");
	print_row("stacksnap", &ss, 0, 0, 0);
	if (ss.have_cached) {
		qsort(ss.cached, COLD_RUNS, sizeof(double), cmp_double);
		qsort(ss.cached_cpu, COLD_RUNS, sizeof(double), cmp_double);
		printf("| %-22s | %9s | %-15s | %10.0f | %7.0f-%-9.0f | %9.0f | %6s | %11s | %6s | %6s | %6s |\n",
		       "stacksnap, cache filled", "-", "-", ss.cached[COLD_RUNS / 2],
		       ss.cached[0], ss.cached[COLD_RUNS - 1], ss.cached_cpu[COLD_RUNS / 2],
		       "", "", "", "", "");
	}
	print_row("libunwind remote copy", &lu, ss.warm[WARM_BATCHES / 2], ss.cold[COLD_RUNS / 2],
		  ss.cold_cpu[COLD_RUNS / 2]);
	print_row("libdw getthread_frames", &dw, ss.warm[WARM_BATCHES / 2], ss.cold[COLD_RUNS / 2],
		  ss.cold_cpu[COLD_RUNS / 2]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char self[2048];
	const char *dir;

	/* The target and hop library are built next to this program. */
	snprintf(self, sizeof(self), "%s", argv[0]);
	dir = dirname(self);
	snprintf(target_path, sizeof(target_path), "%s/stall_target", dir);
	snprintf(hop_path, sizeof(hop_path), "%s/libhop.so", dir);
	/* --profile-cold deep|libs N [CACHE_DIR]: stacksnap's cold walk
	 * only, N times, under perf or callgrind. */
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--profile-cold")) {
		profile_cache_dir = argc == 5 ? argv[4] : NULL;
		profile_cold_runs = atoi(argv[3]);
		if (profile_cold_runs < 1)
			profile_cold_runs = 1;
		if (!strcmp(argv[2], "deep"))
			run_case("deep stacks", 4, 400, 0, 1);
		else
			run_case("many libraries", 4, 10, 40, 1);
		return 0;
	}
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "--warm")) {
		int batches = atoi(argv[3]) > 0 ? atoi(argv[3]) : 1;
		int iters = argc == 5 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 20;
		int deep = !strcmp(argv[2], "deep");

		if (start_target(4, deep ? 400 : 10, deep ? 0 : 40))
			return 1;
		if (capture()) {
			stop_target();
			return 1;
		}
		bench_warm_only(batches, iters);
		stop_target();
		return 0;
	}
	if (access(target_path, X_OK)) {
		printf("== bench_unwind_cmp: %s not built (make bench builds it)\n", target_path);
		return 0;
	}
	printf("== bench_unwind_cmp: the same snapshots of the stall target unwound by each library "
	       "(ns per frame; warm = median of %d batches with caches filled, cold = new "
	       "context/address space + first walk of every thread, median of %d; stacksnap's "
	       "cold context has no cache directory, \"cache filled\" is a context whose table "
	       "cache a first context filled)\n",
	       WARM_BATCHES, COLD_RUNS);
	run_case("deep stacks", 4, 400, 0, 20);
	run_case("many libraries", 4, 10, 40, 50);
	return 0;
}
