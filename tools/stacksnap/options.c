/* options.c - parsing of the stacksnap command line. */
#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "help.h"
#include "stacksnap.h"


/* Parses "1.5s", "300ms", "2m", "20000ns"; a number without a unit is
 * worth unit_ns (NS_PER_S for every option but those whose name ends in
 * -ms). strtod reads the number: decimals are allowed, signs are not.
 * Returns 0, or -EINVAL for text that is not a positive time of at most
 * 30 days. */
int parse_duration_unit(const char *s, uint64_t unit_ns, uint64_t *ns)
{
	static const struct { const char *name; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "min", 60e9 },
	};
	char *end;
	double v, mul = (double)unit_ns;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	if (*end) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(end, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		mul = units[i].ns;
	}
	if (v * mul > 30 * 86400e9 || v * mul < 1)
		return -EINVAL;
	*ns = (uint64_t)(v * mul + 0.5);
	return 0;
}

int parse_duration(const char *s, uint64_t *ns)
{
	return parse_duration_unit(s, NS_PER_S, ns);
}

/* Parses "64k", "1m", "4096". Returns 0 or -EINVAL. */
int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end || v == 0 || v > (SIZE_MAX >> shift) || (v << shift) > (1ull << 32))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

bool cli_verbose;
bool cli_warnings;
const char *cli_name = "stacksnap";
char cli_last_error[256];

int cli_usage_error(void)
{
	fprintf(stderr, "Try '%s --help'.\n", cli_name);
	return EXIT_USAGE;
}

void cli_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	(void)user;
	/* An error reads as every message of the command does
	 * ("stacksnap watch: pid 2: a kernel thread has no user stack");
	 * the rest, with -v, say what they are. */
	if (level <= STACKSNAP_LOG_ERROR) {
		fprintf(stderr, "%s: %s\n", cli_name, msg);
		snprintf(cli_last_error, sizeof(cli_last_error), "%s", msg);
	}
	else if (level == STACKSNAP_LOG_WARN && cli_warnings && !cli_verbose)
		fprintf(stderr, "%s: %s\n", cli_name, msg);
	else if (cli_verbose)
		fprintf(stderr, "%s: %s: %s\n", cli_name, names[level], msg);
}

const char *cli_stdout_path;

int cli_json_to_file(const struct options *o)
{
	if (!o->json || !o->out.output)
		return 0;
	if (!freopen(o->out.output, "w", stdout)) {
		fprintf(stderr, "%s: cannot write %s: %s\n", cli_name, o->out.output,
			strerror(errno));
		return EXIT_ERROR;
	}
	cli_stdout_path = o->out.output;
	return 0;
}

/* Whether f is a pipe whose reader has gone (the kernel's POLLERR on a
 * write end without readers): the errno of the write that found it may be
 * long overwritten (a later fflush of nothing says EIO). */
static bool reader_gone(FILE *f)
{
	struct pollfd p = { .fd = fileno(f) };

	return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

int cli_close_output(FILE *f, const char *path, int rc)
{
	int failed, err;

	errno = 0;
	failed = ferror(f);
	failed |= (f == stdout ? fflush(f) : fclose(f)) != 0;
	err = errno ? errno : EIO;
	if (!failed)
		return rc;
	/* The reader of a pipe went away (head, a pager quit): its choice,
	 * not an error to report. Where SIGPIPE is ignored (the dump, so
	 * that it cannot end the process mid-capture), end as a process
	 * SIGPIPE ended would, as the subcommands that keep it do. */
	if (f == stdout && !path && (err == EPIPE || reader_gone(f)))
		return rc == EXIT_OK || rc == EXIT_PARTIAL ? EXIT_SIGNAL_BASE + SIGPIPE : rc;
	if (!path && f == stdout)
		path = cli_stdout_path;
	fprintf(stderr, "%s: writing %s: %s\n", cli_name,
		path ? path : "standard output", strerror(err));
	return rc == EXIT_OK || rc == EXIT_PARTIAL ? EXIT_ERROR : rc;
}

/* Copies of compressed debug files, whole unwind tables and symbol files
 * noted during a dump or a replay are made by a detached, low-priority
 * child once the output is written: the first run is not made to wait
 * for them (libc6-dbg's libc: inflating and writing ~40 MB), the next one
 * finds them. A dump's target is long detached by then. */
void cli_write_caches_detached(struct stacksnap_ctx *ctx)
{
	pid_t pid;

	if (!stacksnap_ctx__pending_cache_writes(ctx))
		return;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0) {
		/* Parent; if fork failed, the next run notes them again. */
		if (pid > 0)
			waitpid(pid, NULL, 0);
		return;
	}
	if (fork() != 0) /* the grandchild is reparented: no zombie, no wait */
		_exit(0);
	setsid();
	int fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	(void)!nice(19);
	stacksnap_ctx__write_caches(ctx);
	_exit(0);
}

