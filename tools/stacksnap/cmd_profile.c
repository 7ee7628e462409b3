/* cmd_profile.c - `stacksnap profile`: on-CPU sampling without perf.data.
 * A software cpu-clock perf event per thread of the target (inherited by
 * the threads and processes it creates) or per CPU (-a) copies each
 * sample's user registers and stack into a ring buffer; samples are
 * decoded, unwound and symbolized as they arrive and counted into the
 * aggregated stacks, so memory follows distinct stacks, not samples. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_cmd.h"
#include "help.h"
#include "options.h"
#include "profile_empty.h"
#include "profile_go.h"
#include "profile_offcpu.h"
#include "profile_out.h"
#include "profile_python.h"
#include "sample_frames.h"
#include "monotonic.h"
#include "stop_signal.h"
#include "subcommands.h"

/* perf's user register set on x86_64: every register but the segment
 * registers ds, es, fs, gs (PERF_REG_X86_* 0..23). */
#define PERF_REGS_USER_MASK 0xff0fffull
#define MAX_EVENTS 1024

struct prof_options {
	pid_t pid;
	bool all_cpus;
	char **cmd;		/* argv after "--" */
	unsigned freq;
	double duration;	/* seconds; 0: until the target ends */
	struct profile_out out;	/* -o, --format, --colors */
	size_t stack_size;
	bool stack_size_set;	/* --stack-size given */
	unsigned max_stack;
	bool no_demangle, stats, verbose;
	bool off_cpu;		/* --off-cpu: profile_offcpu.c */
	bool goroutines;	/* --goroutines: profile_go.c */
	int runtime;		/* --runtime: enum runtime_mode */
	bool runtime_set;	/* --runtime was given */
	bool python_said;	/* said why a Python target has no Python frames */
};

/* One opened event and its ring buffer (1 metadata page + 2^n pages).
 * During a drain: records before stop (the head when it began) are
 * read; has_next says ev is the decoded record at the tail (next_len
 * bytes; in bounce when it wrapped around the end). */
struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t size, map_len;	/* data size: a power of two */
	uint64_t stop;
	bool has_next;
	uint32_t next_len;
	struct stacksnap_perf_event ev;
	uint64_t *bounce;	/* 64 KiB once a record wrapped */
};

/* Pids whose address space we have: attached from /proc, or followed from
 * the start through fork and exec events. Open addressing, never shrinks. */
struct pidset {
	pid_t *v;
	size_t n, cap;
};

static bool pidset_has(const struct pidset *s, pid_t p)
{
	for (size_t i = (size_t)p * 2654435761u & (s->cap - 1); s->cap && s->v[i];
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == p)
			return true;
	return false;
}

static int pidset_add(struct pidset *s, pid_t p)
{
	size_t i;

	if (pidset_has(s, p))
		return 0;
	if ((s->n + 1) * 2 >= s->cap) {
		struct pidset ns = { .cap = s->cap ? s->cap * 2 : 256 };

		if (!(ns.v = calloc(ns.cap, sizeof(*ns.v))))
			return -ENOMEM;
		for (size_t k = 0; k < s->cap; k++)
			if (s->v[k])
				pidset_add(&ns, s->v[k]);
		free(s->v);
		*s = ns;
	}
	for (i = (size_t)p * 2654435761u & (s->cap - 1); s->v[i]; i = (i + 1) & (s->cap - 1))
		;
	s->v[i] = p;
	s->n++;
	return 0;
}

