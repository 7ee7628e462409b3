/* cmd_trace.c - `stacksnap trace`: the user call stack at every chosen
 * kernel or user event of a process (and its threads and children),
 * captured with eBPF and unwound here; printed one event after another,
 * or counted by distinct stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "print.h"
#include "trace_go.h"
#include "trace_print.h"
#include "profile_out.h"
#include "child_cmd.h"
#include "help.h"
#include "stacksnap.h"
#include "monotonic.h"
#include "stop_signal.h"
#include "subcommands.h"
#include "trace_hold.h"

#define MAX_EVENTS 64

struct trace_options {
	const char *events[MAX_EVENTS];
	size_t nevents;
	unsigned hz;			/* -F */
	pid_t pid, tid;			/* -p, -t */
	char **cmd;			/* after -- */
	bool list, json, count, folded, no_inherit, compact;
	bool all;			/* -a: every process */
	bool no_hold;			/* --no-hold: -- CMD not held at exits */
	const char *save;		/* --save FILE: an events file */
	bool quiet;			/* -q: print no events (with --save) */
	int encoding;			/* --encoding: of --save's stacks */
	const char *list_pattern;
	struct profile_out out;		/* -o, --format, --colors */
	double duration, interval;	/* seconds; 0: none */
	size_t stack_size, ring_size;
	unsigned unwind;		/* --unwind: STACKSNAP_TRACE_UNWIND_* */
	struct options print;		/* what the shared printers read */
};

/* State of one run: the printer (output, counters of --count/--folded),
 * the events file of --save, the CTF trace of --format ctf (lost[c]: the
 * lost count of CPU c they last got, nlost entries) and the command of
 * `-- CMD`. child is -1 and
 * go, cerr -1 until the command is started; go is closed (-1) once it is
 * let run. */
struct tracer {
	struct trace_options *o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_trace *tr;
	struct trace_printer p;
	struct stacksnap_trace_writer *save;
	struct stacksnap_ctf_writer *ctf;
	uint64_t *lost;
	int nlost;
	int error;
	pid_t child;
	int go, cerr;		/* the held command's pipes: go, exec error */
	int child_status;
	bool child_done;	/* reaped by the event loop */
	bool held;		/* the command is held at its exits
				   (trace_hold.c): waited for through it */
	bool exec_failed;	/* the command's exec failed: its events are
				   the tool's own child's, not the command's */
	struct trace_go go_procs; /* each Go program's goroutine reader */
};



/* The long options that have no short letter. */
enum { O_JSON = 256, O_COUNT, O_FOLDED, O_INTERVAL, O_DURATION, O_STACK,
       O_RING, O_NOINH, O_SAVE, O_UNWIND, O_COMPACT, O_ENC, O_NOHOLD };

/* One option c (its argument arg) into o. Returns 0 to go on, -1 after
 * --help, or the exit code of a bad option. */