void cli_print_table_stats(FILE *f, const char *who, const struct stacksnap_ctx_stats *c)
{
	fprintf(f, "%s: unwind tables: %u whole, %u lazy (%u FDEs), "
		   "%u from the table cache, %u stored in it\n",
		who, c->tables_whole, c->tables_lazy, c->lazy_fdes,
		c->tables_cached, c->tables_stored);
	fprintf(f, "%s: symbol tables: %u from the symbol cache\n", who,
		c->symtabs_cached);
}

const char *default_cache_dir(void)
{
	static char dir[4096];
	const char *env = getenv("STACKSNAP_CACHE_DIR");

	if (env && *env)
		return env;
	if ((env = getenv("XDG_CACHE_HOME")) && *env)
		snprintf(dir, sizeof(dir), "%s/stacksnap", env);
	else if ((env = getenv("HOME")) && *env)
		snprintf(dir, sizeof(dir), "%s/.cache/stacksnap", env);
	else
		return NULL;
	return dir;
}

/* --encoding's names, by enum stacksnap_stack_encoding. */
int options_parse_encoding(const char *s)
{
	if (!strcmp(s, "pointers"))
		return STACKSNAP_ENCODING_POINTERS;
	if (!strcmp(s, "exact"))
		return STACKSNAP_ENCODING_EXACT;
	if (!strcmp(s, "full"))
		return STACKSNAP_ENCODING_FULL;
	return -1;
}

/* The long options of the dump and show that have no short letter (the
 * ones trace has too are PRINT_OPT_*). show's own: OPT_DDIR on. */
enum { OPT_RAW = 256, OPT_JSON, OPT_STACK, OPT_TMO, OPT_PROCMEM, OPT_SCAN,
       OPT_STATS, OPT_PTRACE, OPT_IGNDEL, OPT_NOCACHE, OPT_FREEZEALL, OPT_NORT,
       OPT_SAVE, OPT_ENC, OPT_CORE, OPT_EXE, OPT_NONSTOP, OPT_GOROUTINES,
       OPT_THREADS, OPT_DDIR, OPT_NODI, OPT_COUNT, OPT_FOLDED, OPT_FOLLOW,
       OPT_WAITS_FD, OPT_WAITS_PID, OPT_NOGROUP, OPT_PGREP, OPT_NOWAITS };

/* The options the dump and show share (one table, one parser). */
#define DUMP_SHOW_LONGOPTS						\
	PRINT_LONGOPTS,							\
	{ "raw", no_argument, NULL, OPT_RAW },				\
	{ "no-group", no_argument, NULL, OPT_NOGROUP },			\
	{ "json", no_argument, NULL, OPT_JSON },			\
	{ "scan", no_argument, NULL, OPT_SCAN },			\
	{ "no-cache", no_argument, NULL, OPT_NOCACHE },			\
	{ "goroutines", no_argument, NULL, OPT_GOROUTINES },		\
	{ "threads", no_argument, NULL, OPT_THREADS },			\
	{ "verbose", no_argument, NULL, 'v' },				\
	{ "help", no_argument, NULL, 'h' },				\
	PROFILE_OUT_LONGOPTS