struct profiler {
	struct prof_options o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_perf_data *dec;
	struct sample_frames sf;
	struct stacksnap_stacks *stacks;
	struct out_frame *fr;
	size_t maxfr;
	struct ring rings[MAX_EVENTS];	/* one per CPU */
	size_t nrings;
	int ring_of_cpu[MAX_EVENTS];	/* index + 1 into rings; 0 none */
	int extra_fds[MAX_EVENTS];	/* events writing into a CPU's ring */
	size_t nextra;
	struct pidset known;
	uint64_t samples, lost, records;
	/* A command that did not look like Python (profile_python_wanted)
	 * but runs it: looked for at its samples (every 64th, 64 times), so
	 * that its missing Python frames are said, not silent. */
	bool py_look;
	unsigned py_tries;
	pid_t py_pid;
	/* `-- CMD`: the command, held until go_fd is written (-1 before it
	 * starts and once it runs; err_fd then says whether its exec
	 * failed); child is -1 once reaped. cmd_pgrp, its process group
	 * (child_cmd.h), stays set until the group is ended. */
	pid_t child, cmd_pgrp;
	int go_fd, err_fd, child_status;
	FILE *out;		/* the profile's output; NULL once closed */
	struct pollfd *pfds;	/* one per ring */
	struct timespec cpu0;	/* our CPU time at the start, for --stats */
	struct cpu_use target_cpu; /* -p's CPU time at the start: why no samples */
};


static long perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void make_attr(const struct profiler *p, struct perf_event_attr *a,
		      bool kernel, bool on_exec)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = p->o.freq;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
			 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = PERF_REGS_USER_MASK;
	a->sample_stack_user = (uint32_t)p->o.stack_size;
	a->exclude_callchain_user = 1; /* user frames are unwound here */
	a->exclude_kernel = !kernel;
	a->exclude_hv = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->inherit = !p->o.all_cpus; /* threads and children created later */
	a->disabled = on_exec;
	a->enable_on_exec = on_exec;
	a->watermark = 1;
	a->wakeup_watermark = 64 * 1024;
}

/* Opens the event of thread pid (-1: every thread) on one CPU. The
 * kernel maps no ring of an inherited event counting on every CPU, so
 * events are per CPU, and the events of one CPU share its ring
 * (PERF_EVENT_IOC_SET_OUTPUT). Kernel frames are asked for first; where
 * the kernel refuses them (perf_event_paranoid), user frames only. */
static int open_event(struct profiler *p, pid_t pid, int cpu, bool on_exec)
{
	struct perf_event_attr a;
	struct ring *r;
	long fd;

	if (p->nrings >= MAX_EVENTS || p->nextra >= MAX_EVENTS || cpu >= MAX_EVENTS)
		return -E2BIG;
	make_attr(p, &a, true, on_exec);
	fd = perf_event_open(&a, pid, cpu);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		make_attr(p, &a, false, on_exec);
		fd = perf_event_open(&a, pid, cpu);
	}
	if (fd < 0)
		return -errno;
	if (!p->dec && !(p->dec = stacksnap_perf_data__open_attr(p->ctx, &a, sizeof(a)))) {
		close((int)fd);
		return -errno;
	}
	if (p->ring_of_cpu[cpu]) {
		if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT,
			  p->rings[p->ring_of_cpu[cpu] - 1].fd)) {
			int err = -errno;

			close((int)fd);
			return err;
		}
		p->extra_fds[p->nextra++] = (int)fd;
		return 0;
	}
	r = &p->rings[p->nrings];
	r->fd = (int)fd;
	/* 8 MiB a ring: a sample carries its stack copy (16 KiB by default),
	 * and unwinding the first samples of a program waits for its
	 * modules' tables. Halved while the kernel refuses (a user's mlock
	 * allowance, perf_event_mlock_kb, is 516 KiB by default). */
	for (size_t pages = 2048; pages >= 8; pages /= 2) {
		size_t len = (pages + 1) * (size_t)sysconf(_SC_PAGESIZE);
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);

		if (m == MAP_FAILED)
			continue;
		r->meta = m;
		r->data = (uint8_t *)m + sysconf(_SC_PAGESIZE);
		r->size = pages * (size_t)sysconf(_SC_PAGESIZE);
		r->map_len = len;
		p->ring_of_cpu[cpu] = (int)++p->nrings;
		return 0;
	}
	int err = -errno;

	close(r->fd);
	return err;
}

/* Opens the events of thread pid (-1: all) on every CPU. */
static int open_cpus(struct profiler *p, pid_t pid, bool on_exec)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int err = 0, opened = 0;

	for (int cpu = 0; cpu < ncpu && cpu < MAX_EVENTS; cpu++) {
		err = open_event(p, pid, cpu, on_exec);
		if (err == -ENODEV || err == -ENOENT) /* an offline CPU */
			continue;
		if (err)
			return err;
		opened++;
	}
	return opened ? 0 : -ENODEV;
}

