/* options.c - parsing of the stacksnap command line. */
#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "help.h"
#include "stacksnap.h"


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

void cli_log(enum stacksnap_log_level level, const char *msg, void *user)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (level <= STACKSNAP_LOG_ERROR || cli_verbose)
		fprintf(stderr, "stacksnap: %s: %s\n", names[level], msg);
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

/* The dump's long options that have no short letter. */
enum { OPT_LINES = 256, OPT_NODEM, OPT_RAW, OPT_JSON, OPT_RSP, OPT_STACK,
       OPT_TMO, OPT_PROCMEM, OPT_MAXF, OPT_SCAN, OPT_STATS, OPT_PTRACE,
       OPT_IGNDEL, OPT_NOCACHE, OPT_FREEZEALL, OPT_NORT, OPT_SAVE, OPT_ENC,
       OPT_CORE, OPT_EXE, OPT_NONSTOP, OPT_GOROUTINES, OPT_THREADS, OPT_RUNTIME,
       OPT_NOFOLD };

/* One option c (its argument arg) into o. Returns 0 to go on, -1 after
 * --help or --version, or the exit code of a bad option. */
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

static int parse_option(struct options *o, int c, char *arg)
{
	unsigned long v;

	switch (c) {
	case 't':
		if (parse_uint(arg, INT_MAX, &v) || !v) {
			fprintf(stderr, "stacksnap: --thread: '%s' is not a thread id\n", arg);
			return EXIT_USAGE;
		}
		if (o->ntids == MAX_TIDS) {
			fprintf(stderr, "stacksnap: at most %d --thread options\n", MAX_TIDS);
			return EXIT_USAGE;
		}
		o->tids[o->ntids++] = (pid_t)v;
		break;
	case OPT_LINES: o->lines = true; break;
	case OPT_NODEM: o->no_demangle = true; break;
	case OPT_RAW: o->raw = true; break;
	case OPT_JSON: o->json = true; break;
	case OPT_RSP: o->show_rsp = true; break;
	case OPT_STACK:
		if (parse_size(arg, &o->stack_size)) {
			fprintf(stderr, "stacksnap: --stack-size: '%s' is not a size (examples: 65536, 64k, 1m; at most 4g)\n", arg);
			return EXIT_USAGE;
		}
		break;
	case OPT_TMO:
		if (parse_uint(arg, 3600000, &v) || !v) {
			fprintf(stderr, "stacksnap: --stop-timeout: '%s' is not a number of milliseconds (1..3600000)\n", arg);
			return EXIT_USAGE;
		}
		o->stop_timeout_ms = (unsigned)v;
		break;
	case OPT_PROCMEM: o->proc_mem = true; break;
	case OPT_PTRACE: o->ptrace = true; break;
	case OPT_IGNDEL: o->ignore_deleted = true; break;
	case OPT_MAXF:
		if (parse_uint(arg, 1000000, &v) || !v) {
			fprintf(stderr, "stacksnap: --max-frames: '%s' is not a number (1..1000000)\n", arg);
			return EXIT_USAGE;
		}
		o->max_frames = (unsigned)v;
		break;
	case OPT_SCAN: o->stack_scan = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_NOCACHE: o->no_cache = true; break;
	case OPT_FREEZEALL: o->freeze_all = true; break;
	case OPT_NORT: o->no_realtime = true; break;
	case OPT_NONSTOP: o->nonstop = true; break;
	case OPT_GOROUTINES: o->goroutines_only = true; break;
	case OPT_THREADS: o->threads_only = true; break;
	case OPT_RUNTIME:
		if ((o->runtime = options_parse_runtime(arg)) < 0) {
			fprintf(stderr, "stacksnap: --runtime: '%s' is not merged, only or off\n", arg);
			return EXIT_USAGE;
		}
		break;
	case OPT_NOFOLD: o->no_fold = true; break;
	case OPT_SAVE: o->save_path = arg; break;
	case OPT_ENC:
		if ((o->encoding = options_parse_encoding(arg)) < 0) {
			fprintf(stderr, "stacksnap: --encoding: '%s' is not an encoding (pointers, exact or full)\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'q': o->quiet = true; break;
	case OPT_CORE: o->core_path = arg; break;
	case OPT_EXE: o->exe_path = arg; break;
	case 'v': o->verbose = true; o->stats = true; break;
	case 'h': fputs(help_text("stacksnap"), stdout); return -1;
	case 'V':
		printf("stacksnap %s\n", stacksnap_version());
		return -1;
	default:
		fputs("Try 'stacksnap --help'.\n", stderr);
		return EXIT_USAGE;
	}
	return 0;
}

/* After the options: the options that go together, and the PID (none with
 * --core). */
static int parse_operands(struct options *o, int argc, char **argv)
{
	unsigned long v;

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
	if (o->goroutines_only && o->threads_only) {
		fputs("stacksnap: give --goroutines or --threads, not both\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->goroutines_only && o->nonstop) {
		fputs("stacksnap: goroutines are read with every thread "
		      "stopped: --goroutines does not go with --nonstop\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->out.ctf && !o->out.output) {
		fputs("stacksnap show: --format ctf writes a directory: give -o DIR\n", stderr);
		return EXIT_USAGE;
	}
	if (o->out.output && !o->out.ctf)
		o->out.format_set = true; /* -o alone: folded stacks */
	if (o->out.ctf && (o->json || o->count || o->folded || o->out.format_set)) {
		fputs("stacksnap show: give --format ctf alone, without --json, "
		      "--count or --folded\n", stderr);
		return EXIT_USAGE;
	}
	if (o->out.format_set && o->json) {
		fputs("stacksnap: give --json or -o/--format, not both\n", stderr);
		return EXIT_USAGE;
	}
	if (o->save_path && o->ptrace) {
		fputs("stacksnap: --save keeps stack copies; --ptrace makes none\n", stderr);
		return EXIT_USAGE;
	}
	if (o->exe_path && !o->core_path) {
		fputs("stacksnap: --exe only goes with --core FILE\n", stderr);
		return EXIT_USAGE;
	}
	if (o->core_path) {
		if (optind != argc || o->save_path || o->ntids || o->ptrace) {
			fputs("stacksnap: --core FILE takes no PID, --thread, --save or --ptrace\n", stderr);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind == argc ? "stacksnap: which process? give a PID\n"
					       : "stacksnap: one PID only\n");
		fputs("Try 'stacksnap --help'.\n", stderr);
		return EXIT_USAGE;
	}
	if (parse_uint(argv[optind], INT_MAX, &v) || !v) {
		fprintf(stderr, "stacksnap: '%s' is not a process id\n", argv[optind]);
		return EXIT_USAGE;
	}
	o->pid = (pid_t)v;
	return 0;
}

int options_parse(struct options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "thread", required_argument, NULL, 't' },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "no-demangle", no_argument, NULL, OPT_NODEM },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "show-rsp", no_argument, NULL, OPT_RSP },
		{ "stack-size", required_argument, NULL, OPT_STACK },
		{ "stop-timeout", required_argument, NULL, OPT_TMO },
		{ "proc-mem", no_argument, NULL, OPT_PROCMEM },
		{ "ptrace", no_argument, NULL, OPT_PTRACE },
		{ "ignore-deleted", no_argument, NULL, OPT_IGNDEL },
		{ "max-frames", required_argument, NULL, OPT_MAXF },
		{ "scan", no_argument, NULL, OPT_SCAN },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "no-cache", no_argument, NULL, OPT_NOCACHE },
		{ "freeze-all", no_argument, NULL, OPT_FREEZEALL },
		{ "no-realtime", no_argument, NULL, OPT_NORT },
		{ "nonstop", no_argument, NULL, OPT_NONSTOP },
		{ "goroutines", no_argument, NULL, OPT_GOROUTINES },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "runtime", required_argument, NULL, OPT_RUNTIME },
		{ "no-fold", no_argument, NULL, OPT_NOFOLD },
		{ "save", required_argument, NULL, OPT_SAVE },
		{ "encoding", required_argument, NULL, OPT_ENC },
		{ "quiet", no_argument, NULL, 'q' },
		{ "core", required_argument, NULL, OPT_CORE },
		{ "exe", required_argument, NULL, OPT_EXE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		PROFILE_OUT_LONGOPTS,
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "t:o:vhVq", longopts, NULL)) != -1) {
		int r = profile_out_option(&o->out, "stacksnap", c, optarg);

		if (r != 1) {
			if (r)
				return r;
			continue;
		}
		r = parse_option(o, c, optarg);
		if (r)
			return r;
	}
	return parse_operands(o, argc, argv);
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
	enum { O_LINES = 256, O_NODEM, O_RAW, O_JSON, O_RSP, O_MAXF, O_SCAN,
	       O_NOCACHE, O_DDIR, O_NODI, O_COUNT, O_FOLDED, O_GOROUTINES,
	       O_THREADS, O_RUNTIME, O_NOFOLD };
	static const struct option longopts[] = {
		{ "lines", no_argument, NULL, O_LINES },
		{ "no-demangle", no_argument, NULL, O_NODEM },
		{ "raw", no_argument, NULL, O_RAW },
		{ "json", no_argument, NULL, O_JSON },
		{ "show-rsp", no_argument, NULL, O_RSP },
		{ "max-frames", required_argument, NULL, O_MAXF },
		{ "scan", no_argument, NULL, O_SCAN },
		{ "no-cache", no_argument, NULL, O_NOCACHE },
		{ "debug-dir", required_argument, NULL, O_DDIR },
		{ "no-debuginfod", no_argument, NULL, O_NODI },
		{ "count", no_argument, NULL, O_COUNT },
		{ "folded", no_argument, NULL, O_FOLDED },
		{ "goroutines", no_argument, NULL, O_GOROUTINES },
		{ "threads", no_argument, NULL, O_THREADS },
		{ "runtime", required_argument, NULL, O_RUNTIME },
		{ "no-fold", no_argument, NULL, O_NOFOLD },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		PROFILE_OUT_LONGOPTS,
		{ 0 },
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->out.ctf_allowed = true;
	while ((c = getopt_long(argc, argv, "o:vh", longopts, NULL)) != -1) {
		int r = profile_out_option(&o->out, "stacksnap show", c, optarg);

		if (r != 1) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case O_LINES: o->lines = true; break;
		case O_NODEM: o->no_demangle = true; break;
		case O_RAW: o->raw = true; break;
		case O_JSON: o->json = true; break;
		case O_RSP: o->show_rsp = true; break;
		case O_MAXF:
			if (parse_uint(optarg, 1000000, &v) || !v) {
				fprintf(stderr, "stacksnap show: --max-frames: '%s' is not a number (1..1000000)\n", optarg);
				return EXIT_USAGE;
			}
			o->max_frames = (unsigned)v;
			break;
		case O_SCAN: o->stack_scan = true; break;
		case O_NOCACHE: o->no_cache = true; break;
		case O_DDIR: o->debug_dirs = optarg; break;
		case O_NODI: o->no_debuginfod = true; break;
		case O_COUNT: o->count = true; break;
		case O_FOLDED: o->folded = true; break;
		case O_GOROUTINES: o->goroutines_only = true; break;
		case O_THREADS: o->threads_only = true; break;
		case O_RUNTIME:
			if ((o->runtime = options_parse_runtime(optarg)) < 0) {
				fprintf(stderr, "stacksnap show: --runtime: '%s' is not merged, only or off\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_NOFOLD: o->no_fold = true; break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(help_text("show"), stdout); return -1;
		default:
			fputs("Try 'stacksnap show --help'.\n", stderr);
			return EXIT_USAGE;
		}
	}
	if (o->goroutines_only && o->threads_only) {
		fputs("stacksnap: give --goroutines or --threads, not both\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->goroutines_only && o->nonstop) {
		fputs("stacksnap: goroutines are read with every thread "
		      "stopped: --goroutines does not go with --nonstop\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (o->out.ctf && !o->out.output) {
		fputs("stacksnap show: --format ctf writes a directory: give -o DIR\n", stderr);
		return EXIT_USAGE;
	}
	if (o->out.output && !o->out.ctf)
		o->out.format_set = true; /* -o alone: folded stacks */
	if (o->out.ctf && (o->json || o->count || o->folded || o->out.format_set)) {
		fputs("stacksnap show: give --format ctf alone, without --json, "
		      "--count or --folded\n", stderr);
		return EXIT_USAGE;
	}
	if (o->out.format_set && o->json) {
		fputs("stacksnap show: give --json or -o/--format, not both\n", stderr);
		return EXIT_USAGE;
	}
	if (o->json + o->count + o->folded + o->out.format_set > 1) {
		fprintf(stderr, "stacksnap show: give only one of --json, --count, "
			"--folded and -o/--format\n");
		return EXIT_USAGE;
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind == argc ? "stacksnap show: which file? give a snapshot file\n"
					       : "stacksnap show: one file only\n");
		fputs("Try 'stacksnap show --help'.\n", stderr);
		return EXIT_USAGE;
	}
	*file = argv[optind];
	return 0;
}