int options_parse_runtime(const char *arg)
{
	if (!strcmp(arg, "merged"))
		return RUNTIME_MERGED;
	if (!strcmp(arg, "only"))
		return RUNTIME_ONLY;
	if (!strcmp(arg, "off"))
		return RUNTIME_OFF;
	return -1;
}

int print_option(struct options *o, int c, const char *arg, unsigned long max_frames)
{
	unsigned long v;

	switch (c) {
	case PRINT_OPT_LINES: o->lines = true; break;
	case PRINT_OPT_NODEM: o->no_demangle = true; break;
	case PRINT_OPT_RSP: o->show_rsp = true; break;
	case PRINT_OPT_NOFOLD: o->no_fold = true; break;
	case PRINT_OPT_MAXF:
		if (parse_uint(arg, max_frames, &v) || !v) {
			fprintf(stderr, "%s: --max-frames: '%s' is not a number (1..%lu)\n",
				cli_name, arg, max_frames);
			return EXIT_USAGE;
		}
		o->max_frames = (unsigned)v;
		break;
	case PRINT_OPT_RUNTIME:
		if ((o->runtime = options_parse_runtime(arg)) < 0) {
			fprintf(stderr, "%s: --runtime: '%s' is not merged, only or off\n",
				cli_name, arg);
			return EXIT_USAGE;
		}
		break;
	default:
		return 1;
	}
	return 0;
}

/* Appends pid to the processes to dump (pid: the first). Returns 0, or -1
 * out of memory (said). */
static int add_pid(struct options *o, pid_t pid)
{
	pid_t *v = realloc(o->pids, (o->npids + 1) * sizeof(*v));

	if (!v) {
		fprintf(stderr, "%s: out of memory\n", cli_name);
		return -1;
	}
	o->pids = v;
	o->pids[o->npids++] = pid;
	o->pid = o->pids[0];
	return 0;
}

/* One option c (its argument arg) of the dump or show into o (help: the
 * --help text to print). Returns 0 to go on, -1 after --help or
 * --version, or the exit code of a bad option. */