static void close_rings(struct profiler *p)
{
	for (size_t i = 0; i < p->nextra; i++)
		close(p->extra_fds[i]);
	for (size_t i = 0; i < p->nrings; i++) {
		munmap(p->rings[i].meta, p->rings[i].map_len);
		close(p->rings[i].fd);
		free(p->rings[i].bounce);
	}
	p->nrings = p->nextra = 0;
}

/* The name of a thread met before any COMM event named it. */
static void learn_comm(struct profiler *p, pid_t pid, pid_t tid)
{
	char path[64], name[32];
	FILE *f;

	if (stacksnap_procs__comm_of(p->procs, tid))
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = 0;
		stacksnap_procs__comm(p->procs, pid, tid, name, false);
	}
	fclose(f);
}

/* One decoded record: a sample unwound and counted, or a process
 * record applied to the process table. */
static int handle(struct profiler *p, const struct stacksnap_perf_event *e)
{
	struct stacksnap_perf_event ev = *e;
	char comm_buf[24];
	int err;

	p->records++;
	switch (ev.type) {
	case STACKSNAP_PERF_SAMPLE:
		if (ev.pid <= 0) /* the idle task (-a) */
			return 0;
		if (!pidset_has(&p->known, ev.pid)) {
			/* A process met first by a sample (-a): its mappings
			 * as they are now; events keep them current after. */
			stacksnap_procs__attach_pid(p->procs, ev.pid);
			if (pidset_add(&p->known, ev.pid))
				return -ENOMEM;
		}
		learn_comm(p, ev.pid, ev.tid);
		size_t n = sample_frames_resolve(&p->sf, &ev, p->fr, p->maxfr);

		if (p->py_look && !p->py_pid && !(p->samples & 63) && p->py_tries++ < 64 &&
		    stacksnap_trace__runtime_of(ev.pid) == STACKSNAP_RUNTIME_PYTHON)
			p->py_pid = ev.pid;
		p->samples++;
		return sample_frames_add(&p->sf, p->stacks,
					 sample_comm(&p->sf, ev.tid, comm_buf), p->fr, n);
	case STACKSNAP_PERF_FORK:
		if (ev.pid != ev.ppid && p->o.all_cpus && !pidset_has(&p->known, ev.ppid)) {
			/* (-a) A process born while we sample has its whole
			 * life in the records: its parent's mappings now (it
			 * runs), the child's from the records after. */
			stacksnap_procs__attach_pid(p->procs, ev.ppid);
			if (pidset_add(&p->known, ev.ppid))
				return -ENOMEM;
		}
		if (ev.pid != ev.ppid && pidset_has(&p->known, ev.ppid) &&
		    pidset_add(&p->known, ev.pid))
			return -ENOMEM;
		break;
	case STACKSNAP_PERF_LOST:
		p->lost += ev.lost;
		return 0;
	default:
		break;
	}
	err = stacksnap_procs__apply_perf_event(p->procs, &ev);
	return err == -ENOMEM ? err : 0;
}

/* The next record of r before r->stop, decoded into r->ev (a record
 * that wraps around the ring's end is copied into r->bounce); false when
 * there is none. Records that do not decode are skipped (logged). */
static bool ring_peek(struct profiler *p, struct ring *r)
{
	uint64_t tail = r->meta->data_tail;

	while (!r->has_next && tail + sizeof(struct perf_event_header) <= r->stop) {
		size_t off = tail & (r->size - 1);
		struct perf_event_header h;
		const void *rec = r->data + off;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = r->data[(off + i) & (r->size - 1)];
		if (h.size < sizeof(h) || tail + h.size > r->stop)
			return false;
		if (off + h.size > r->size || off % 8) {
			if (!r->bounce && !(r->bounce = malloc(65536)))
				return false;
			for (size_t i = 0; i < h.size; i++)
				((uint8_t *)r->bounce)[i] = r->data[(off + i) & (r->size - 1)];
			rec = r->bounce;
		}
		r->next_len = h.size;
		if (stacksnap_perf_data__decode(p->dec, rec, h.size, &r->ev) == 0)
			r->has_next = true;
		else
			__atomic_store_n(&r->meta->data_tail, tail += h.size, __ATOMIC_RELEASE);
	}
	return r->has_next;
}