static int parse_option(struct trace_options *o, int c, char *arg)
{
	unsigned long v;
	/* How stacks are printed: as in the dump and show. */
	int r = print_option(&o->print, c, arg, 65536);

	if (r != 1)
		return r;
	switch (c) {
	case O_UNWIND:
		if (!strcmp(arg, "user"))
			o->unwind = STACKSNAP_TRACE_UNWIND_USER;
		else if (!strcmp(arg, "kernel"))
			o->unwind = STACKSNAP_TRACE_UNWIND_KERNEL;
		else if (!strcmp(arg, "both"))
			o->unwind = STACKSNAP_TRACE_UNWIND_BOTH;
		else {
			fprintf(stderr, "stacksnap trace: --unwind %s: user, "
				"kernel or both\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'e':
		if (o->nevents == MAX_EVENTS) {
			fprintf(stderr, "stacksnap trace: at most %d -e options\n", MAX_EVENTS);
			return EXIT_USAGE;
		}
		o->events[o->nevents++] = arg;
		break;
	case 'F':
		if (parse_uint(arg, 100000, &v) || !v) {
			fprintf(stderr, "stacksnap trace: -F: '%s' is not a frequency in Hz (1..100000)\n", arg);
			return EXIT_USAGE;
		}
		o->hz = (unsigned)v;
		break;
	case 'l': o->list = true; break;
	case 'a': o->all = true; break;
	case 'p':
	case 't':
		if (parse_uint(arg, INT32_MAX, &v) || !v) {
			fprintf(stderr, "stacksnap trace: -%c: '%s' is not a %s id\n", c,
				arg, c == 'p' ? "process" : "thread");
			return EXIT_USAGE;
		}
		*(c == 'p' ? &o->pid : &o->tid) = (pid_t)v;
		break;
	case O_JSON: o->json = true; break;
	case O_COUNT: o->count = true; break;
	case O_FOLDED:
		o->folded = true;
		o->out.format = STACKSNAP_FORMAT_FOLDED;
		break;
	case O_INTERVAL:
	case O_DURATION: {
		uint64_t ns;

		if (parse_duration(arg, &ns)) {
			fprintf(stderr, "stacksnap trace: --%s: '%s' is not " DURATION_HELP "\n",
				c == O_INTERVAL ? "interval" : "duration", arg);
			return EXIT_USAGE;
		}
		*(c == O_INTERVAL ? &o->interval : &o->duration) = (double)ns / 1e9;
		break;
	}
	case O_STACK:
	case O_RING: {
		size_t sz;

		if (parse_size(arg, &sz) || !sz) {
			fprintf(stderr, "stacksnap trace: --%s: '%s' is not " SIZE_HELP "\n",
				c == O_STACK ? "stack-size" : "ring-size", arg);
			return EXIT_USAGE;
		}
		if (c == O_STACK && sz > 65536) {
			fprintf(stderr, "stacksnap trace: --stack-size: at most 64k\n");
			return EXIT_USAGE;
		}
		if (c == O_RING && (sz & (sz - 1) || sz < 4096)) {
			fprintf(stderr, "stacksnap trace: --ring-size: a power of two, at least 4k\n");
			return EXIT_USAGE;
		}
		*(c == O_STACK ? &o->stack_size : &o->ring_size) = sz;
		break;
	}
	case O_NOINH: o->no_inherit = true; break;
	case O_NOHOLD: o->no_hold = true; break;
	case O_COMPACT: o->compact = true; break;
	case O_SAVE: o->save = arg; break;
	case 'q': o->quiet = true; break;
	case O_ENC:
		if ((o->encoding = options_parse_encoding(arg)) < 0) {
			fprintf(stderr, "stacksnap trace: --encoding: '%s' is not an "
				"encoding (pointers, exact or full)\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'v': o->print.verbose = true; break;
	case 'h': fputs(help_text("trace"), stdout); return -1;
	default: /* getopt said which */
		return EXIT_USAGE;
	}
	return 0;
}

/* After the options: -l's pattern, or the command, and the options that
 * go together. */
static int parse_operands(struct trace_options *o, int argc, char **argv)
{
	if (o->list) {
		if (optind < argc)
			o->list_pattern = argv[optind++];
		if (optind < argc) {
			fprintf(stderr, "stacksnap trace: -l takes one pattern\n");
			return EXIT_USAGE;
		}
		return 0;
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (!o->nevents && !o->hz) {
		fprintf(stderr, "stacksnap trace: which events? give -e EVENT or -F HZ "
			"(`stacksnap trace -l` lists tracepoints)\n");
		return EXIT_USAGE;
	}
	if (!!o->pid + !!o->tid + !!o->cmd + o->all != 1) {
		fprintf(stderr, "stacksnap trace: %s\n", !o->pid && !o->tid && !o->cmd && !o->all
			? "whom to trace? give -p PID, -t TID, -a, or -- CMD [ARGS...]"
			: "give only one of -p PID, -t TID, -a and -- CMD");
		return EXIT_USAGE;
	}
	/* -o out.svg or out.pb.gz alone: that profile (a name that says
	 * .json or .folded keeps trace's events, as before). */
	if (o->out.format_by_name && !o->out.format_set && !o->json && !o->count &&
	    !o->folded && !o->out.ctf && (o->out.format == STACKSNAP_FORMAT_SVG ||
					  o->out.format == STACKSNAP_FORMAT_PPROF))
		o->out.format_set = true;
	if (o->folded && !o->out.format_set)
		o->out.format = STACKSNAP_FORMAT_FOLDED;
	if (o->out.format_set && o->out.format == STACKSNAP_FORMAT_FOLDED) {
		o->folded = true; /* --format folded is --folded */
		o->out.format_set = false;
	}
	if ((o->interval > 0) && !o->count && !o->folded) {
		fprintf(stderr, "stacksnap trace: --interval goes with --count or --folded\n");
		return EXIT_USAGE;
	}
	if ((o->quiet || o->encoding) && !o->save) {
		fprintf(stderr, "stacksnap trace: %s goes with --save FILE\n",
			o->quiet ? "-q" : "--encoding");
		return EXIT_USAGE;
	}
	if (o->out.ctf && !o->out.output) {
		fprintf(stderr, "stacksnap trace: --format ctf writes a directory: give -o DIR\n");
		return EXIT_USAGE;
	}
	if (o->json + o->count + o->folded + o->out.format_set + o->out.ctf > 1) {
		fprintf(stderr, "stacksnap trace: give only one of --json, --count, "
			"--folded and --format\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* `stacksnap trace`'s command line into o. Returns 0, -1 after --help, or
 * the exit code of a bad command line (said on stderr). */
static int parse(struct trace_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "list", no_argument, NULL, 'l' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, O_JSON },
		{ "count", no_argument, NULL, O_COUNT },
		{ "folded", no_argument, NULL, O_FOLDED },
		PROFILE_OUT_LONGOPTS,
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "stack-size", required_argument, NULL, O_STACK },
		{ "ring-size", required_argument, NULL, O_RING },
		{ "no-inherit", no_argument, NULL, O_NOINH },
		{ "no-hold", no_argument, NULL, O_NOHOLD },
		PRINT_LONGOPTS,
		{ "save", required_argument, NULL, O_SAVE },
		{ "unwind", required_argument, NULL, O_UNWIND },
		{ "compact", no_argument, NULL, O_COMPACT },
		{ "encoding", required_argument, NULL, O_ENC },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->out.ctf_allowed = true;
	optind = 1;
	/* '+': options stop at the command after "--". */
	while ((c = getopt_long(argc, argv, "+e:F:d:i:lap:t:o:qvh", longopts, NULL)) != -1) {
		int r = profile_out_option(&o->out, "stacksnap trace", c, optarg);

		if (r != 1) {
			if (r)
				return r;
			continue;
		}
		/* -i and -d are --interval and --duration, as in watch and
		 * profile (one letter, one meaning in every subcommand). */
		r = parse_option(o, c == 'i' ? O_INTERVAL : c == 'd' ? O_DURATION : c,
				 optarg);
		if (r)
			return r;
	}
	return parse_operands(o, argc, argv);
}

static int on_event(const struct stacksnap_trace_event *ev, void *user)
{
	struct tracer *t = user;
	struct stacksnap_trace_field f[32];
	int nf;

	/* Between its release and its failed exec the held child is still
	 * stacksnap (its write of the exec's errno): nothing of CMD's. */
	if (t->exec_failed)
		return 0;
	nf = stacksnap_trace__fields(t->tr, ev, f, 32);
	struct trace_line line = {
		.name = ev->name, .time_ns = ev->time_ns, .comm = ev->comm,
		.pid = ev->pid, .tid = ev->tid, .cpu = ev->cpu,
		.fields = f, .nfields = nf > 0 ? nf : 0,
		.stack_bytes = ev->capture->stack_len,
		.frames = ev->frames, .nframes = ev->nframes, .end = ev->end,
		.as = ev->as, .live = ev,
		.kernel_end = ev->kernel_end, .kernel_pcs = ev->kernel_pcs,
		.kernel_nframes = ev->kernel_nframes,
		.rframes = ev->rframes, .nrframes = ev->nrframes,
		.runtime_end = ev->runtime_end,
		/* Not for counts: stacks are counted without it. */
		.goid = t->p.counts ? 0 : trace_go_goid(&t->go_procs, ev->pid,
							ev->capture->regs),
	};

	/* --unwind both: say where the two walks part (the summary counts). */
	if (ev->agreement == STACKSNAP_TRACE_AGREE_DIFFER && ev->first_difference >= 0)
		fprintf(stderr, "stacksnap trace: %.6f pid %d: in-kernel frame #%d "
			"0x%" PRIx64 " differs from the copy's 0x%" PRIx64 "\n",
			ev->time_ns / 1e9, (int)ev->tid, ev->first_difference,
			(uint64_t)(ev->kernel_pcs[ev->first_difference] & ~(1ull << 63)),
			ev->frames[ev->first_difference].pc);
	if (t->save && stacksnap_trace_writer__add(t->save, ev, f, line.nfields)) {
		t->error = errno ? errno : EIO;
		return -t->error;
	}
	if (t->ctf) {
		STACKSNAP_OPTS(stacksnap_ctf_event, cev, .name = ev->name,
			       .time_ns = ev->time_ns, .pid = ev->pid, .tid = ev->tid,
			       .cpu = ev->cpu, .comm = ev->comm, .fields = f,
			       .nfields = (size_t)line.nfields, .frames = ev->frames,
			       .nframes = ev->nframes, .end = ev->end, .as = ev->as);
		int r = stacksnap_ctf_writer__add(t->ctf, &cev);

		if (r) {
			t->error = -r;
			return r;
		}
		return 0; /* the trace is the output */
	}
	if (t->o->quiet)
		return 0;
	if (trace_print_event(&t->p, &line)) {
		t->error = ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

/* After each poll round, with --format ctf or --save: the events lost
 * since the last round, by CPU, become their CTF streams' discarded-event
 * counts and lost-events records of the events file (after the round's
 * events, in both); then the CTF trace is written as far as it goes (the
 * directory holds a complete trace of everything so far). Returns 0 or
 * -errno. */
static int lost_round(struct tracer *t)
{
	int n = stacksnap_trace__lost_by_cpu(t->tr, NULL, 0);
	uint64_t *now;
	int r = 0;

	if (n > t->nlost) {
		uint64_t *p = realloc(t->lost, (size_t)n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + t->nlost, 0, (size_t)(n - t->nlost) * sizeof(*p));
		t->lost = p;
		t->nlost = n;
	}
	if (n > 0) {
		now = calloc((size_t)n, sizeof(*now));
		if (!now)
			return -ENOMEM;
		n = stacksnap_trace__lost_by_cpu(t->tr, now, (size_t)n);
		for (int c = 0; c < n && c < t->nlost && !r; c++)
			if (now[c] != t->lost[c]) {
				if (t->ctf)
					r = stacksnap_ctf_writer__discarded(t->ctf, (unsigned)c,
									    now[c]);
				if (!r && t->save)
					r = stacksnap_trace_writer__lost(t->save, (unsigned)c,
									 now[c]);
				t->lost[c] = now[c];
			}
		free(now);
	}
	return r ? r : t->ctf ? stacksnap_ctf_writer__flush(t->ctf) : 0;
}

/* --format ctf: the CTF trace in the directory -o names, its clock offset
 * the one the events file of --save keeps too. NULL after the log said
 * why. */
static struct stacksnap_ctf_writer *ctf_open(struct tracer *t, int64_t clock_offset)
{
	const struct trace_options *o = t->o;
	char host[256];
	struct utsname u;

	if (gethostname(host, sizeof(host)))
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	if (uname(&u))
		u.release[0] = 0;
	STACKSNAP_OPTS(stacksnap_ctf_writer_opts, cwo, .clock_offset_ns = clock_offset,
		       .hostname = host, .kernel_release = u.release,
		       .sym_flags = o->print.no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0);
	return stacksnap_ctf_writer__new(t->ctx, o->out.output, &cwo);
}

static int exit_for(int err)
{
	switch (err) {
	case -EPERM: case -EACCES: return EXIT_NOT_PERMITTED;
	case -ESRCH: return EXIT_NO_PROCESS;
	case -ENOENT: case -EINVAL: return EXIT_USAGE;
	}
	return EXIT_ERROR;
}

/* -l's names, gathered to be printed sorted. */
struct name_list {
	char **v;
	size_t n, cap;
};

static int list_one(const char *name, void *user)
{
	struct name_list *l = user;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(name)))
		return -ENOMEM;
	l->n++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* trace -l [PATTERN]: the names sorted; none is said (exit 1). */
static int trace_list(struct stacksnap_ctx *ctx, const char *pattern)
{
	struct name_list l = { 0 };
	int r = stacksnap_trace__list(ctx, pattern, list_one, &l), rc = EXIT_OK;

	if (r < 0) {
		rc = r == -ENOMEM ? EXIT_ERROR : exit_for(r);
	} else if (!l.n) {
		fprintf(stderr, "stacksnap trace: -l: nothing matches '%s'\n",
			pattern ? pattern : "");
		rc = EXIT_USAGE;
	} else {
		qsort(l.v, l.n, sizeof(*l.v), name_cmp);
		for (size_t i = 0; i < l.n; i++)
			puts(l.v[i]);
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return rc;
}

/* The process ended (a zombie counts: its parent has not reaped it). */
static bool process_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	bool gone = true;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] && p[2])
			gone = p[2] == 'Z' || p[2] == 'X';
		fclose(f);
	}
	return gone;
}

/* -p/-t: a live process or thread, not a zombie or a kernel thread
 * (said before any probe loads). */
static int trace_check_target(const struct trace_options *o)
{
	return cli_check_target(o->pid ? o->pid : o->tid, !o->pid);
}

/* The tracer, its events, the output (events, counts or a profile) and
 * the events file of --save. Returns 0 or the exit code. */
static int trace_setup(struct tracer *t)
{
	const struct trace_options *o = t->o;
	/* One clock offset for the events file and the CTF trace, so that a
	 * trace converted from the file is the one written live. */
	int64_t clock_offset = stacksnap_clock_offset_ns();
	int r;

	STACKSNAP_OPTS(stacksnap_trace_opts, topts, .stack_size = o->stack_size,
		       .ring_size = o->ring_size, .no_inherit = o->no_inherit, .all_processes = o->all,
		       .by_tid = o->tid > 0, .max_frames = o->print.max_frames,
		       .pid_hint = o->pid ? o->pid : o->tid, .unwind = o->unwind,
		       .compact = o->compact,
		       .no_runtime = o->print.runtime == RUNTIME_OFF);
	t->tr = stacksnap_trace__new(t->ctx, &topts);
	if (!t->tr)
		return EXIT_ERROR;
	for (size_t i = 0; i < o->nevents; i++)
		if ((r = stacksnap_trace__add_event(t->tr, o->events[i])) < 0)
			return exit_for(r); /* the log named the event */
	if (o->hz && stacksnap_trace__add_sampling(t->tr, o->hz) < 0)
		return EXIT_ERROR;
	t->p.print = &o->print;
	t->p.json = o->json;
	t->p.unwind = o->unwind;
	if (o->out.ctf) {
		if (!(t->ctf = ctf_open(t, clock_offset)))
			return EXIT_ERROR; /* the log named the directory */
	} else if (!(t->p.out = profile_out_open(&o->out, "stacksnap trace"))) {
		t->p.out = stdout;
		return EXIT_ERROR;
	}
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts, .sample_type = "events",
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	if ((o->count || o->folded || o->out.format_set) &&
	    !(t->p.counts = stacksnap_stacks__new(&sopts)))
		return EXIT_ERROR;
	if (o->save) {
		/* `-- CMD` does not run yet: its words are its command line. */
		char command[4096] = "";
		size_t len = 0;

		for (char **a = o->cmd; a && *a && len < sizeof(command); a++)
			len += (size_t)snprintf(command + len, sizeof(command) - len, "%s%s",
						a == o->cmd ? "" : " ", *a);
		STACKSNAP_OPTS(stacksnap_trace_writer_opts, wopts,
			       .encoding = (enum stacksnap_stack_encoding)o->encoding,
			       .max_frames = o->print.max_frames, .unwind = o->unwind,
			       .pid = o->pid ? o->pid : o->tid, .clock_offset_ns = clock_offset,
			       .command = command);
		t->save = stacksnap_trace_writer__new(t->ctx, o->save, &wopts);
		if (!t->save)
			return EXIT_ERROR; /* the log named the file */
	}
	return 0;
}

/* An exit stop of the held command: every event in the ring buffer is
 * read while the process still has its mappings. */
static void drain_events(void *arg)
{
	struct tracer *t = arg;

	while (!t->error && stacksnap_trace__poll(t->tr, 0, on_event, t) > 0)
		;
}

/* Starts the command held (`-- CMD`), attaches the probes and follows the
 * target, then lets the command run. Returns 0 or the exit code. */
static int trace_start(struct tracer *t)
{
	const struct trace_options *o = t->o;
	int r;

	if (o->cmd && (t->child = child_cmd_spawn(o->cmd, &t->go, &t->cerr)) < 0) {
		fprintf(stderr, "stacksnap trace: cannot start '%s': %s\n", o->cmd[0], strerror(errno));
		return EXIT_CANNOT_RUN;
	}
	stop_signal_catch();
	if ((r = stacksnap_trace__start(t->tr)))
		return exit_for(r == -EINVAL ? -ENOTSUP : r);
	if (!o->all && (r = stacksnap_trace__follow(t->tr, t->child > 0 ? t->child
						    : o->pid ? o->pid : o->tid)))
		return exit_for(r);
	if (t->child > 0) {
		/* Held at its exits (each process it starts too) before it
		   runs, so that its events unwind while its mappings exist. */
		t->held = !o->no_hold && trace_hold__attach(t->child) == 0;
		r = child_cmd_release("stacksnap trace", o->cmd, &t->go, t->cerr);
		t->exec_failed = r != 0;
		return r;
	}
	return 0;
}

/* Takes events until a stop signal, an error, the end of the command or
 * of the process, or --duration; --interval prints the counts so far.
 * Returns EXIT_OK or EXIT_ERROR. */
static int trace_loop(struct tracer *t)
{
	const struct trace_options *o = t->o;
	double t0 = monotonic_ns() / 1e9;
	double next_print = o->interval > 0 ? t0 + o->interval : 0;

	while (!stop_signal && !t->error) {
		int r = stacksnap_trace__poll(t->tr, 100, on_event, t), r2;

		/* What a crash or a kill would lose: at most one round. */
		if (t->save && r > 0 && stacksnap_trace_writer__flush(t->save))
			t->error = errno ? errno : EIO;
		if ((t->ctf || t->save) && !t->error && (r2 = lost_round(t)))
			t->error = -r2;
		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "stacksnap trace: reading events: %s\n", strerror(-r));
			return EXIT_ERROR;
		}
		if (t->child > 0 &&
		    (t->held ? trace_hold__poll(t->child, false, &t->child_status,
						 drain_events, t)
			     : waitpid(t->child, &t->child_status, WNOHANG) == t->child)) {
			t->child_done = true;
			break;
		}
		if ((o->pid || o->tid) && process_gone(o->pid ? o->pid : o->tid))
			break; /* the process is gone: what it did is in the buffer */
		if (o->duration > 0 && monotonic_ns() / 1e9 - t0 >= o->duration)
			break;
		if (next_print && monotonic_ns() / 1e9 >= next_print) {
			fprintf(t->p.out, "--- %.1f s\n", monotonic_ns() / 1e9 - t0);
			trace_print_counts(&t->p, o->folded);
			fflush(t->p.out);
			next_print += o->interval;
		}
	}
	return EXIT_OK;
}

/* Ends a held command's process group: every member is answered at its
 * stops (its exit drains the events it raised) while it dies, SIGTERM
 * first (the stop signal the tool got, if any), SIGKILL after 2 s; a
 * member never waited for longer than 10 s. */
static void end_held_group(struct tracer *t)
{
	uint64_t t0 = monotonic_ns();
	bool killed = false, group = true;
	struct child_strays strays = { 0 };

	kill(-t->child, stop_signal ? stop_signal : SIGTERM);
	/* The group, then what left it (setsid: a daemon), reparented to
	 * the tool and held too: their stops answered as they die. */
	while (group || child_cmd_signal_strays(&strays, stop_signal)) {
		uint64_t ns = monotonic_ns() - t0;

		if (trace_hold__poll(t->child, false, &t->child_status, drain_events, t))
			t->child_done = true;
		group = !t->child_done || kill(-t->child, 0) == 0;
		if (!killed && ns >= 2000000000ull) {
			kill(-t->child, SIGKILL);
			killed = true;
		}
		if (ns >= 10000000000ull)
			break;
		usleep(2000);
	}
}

/* Detaches, takes what is still in the ring buffer, and writes the counts
 * (or the profile) and the end of the events file. Returns rc, or
 * EXIT_ERROR (or the profile writer's code) when one of them failed. */
static int trace_finish(struct tracer *t, int rc)
{
	const struct trace_options *o = t->o;

	stacksnap_trace__stop(t->tr);
	while (!t->error && stacksnap_trace__poll(t->tr, 0, on_event, t) > 0)
		;
	if ((t->ctf || t->save) && !t->error) {
		int r = lost_round(t);

		if (r)
			t->error = -r;
	}
	if (t->ctf) {
		int r = stacksnap_ctf_writer__close(t->ctf);

		t->ctf = NULL;
		if (r && !t->error)
			t->error = -r;
	}
	if (t->error) {
		fprintf(stderr, "stacksnap trace: %s\n", strerror(t->error));
		rc = EXIT_ERROR;
	}
	if (t->p.counts) {
		if (o->interval > 0)
			fprintf(t->p.out, "--- end\n");
		if (o->out.format_set) {
			rc = profile_out_write(&o->out, "stacksnap trace", t->p.out, t->p.counts,
					       o->cmd ? o->cmd[0] : "stacksnap trace");
			t->p.out = stdout; /* closed */
		} else if (trace_print_counts_said(&t->p, o->folded, "stacksnap trace",
						   t->p.out == stdout ? NULL : o->out.output))
			rc = EXIT_ERROR;
	}
	if (t->save) {
		int r = stacksnap_trace_writer__close(t->save);

		t->save = NULL;
		if (r) {
			fprintf(stderr, "stacksnap trace: %s: the events file is "
				"incomplete: %s\n", o->save, strerror(-r));
			rc = EXIT_ERROR;
		}
	}
	return rc;
}

/* The closing summary on stderr: events captured, unwound and lost, the
 * in-kernel unwinder's share, and which signal stopped the trace. */
static void trace_print_summary(const struct tracer *t)
{
	const struct trace_options *o = t->o;
	struct stacksnap_trace_stats st;

	stacksnap_trace__stats(t->tr, &st);
	fprintf(stderr, "stacksnap trace: %" PRIu64 " events captured, %" PRIu64
		" unwound (%" PRIu64 " to the bottom of the stack), %" PRIu64
		" lost (ring buffer full)%s; %" PRIu64 " stack copies cut short by an "
		"unreadable page; %.1f bytes per event\n",
		st.captured, st.unwound, st.complete, st.lost,
		st.lost ? ": try a larger --ring-size or a smaller --stack-size" : "",
		st.short_stacks, st.received ? (double)st.bytes / st.received : 0.0);
	if (o->unwind != STACKSNAP_TRACE_UNWIND_USER)
		fprintf(stderr, "stacksnap trace: %" PRIu64 " stacks unwound in the kernel "
			"(%" PRIu64 " to the bottom, %" PRIu64 " before the tables of their "
			"code were loaded); unwind tables take %zu KiB of kernel memory\n",
			st.kernel_walks, st.kernel_complete, st.kernel_fallback,
			st.table_bytes / 1024);
	if (o->unwind == STACKSNAP_TRACE_UNWIND_BOTH)
		fprintf(stderr, "stacksnap trace: kernel vs user-space walk: %" PRIu64
			" identical, %" PRIu64 " kernel stopped earlier (DWARF rows), %" PRIu64
			" copy ended first, %" PRIu64 " unwound from the copy (tables not "
			"loaded yet), %" PRIu64 " differ\n",
			st.agreement[STACKSNAP_TRACE_AGREE_SAME],
			st.agreement[STACKSNAP_TRACE_AGREE_KERNEL_PREFIX],
			st.agreement[STACKSNAP_TRACE_AGREE_USER_PREFIX],
			st.agreement[STACKSNAP_TRACE_AGREE_FALLBACK],
			st.agreement[STACKSNAP_TRACE_AGREE_DIFFER]);
	if (stop_signal)
		fprintf(stderr, "stacksnap trace: stopped by %s; every probe detached\n",
			stop_signal == SIGINT ? "SIGINT" : stop_signal == SIGTERM ? "SIGTERM" : "SIGHUP");
}

/* Ends the command (a held one that never ran exits when go closes; one
 * still running gets the stop signal) and frees the run. Returns rc, or
 * EXIT_ERROR when stdout could not be written. */
static int trace_free(struct tracer *t, int rc)
{
	if (t->go >= 0)
		close(t->go); /* a held command that never ran exits */
	if (t->cerr >= 0)
		close(t->cerr);
	/* Tracing is over (--duration, a stop signal, the command's end):
	 * what is left of the command's process group is ended and reaped;
	 * a held command first goes through its exit stops, each draining
	 * the events it raised. */
	if (t->child > 0 && t->held)
		end_held_group(t);
	if (t->child > 0)
		child_cmd_end(t->child, t->child_done, stop_signal, &t->child_status);
	stacksnap_trace__free(t->tr);
	stacksnap_trace_writer__close(t->save);
	/* No events file of a command that never ran: a regular file goes,
	 * a device (/dev/null, /dev/full) or a pipe stays. */
	struct stat st;

	if (t->exec_failed && t->o->save && !lstat(t->o->save, &st) && S_ISREG(st.st_mode))
		unlink(t->o->save);
	stacksnap_ctf_writer__close(t->ctf);
	free(t->lost);
	stacksnap_stacks__free(t->p.counts);
	trace_printer_free(&t->p);
	trace_go_free(&t->go_procs);
	rc = cli_close_output(t->p.out, t->p.out == stdout ? NULL : t->o->out.output, rc);
	stacksnap_ctx__free(t->ctx);
	return rc;
}

int trace_main(int argc, char **argv)
{
	struct trace_options o;
	struct tracer t = { .o = &o, .p.out = stdout, .child = -1, .go = -1,
			    .cerr = -1 };
	int rc;

	rc = parse(&o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	cli_verbose = o.print.verbose;
	cli_warnings = true;
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = cli_verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_WARN,
		       .cache_dir = default_cache_dir());
	t.ctx = stacksnap_ctx__new(&copts);
	if (!t.ctx) {
		fprintf(stderr, "stacksnap: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	if (o.list) {
		rc = trace_list(t.ctx, o.list_pattern);
		stacksnap_ctx__free(t.ctx);
		return rc;
	}
	if ((o.pid || o.tid) && (rc = trace_check_target(&o))) {
		stacksnap_ctx__free(t.ctx);
		return rc;
	}
	if ((rc = trace_setup(&t)) || (rc = trace_start(&t)))
		return trace_free(&t, rc);
	rc = trace_finish(&t, trace_loop(&t));
	trace_print_summary(&t);
	/* As every subcommand that runs until told: SIGINT is how it ends
	 * (0), SIGTERM and SIGHUP give 128+N, once the output is written. */
	if (rc == EXIT_OK && stop_signal && stop_signal != SIGINT)
		rc = EXIT_SIGNAL_BASE + stop_signal;
	return trace_free(&t, rc);
}