static int parse_option(struct options *o, int c, char *arg, const char *help)
{
	unsigned long v;
	int r = print_option(o, c, arg, 1000000);

	if (r != 1)
		return r;
	switch (c) {
	case 'p':
		if (parse_uint(arg, INT_MAX, &v) || !v) {
			fprintf(stderr, "%s: -p: '%s' is not a process id\n", cli_name, arg);
			return EXIT_USAGE;
		}
		if (add_pid(o, (pid_t)v))
			return EXIT_USAGE;
		break;
	case 't':
		if (parse_uint(arg, INT_MAX, &v) || !v) {
			fprintf(stderr, "%s: --thread: '%s' is not a thread id\n", cli_name, arg);
			return EXIT_USAGE;
		}
		if (o->ntids == MAX_TIDS) {
			fprintf(stderr, "%s: at most %d --thread options\n", cli_name, MAX_TIDS);
			return EXIT_USAGE;
		}
		o->tids[o->ntids++] = (pid_t)v;
		break;
	case OPT_RAW: o->raw = true; break;
	case OPT_JSON: o->json = true; break;
	case OPT_STACK:
		if (parse_size(arg, &o->stack_size)) {
			fprintf(stderr, "%s: --stack-size: '%s' is not " SIZE_HELP " of at most 4g\n", cli_name, arg);
			return EXIT_USAGE;
		}
		break;
	case OPT_TMO: {
		/* --stop-timeout-ms and its old spelling --stop-timeout: a
		 * bare number is milliseconds (scripts wrote 300), a unit
		 * is any of every time option's. */
		uint64_t ns;

		if (parse_duration_unit(arg, NS_PER_MS, &ns) || ns < NS_PER_MS ||
		    ns > 3600 * NS_PER_S) {
			fprintf(stderr, "%s: --stop-timeout-ms: '%s' is not a time "
					"of 1ms..1h (a bare number is milliseconds; "
					"units ns us ms s m)\n", cli_name, arg);
			return EXIT_USAGE;
		}
		o->stop_timeout_ms = (unsigned)(ns / NS_PER_MS);
		break;
	}
	case OPT_PROCMEM: o->proc_mem = true; break;
	case OPT_PTRACE: o->ptrace = true; break;
	case OPT_IGNDEL: o->ignore_deleted = true; break;
	case OPT_SCAN: o->stack_scan = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_NOCACHE: o->no_cache = true; break;
	case OPT_FREEZEALL: o->freeze_all = true; break;
	case OPT_NORT: o->no_realtime = true; break;
	case OPT_NONSTOP: o->nonstop = true; break;
	case OPT_GOROUTINES: o->goroutines_only = true; break;
	case OPT_THREADS: o->threads_only = true; break;
	case OPT_DDIR: o->debug_dirs = arg; break;
	case OPT_NODI: o->no_debuginfod = true; break;
	case OPT_COUNT: o->count = true; break;
	case OPT_FOLDED: o->folded = true; break;
	case OPT_NOGROUP: o->no_group = true; break;
	case OPT_PGREP: o->pgrep = arg; break;
	case OPT_SAVE: o->save_path = arg; break;
	case OPT_FOLLOW: o->follow = true; break;
	case OPT_WAITS_FD: o->waits_fd = atoi(arg); break;
	case OPT_NOWAITS: o->no_waits = true; break;
	case OPT_WAITS_PID: o->pid_override = (pid_t)atoi(arg); break;
	case OPT_ENC:
		if ((o->encoding = options_parse_encoding(arg)) < 0) {
			fprintf(stderr, "%s: --encoding: '%s' is not an encoding (pointers, exact or full)\n", cli_name, arg);
			return EXIT_USAGE;
		}
		break;
	case 'q': o->quiet = true; break;
	case OPT_CORE: o->core_path = arg; break;
	case OPT_EXE: o->exe_path = arg; break;
	case 'v': o->verbose = true; o->stats = true; break;
	case 'h': fputs(help_text(help), stdout); return -1;
	case 'V':
		printf("stacksnap %s\n", stacksnap_version());
		return -1;
	default: /* getopt said which */
		return EXIT_USAGE;
	}
	return 0;
}

/* The output options of the dump and show that go together (or not):
 * --goroutines/--threads, -o and --format (ctf: show only). Returns 0 or
 * EXIT_USAGE (said). */
static int check_output_options(struct options *o)
{
	if (o->goroutines_only && o->threads_only) {
		fprintf(stderr, "%s: give --goroutines or --threads, not both\n", cli_name);
		return EXIT_USAGE;
	}
	if (o->goroutines_only && o->ntids) {
		fprintf(stderr, "%s: --goroutines lists every goroutine, read "
			"with every thread: it does not go with -t\n", cli_name);
		return EXIT_USAGE;
	}
	if (o->out.ctf && !o->out.output) {
		fprintf(stderr, "%s: --format ctf writes a directory: give -o DIR\n", cli_name);
		return EXIT_USAGE;
	}
	/* -o alone: folded stacks; with --json (and no --format), the JSON
	 * object into FILE (cli_json_to_file). */
	if (o->out.output && !o->out.ctf && !(o->json && !o->out.format_set))
		o->out.format_set = true;
	if (o->out.ctf && (o->json || o->count || o->folded || o->out.format_set)) {
		fprintf(stderr, "%s: give --format ctf alone, without --json, "
			"--count or --folded\n", cli_name);
		return EXIT_USAGE;
	}
	if (o->out.format_set && o->json) {
		fprintf(stderr, "%s: give --json or --format, not both\n", cli_name);
		return EXIT_USAGE;
	}
	return 0;
}

/* After the options: the options that go together, and the PID (none with
 * --core). */