/* Processes every record the kernel has written to the rings since last
 * time, in time order across the rings (each ring is in order): a
 * process's exec and mmap records on one CPU come before its samples on
 * another, and a short-lived process is unwound against the mappings it
 * had then. */
static int drain(struct profiler *p)
{
	int err = 0;

	for (size_t i = 0; i < p->nrings; i++) {
		p->rings[i].stop = __atomic_load_n(&p->rings[i].meta->data_head,
						   __ATOMIC_ACQUIRE);
		p->rings[i].has_next = false;
	}
	while (!err) {
		struct ring *first = NULL;

		for (size_t i = 0; i < p->nrings; i++) {
			struct ring *r = &p->rings[i];

			if (ring_peek(p, r) && (!first || r->ev.time < first->ev.time))
				first = r;
		}
		if (!first)
			break;
		err = handle(p, &first->ev);
		first->has_next = false;
		__atomic_store_n(&first->meta->data_tail,
				 first->meta->data_tail + first->next_len, __ATOMIC_RELEASE);
	}
	return err;
}

/* Opens an event for every thread of pid. */
static int open_pid(struct profiler *p, pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	int err = 0, opened = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -ESRCH;
	while ((e = readdir(d)) && !err) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0)
			continue;
		err = open_cpus(p, tid, false);
		if (err == -ESRCH) /* the thread has just exited */
			err = 0;
		else if (!err)
			opened++;
	}
	closedir(d);
	return err ? err : opened ? 0 : -ESRCH;
}

static int exit_for(int err)
{
	switch (-err) {
	case ESRCH: case ENOENT: return EXIT_NO_PROCESS;
	case EPERM: case EACCES: return EXIT_NOT_PERMITTED;
	}
	return EXIT_ERROR;
}

static int parse(struct prof_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		PROFILE_OUT_LONGOPTS,
		{ "stack-size", required_argument, NULL, 's' },
		{ "max-frames", required_argument, NULL, 'm' },
		{ "max-stack", required_argument, NULL, 'm' },	/* perf's spelling */
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "stats", no_argument, NULL, 'S' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "goroutines", no_argument, NULL, 'G' },
		{ "runtime", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, targets;
	char *end;

	memset(o, 0, sizeof(*o));
	o->freq = 99;
	o->stack_size = 16384;
	o->max_stack = 127;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:aF:d:o:vh", longopts, NULL)) != -1) {
		unsigned long v;
		int r = profile_out_option(&o->out, "stacksnap profile", c, optarg);

		if (r != 1) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case 'p':
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > INT32_MAX) {
				fprintf(stderr, "stacksnap profile: -p '%s': expected a process id\n", optarg);
				return EXIT_USAGE;
			}
			o->pid = (pid_t)v;
			break;
		case 'a': o->all_cpus = true; break;
		case 'F':
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000) {
				fprintf(stderr, "stacksnap profile: -F '%s': expected samples a second in 1..100000\n", optarg);
				return EXIT_USAGE;
			}
			o->freq = (unsigned)v;
			break;
		case 'd': {
			uint64_t ns;

			if (parse_duration(optarg, &ns)) {
				fprintf(stderr, "stacksnap profile: --duration: '%s' is not "
					DURATION_HELP "\n", optarg);
				return EXIT_USAGE;
			}
			o->duration = (double)ns / 1e9;
			break;
		}
		case 's': {
			size_t sz;

			if (parse_size(optarg, &sz)) {
				fprintf(stderr, "stacksnap profile: --stack-size: '%s' is not "
					SIZE_HELP "\n", optarg);
				return EXIT_USAGE;
			}
			/* A size that parses but does not fit is said as such
			 * ("'1m' is not a size such as ..., 1m" misled). */
			if (sz < 64 || sz > 65536) {
				fprintf(stderr, "stacksnap profile: --stack-size: '%s' is out of "
					"range: 64..64k (the kernel copies at most 65528 bytes "
					"a sample)\n", optarg);
				return EXIT_USAGE;
			}
			/* 64k as trace takes it: the kernel copies at most
			 * 65528 bytes a sample (a u16 size, 8-aligned). */
			o->stack_size = (sz > 65528 ? 65528 : sz) & ~(size_t)7;
			o->stack_size_set = true;
			break;
		}
		case 'm':
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 65536) {
				fprintf(stderr, "stacksnap profile: --max-frames: '%s' is not a number of frames in 1..65536\n", optarg);
				return EXIT_USAGE;
			}
			o->max_stack = (unsigned)v;
			break;
		case 'D': o->no_demangle = true; break;
		case 'S': o->stats = true; break;
		case 'O': o->off_cpu = true; break;
		case 'G': o->goroutines = true; break;
		case 'R':
			if ((o->runtime = options_parse_runtime(optarg)) < 0) {
				fprintf(stderr, "stacksnap profile: --runtime: '%s' is not merged, only or off\n", optarg);
				return EXIT_USAGE;
			}
			o->runtime_set = true;
			break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(help_text("profile"), stdout); return -1;
		default: return EXIT_USAGE; /* getopt said which */
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (o->runtime_set && o->runtime != RUNTIME_OFF && o->all_cpus) {
		fprintf(stderr, "stacksnap profile: --runtime=%s follows one process: "
			"give -p PID or -- CMD, not -a\n", o->runtime == RUNTIME_ONLY ? "only" : "merged");
		return EXIT_USAGE;
	}
	if (o->off_cpu && o->all_cpus) {
		fprintf(stderr, "stacksnap profile: --off-cpu follows one process: "
			"give -p PID or -- CMD, not -a\n");
		return EXIT_USAGE;
	}
	if (o->goroutines && (o->all_cpus || o->cmd || o->off_cpu)) {
		fprintf(stderr, "stacksnap profile: --goroutines counts the "
			"goroutines of one running Go program: give -p PID "
			"(not -a, -- CMD or --off-cpu)\n");
		return EXIT_USAGE;
	}
	targets = (o->pid > 0) + o->all_cpus + (o->cmd != NULL);
	if (targets != 1) {
		fprintf(stderr, "stacksnap profile: say what to profile: one of -p PID, "
			"-a, or -- CMD [ARGS]\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* The context, the process set, the unwinder, the stacks aggregate and
 * the buffers the samples are read into. Returns 0 or the exit code. */
static int profile_init(struct profiler *p)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = cli_verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_WARN,
		       .cache_dir = default_cache_dir());
	p->ctx = stacksnap_ctx__new(&copts);
	p->procs = p->ctx ? stacksnap_procs__new(p->ctx, NULL) : NULL;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = p->o.max_stack);
	p->uw = stacksnap_unwinder__new(&uopts);
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts,
		       .period_ns = 1000000000ull / p->o.freq,
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	p->stacks = stacksnap_stacks__new(&sopts);
	p->maxfr = p->o.max_stack + 256;
	p->fr = calloc(p->maxfr, sizeof(*p->fr));
	if (!p->procs || !p->uw || !p->stacks || !p->fr ||
	    sample_frames_init(&p->sf, p->procs, p->uw, p->o.max_stack,
			       p->o.no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0, false)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		return EXIT_ERROR;
	}
	return 0;
}

/* --off-cpu: the whole profile is profile_offcpu.c's. */
static int profile_off_cpu(struct profiler *p)
{
	int rc;

	if (p->o.pid && (rc = cli_check_target(p->o.pid, false)))
		return rc;
	struct offcpu_args oa = {
		.ctx = p->ctx, .pid = p->o.pid, .cmd = p->o.cmd,
		.duration = p->o.duration,
		.stack_size = p->o.stack_size, .max_stack = p->o.max_stack,
		.no_demangle = p->o.no_demangle, .stats = p->o.stats, .out = &p->o.out,
	};
	return profile_offcpu_run(&oa);
}