static int parse_operands(struct options *o, int argc, char **argv)
{
	unsigned long v;
	int r;

	if ((o->quiet || o->encoding) && !o->save_path) {
		fprintf(stderr, "stacksnap: %s only goes with --save FILE\n",
			o->quiet ? "-q" : "--encoding");
		return EXIT_USAGE;
	}
	if (o->nonstop && (o->freeze_all || o->ptrace)) {
		fputs("stacksnap: --nonstop reads sleeping threads without "
		      "stopping them; --freeze-all and --ptrace stop every "
		      "thread: give one\n", stderr);
		return EXIT_USAGE;
	}
	if ((r = check_output_options(o)))
		return r;
	if (o->save_path && o->ptrace) {
		fputs("stacksnap: --save keeps stack copies; --ptrace makes none\n", stderr);
		return EXIT_USAGE;
	}
	if (o->exe_path && !o->core_path) {
		fputs("stacksnap: --exe only goes with --core FILE\n", stderr);
		return EXIT_USAGE;
	}
	if (o->core_path) {
		if (optind != argc || o->pid || o->pgrep || o->save_path || o->ptrace) {
			fputs("stacksnap: --core FILE takes no PID, --save or --ptrace\n", stderr);
			return EXIT_USAGE;
		}
		return 0;
	}
	/* -p PID, as in every subcommand, or PIDs as operands; several of
	 * them (or --pgrep) dump one process after another. */
	for (; optind < argc; optind++) {
		if (parse_uint(argv[optind], INT_MAX, &v) || !v) {
			fprintf(stderr, "stacksnap: '%s' is not a process id\n", argv[optind]);
			return EXIT_USAGE;
		}
		if (add_pid(o, (pid_t)v))
			return EXIT_USAGE;
	}
	if (!o->npids && !o->pgrep) {
		fprintf(stderr, "stacksnap: which process? give a PID (or --pgrep PATTERN)\n");
		return EXIT_USAGE;
	}
	if ((o->npids > 1 || o->pgrep) &&
	    (o->save_path || o->ntids || o->ptrace || o->out.format_set)) {
		fprintf(stderr, "stacksnap: %s is for one process; with several "
			"(PID PID..., -p -p, --pgrep) give text or --json\n",
			o->save_path ? "--save" : o->ntids ? "-t" : o->ptrace ? "--ptrace"
			: "-o/--format");
		return EXIT_USAGE;
	}
	return 0;
}

int options_parse(struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		DUMP_SHOW_LONGOPTS,
		{ "pid", required_argument, NULL, 'p' },
		{ "thread", required_argument, NULL, 't' },
		{ "stack-size", required_argument, NULL, OPT_STACK },
		{ "stop-timeout-ms", required_argument, NULL, OPT_TMO },
		{ "stop-timeout", required_argument, NULL, OPT_TMO },
		{ "proc-mem", no_argument, NULL, OPT_PROCMEM },
		{ "ptrace", no_argument, NULL, OPT_PTRACE },
		{ "ignore-deleted", no_argument, NULL, OPT_IGNDEL },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "freeze-all", no_argument, NULL, OPT_FREEZEALL },
		{ "no-realtime", no_argument, NULL, OPT_NORT },
		{ "nonstop", no_argument, NULL, OPT_NONSTOP },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "encoding", required_argument, NULL, OPT_ENC },
		{ "quiet", no_argument, NULL, 'q' },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		/* --follow's own dumps of the processes it follows. */
		{ "waits-fd", required_argument, NULL, OPT_WAITS_FD },
		{ "no-waits", no_argument, NULL, OPT_NOWAITS },
		{ "waits-pid", required_argument, NULL, OPT_WAITS_PID },
		{ "pgrep", required_argument, NULL, OPT_PGREP },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "p:t:o:vhVq", longopts, NULL)) != -1) {
		int r = profile_out_option(&o->out, cli_name, c, optarg);

		if (r != 1) {
			if (r)
				return r;
			continue;
		}
		r = parse_option(o, c, optarg, "stacksnap");
		if (r)
			return r;
	}
	int r = parse_operands(o, argc, argv);

	if (!r && o->pid_override)
		o->pid = o->pid_override;
	return r;
}