/* --goroutines: the whole profile is profile_go.c's. */
static int profile_goroutines(struct profiler *p)
{
	struct goroutine_profile_args ga = {
		.ctx = p->ctx, .pid = p->o.pid, .freq = p->o.freq,
		.duration = p->o.duration, .stats = p->o.stats, .out = &p->o.out,
	};
	int rc = profile_goroutines_run(&ga);

	if (rc == EXIT_OK && stop_signal && stop_signal != SIGINT)
		rc = EXIT_SIGNAL_BASE + stop_signal;
	return rc;
}

/* Whether the samples go through the trace's eBPF program, which walks
 * each one's Python frames (--runtime merged, the default, or only): a
 * -p process running a CPython the tool knows, a command that looks like
 * Python (profile_python_command), or any command with --runtime typed.
 * Else perf events; so too, with a note, where the default would take
 * eBPF but BPF is not permitted. */
static bool profile_python_wanted(struct prof_options *o)
{
	bool python;
	int rt = 0;

	if (o->all_cpus || o->off_cpu || o->runtime == RUNTIME_OFF)
		return false;
	if (o->runtime_set)
		return true;
	if (!o->cmd && o->pid > 0)
		rt = stacksnap_trace__runtime_of(o->pid);
	python = o->cmd ? profile_python_command(o->cmd)
			: rt == STACKSNAP_RUNTIME_PYTHON || rt == STACKSNAP_RUNTIME_RUBY ||
			  rt == STACKSNAP_RUNTIME_PHP;
	if (!python)
		return false;
	if (profile_bpf_permitted())
		return true;
	char why[320];
	const char *lang = rt == STACKSNAP_RUNTIME_RUBY ? "Ruby"
			   : rt == STACKSNAP_RUNTIME_PHP ? "PHP" : "Python";
	fprintf(stderr, "stacksnap profile: %s runs %s; its %s frames need eBPF, "
		"not permitted here (%s): sampling with perf events, native frames only\n",
		o->cmd ? o->cmd[0] : "the process", lang, lang,
		stacksnap_why_not_permitted(STACKSNAP_REFUSED_BPF, 0, why, sizeof(why)));
	o->python_said = true;
	return false;
}

/* The Python path: the whole profile is profile_python.c's. */
static int profile_python(struct profiler *p)
{
	int rc = p->o.pid ? cli_check_target(p->o.pid, false) : 0;

	if (rc)
		return rc;
	struct sampled_args sa = {
		.ctx = p->ctx, .pid = p->o.pid, .cmd = p->o.cmd, .freq = p->o.freq, .duration = p->o.duration,
		.stack_size = p->o.stack_size, .max_stack = p->o.max_stack,
		.runtime = p->o.runtime, .no_demangle = p->o.no_demangle,
		.stats = p->o.stats, .out = &p->o.out,
	};
	return profile_python_run(&sa);
}

/* The sampling events of what is profiled: the command (started held),
 * the process, or every CPU; then one pollfd a ring. Returns 0 or the
 * exit code after saying why. */
static int profile_open_target(struct profiler *p)
{
	int err;

	if (p->o.cmd) {
		p->child = child_cmd_spawn(p->o.cmd, &p->go_fd, &p->err_fd);
		if (p->child < 0) {
			fprintf(stderr, "stacksnap profile: cannot start '%s': %s\n",
				p->o.cmd[0], strerror(errno));
			return EXIT_CANNOT_RUN;
		}
		p->cmd_pgrp = p->child;
		err = open_cpus(p, p->child, true);
		if (!err)
			err = pidset_add(&p->known, p->child);
	} else if (p->o.pid) {
		int rc = cli_check_target(p->o.pid, false);

		if (rc)
			return rc;
		err = stacksnap_procs__attach_pid(p->procs, p->o.pid);
		if (!err)
			err = pidset_add(&p->known, p->o.pid);
		if (!err)
			err = open_pid(p, p->o.pid);
	} else {
		err = open_cpus(p, -1, false);
	}
	/* One process: its Java frames named, if it is a JVM. */
	if (!err && !p->o.all_cpus && p->o.runtime != RUNTIME_OFF) {
		p->sf.jvm_ctx = p->ctx;
		p->sf.jvm_pid = p->o.cmd ? p->child : p->o.pid;
	}
	if (err) {
		const char *what = p->o.all_cpus ? "every CPU" : NULL;
		char who[32], why[320];
		bool refused = err == -EACCES || err == -EPERM;

		snprintf(who, sizeof(who), "pid %d", (int)(p->o.pid ? p->o.pid : p->child));
		fprintf(stderr, "stacksnap profile: cannot sample %s: %s%s%s%s\n",
			what ? what : who, strerror(-err), refused ? " (" : "",
			refused ? stacksnap_why_not_permitted(STACKSNAP_REFUSED_PERF, 0, why,
							      sizeof(why)) : "",
			refused ? ")" : "");
		return exit_for(err);
	}
	p->pfds = calloc(p->nrings, sizeof(*p->pfds));
	if (!p->pfds)
		return EXIT_ERROR;
	for (size_t i = 0; i < p->nrings; i++)
		p->pfds[i] = (struct pollfd){ .fd = p->rings[i].fd, .events = POLLIN };
	return 0;
}

/* Lets the command run, then reads the rings until a stop signal,
 * --duration, or the end of the command or the process; a terminal sees
 * the progress once a second, unless a command runs: it writes to the
 * same terminal (a full-screen one, less or vim, owns it), and the
 * progress line would be drawn over its output. Returns EXIT_OK,
 * EXIT_CANNOT_RUN (the command's exec failed) or EXIT_ERROR. */
static int profile_loop(struct profiler *p)
{
	bool tty = isatty(STDERR_FILENO) && !p->o.cmd;
	double t0, last_progress = 0;
	int rc = EXIT_OK, err = 0;

	stop_signal_catch();
	if (p->go_fd >= 0 &&
	    (rc = child_cmd_release("stacksnap profile", p->o.cmd, &p->go_fd, p->err_fd)))
		return rc;
	t0 = monotonic_ns() / 1e9;
	cpu_use_begin(&p->target_cpu, p->o.pid);
	for (;;) {
		bool ended = stop_signal ||
			     (p->o.duration > 0 && monotonic_ns() / 1e9 - t0 >= p->o.duration);

		if (p->child > 0 && waitpid(p->child, &p->child_status, WNOHANG) == p->child) {
			p->child = -1;
			ended = true;
		}
		if (p->o.pid && kill(p->o.pid, 0) && errno == ESRCH)
			ended = true;
		if (poll(p->pfds, p->nrings, ended ? 0 : 100) < 0 && errno != EINTR)
			break;
		err = drain(p);
		if (err) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			break;
		}
		if (tty && monotonic_ns() / 1e9 - last_progress >= 1) {
			last_progress = monotonic_ns() / 1e9;
			fprintf(stderr, "\rprofiling: %.0f s, %" PRIu64 " samples, %zu stacks ",
				last_progress - t0, p->samples, stacksnap_stacks__distinct(p->stacks));
		}
		if (ended)
			break;
	}
	if (tty)
		fputs("\r\033[K", stderr);
	return rc;
}

/* Ends a command still running, writes the profile (when the sampling
 * went well) and says on stderr what --stats and lost samples tell.
 * Returns rc or the profile writer's exit code. */
static int profile_report(struct profiler *p, int rc)
{
	/* The sampling is over (--duration, a stop signal, or CMD's end):
	 * whatever is left of CMD's process group is ended and reaped. */
	child_cmd_end(p->cmd_pgrp, p->child <= 0, stop_signal, &p->child_status);
	p->child = p->cmd_pgrp = -1;
	if (rc == EXIT_OK) {
		rc = profile_out_write(&p->o.out, "stacksnap profile", p->out, p->stacks,
				       p->o.cmd ? p->o.cmd[0] : "stacksnap profile");
		p->out = NULL; /* closed */
		if (!p->samples)
			profile_say_no_samples(&p->target_cpu, p->o.cmd, p->o.freq);
	}
	if (p->o.stats) {
		struct timespec c1;
		struct rusage ru;

		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "profile: %" PRIu64 " samples, %" PRIu64 " lost, %zu distinct "
			"stacks, %" PRIu64 " truncated walks, %.3f s CPU, max RSS %ld KiB\n",
			p->samples, p->lost, stacksnap_stacks__distinct(p->stacks), p->sf.truncated,
			(double)(c1.tv_sec - p->cpu0.tv_sec) + (c1.tv_nsec - p->cpu0.tv_nsec) / 1e9,
			ru.ru_maxrss);
	}
	if (p->lost)
		fprintf(stderr, "stacksnap profile: the kernel dropped %" PRIu64 " samples "
			"(lower -F or --stack-size)\n", p->lost);
	if (p->py_pid)
		fprintf(stderr, "stacksnap profile: pid %d ran Python, sampled with perf events: "
			"no Python frames (give --runtime merged to sample '%s' through eBPF, "
			"which walks them)\n", (int)p->py_pid, p->o.cmd[0]);
	return rc;
}