int cli_check_not_thread(pid_t pid)
{
	char path[64], line[128];
	long tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0; /* the caller says what is wrong */
	while (fgets(line, sizeof(line), f) && sscanf(line, "Tgid: %ld", &tgid) != 1)
		;
	fclose(f);
	if (tgid <= 0 || tgid == pid)
		return 0;
	/* The dump and trace take -t TID: named where it exists. */
	bool has_t = !strcmp(cli_name, "stacksnap") || !strcmp(cli_name, "stacksnap trace");

	fprintf(stderr, "%s: pid %d: no such process (%d is a thread of pid %ld: give "
		"%ld%s%.0d%s)\n", cli_name, (int)pid, (int)pid, tgid, tgid,
		has_t ? "; -t " : "", has_t ? (int)pid : 0, has_t ? " for that thread alone" : "");
	return EXIT_NO_PROCESS;
}

int cli_check_target(pid_t pid, bool is_tid)
{
	char path[64], buf[1024], state = 0;
	unsigned long flags = 0;
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s %d: no such %s\n", cli_name,
			is_tid ? "thread" : "pid", (int)pid, is_tid ? "thread" : "process");
		return EXIT_NO_PROCESS;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	/* "pid (comm) S ppid pgrp session tty tpgid flags ...": comm may
	 * hold spaces and parentheses, the last ')' ends it. */
	if ((p = strrchr(buf, ')')) &&
	    sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) == 2) {
		if (state == 'Z' || state == 'X') {
			fprintf(stderr, "%s: pid %d: the process is a zombie (it "
				"exited; its parent has not reaped it)\n",
				cli_name, (int)pid);
			return EXIT_ZOMBIE;
		}
		if (flags & 0x00200000) { /* PF_KTHREAD */
			fprintf(stderr, "%s: pid %d: a kernel thread has no user "
				"stack\n", cli_name, (int)pid);
			return EXIT_KERNEL_THREAD;
		}
	}
	return is_tid ? 0 : cli_check_not_thread(pid);
}

int exit_code_for_errno(int err)
{
	switch (err) {
	case ESRCH: case ENOENT: return EXIT_NO_PROCESS;
	case EPERM: case EACCES: return EXIT_NOT_PERMITTED;
	case EBUSY: return EXIT_TRACED;
	case ECHILD: return EXIT_ZOMBIE;
	case EINVAL: return EXIT_KERNEL_THREAD;
	}
	return EXIT_ERROR;
}


int options_parse_show(struct options *o, int argc, char **argv,
		       const char **file)
{
	static const struct option longopts[] = {
		DUMP_SHOW_LONGOPTS,
		{ "debug-dir", required_argument, NULL, OPT_DDIR },
		{ "no-debuginfod", no_argument, NULL, OPT_NODI },
		{ "count", no_argument, NULL, OPT_COUNT },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "thread", required_argument, NULL, 't' },
		{ 0 },
	};
	int c, r;

	memset(o, 0, sizeof(*o));
	o->out.ctf_allowed = true;
	while ((c = getopt_long(argc, argv, "o:vht:", longopts, NULL)) != -1) {
		r = profile_out_option(&o->out, cli_name, c, optarg);
		if (r == 1)
			r = parse_option(o, c, optarg, "show");
		if (r)
			return r;
	}
	if ((r = check_output_options(o)))
		return r;
	if (o->json + o->count + o->folded + o->out.format_set > 1) {
		fprintf(stderr, "stacksnap show: give only one of --json, --count, "
			"--folded and -o/--format\n");
		return EXIT_USAGE;
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind == argc ? "stacksnap show: which file? give a snapshot file\n"
					       : "stacksnap show: one file only\n");
		return EXIT_USAGE;
	}
	*file = argv[optind];
	return 0;
}