/* Lets a held command exit, reaps it, and frees the profiler. */
static int profile_free(struct profiler *p, int rc)
{
	if (p->go_fd >= 0)
		close(p->go_fd); /* the child reads EOF and exits 127 */
	if (p->err_fd >= 0)
		close(p->err_fd);
	child_cmd_end(p->cmd_pgrp, p->child <= 0, 0, &p->child_status);
	close_rings(p);
	free(p->pfds);
	profile_out_abandon(&p->o.out, p->out); /* not written: a failed run */
	free(p->fr);
	free(p->known.v);
	sample_frames_fini(&p->sf);
	stacksnap_stacks__free(p->stacks);
	stacksnap_perf_data__free(p->dec);
	stacksnap_unwinder__free(p->uw);
	stacksnap_procs__free(p->procs);
	stacksnap_ctx__free(p->ctx);
	return rc;
}

/* A node process's threads (a worker's native frames under its event
 * loop and V8's entry frames: ~20 KiB before any JavaScript) and a JVM's
 * are deeper than the default copy: without --stack-size, a -p process
 * running V8 or a JVM is sampled with the most the kernel copies, so
 * that its walks reach the bottom. */
static void profile_vm_stack_size(struct profiler *p)
{
	struct stacksnap_vm *vm;

	if (p->o.stack_size_set || p->o.pid <= 0 || p->o.runtime == RUNTIME_OFF)
		return;
	if (!(vm = stacksnap_vm__open(p->ctx, p->o.pid, NULL)))
		return;
	stacksnap_vm__free(vm);
	p->o.stack_size = 65528;
	if (cli_verbose)
		fprintf(stderr, "stacksnap profile: pid %d runs a JIT runtime (V8 or "
			"a JVM): 64k of stack copied a sample (--stack-size)\n",
			(int)p->o.pid);
}

int profile_main(int argc, char **argv)
{
	struct profiler p = { .child = -1, .cmd_pgrp = -1, .go_fd = -1, .err_fd = -1,
			      .out = stdout };
	int rc;

	rc = parse(&p.o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p.cpu0);
	cli_verbose = p.o.verbose;
	cli_warnings = true;
	if ((rc = profile_init(&p)))
		return profile_free(&p, rc);
	if (p.o.off_cpu)
		return profile_free(&p, profile_off_cpu(&p));
	if (p.o.goroutines)
		return profile_free(&p, profile_goroutines(&p));
	if (profile_python_wanted(&p.o))
		return profile_free(&p, profile_python(&p));
	if (!(p.out = profile_out_open(&p.o.out, "stacksnap profile")))
		return profile_free(&p, EXIT_ERROR);
	profile_vm_stack_size(&p);
	if ((rc = profile_open_target(&p)))
		return profile_free(&p, rc);
	p.py_look = p.o.cmd && !p.o.runtime_set && !p.o.python_said;
	rc = profile_report(&p, profile_loop(&p));
	/* As every subcommand that runs until told: SIGINT is how it ends
	 * (0), SIGTERM and SIGHUP give 128+N, once the profile is written. */
	if (rc == EXIT_OK && stop_signal && stop_signal != SIGINT)
		rc = EXIT_SIGNAL_BASE + stop_signal;
	return profile_free(&p, rc);
}
