/* options.h - the stacksnap command line, parsed. */
#ifndef STACKSNAP_TOOL_OPTIONS_H
#define STACKSNAP_TOOL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile_out.h"
#include "stacksnap.h"

#define MAX_TIDS 256

/* Frames walked per thread by default: every frame of any real stack
 * (a stack copy bounds a walk anyway: each frame takes 8 bytes at least). */
#define DEFAULT_MAX_FRAMES 1000000u

/* Everything the command line said. Invariant after options_parse
 * succeeded: pid > 0 and ntids <= MAX_TIDS. */
struct options {
	pid_t pid;
	pid_t tids[MAX_TIDS];
	size_t ntids;
	size_t stack_size;	/* 0: library default */
	unsigned stop_timeout_ms;
	unsigned max_frames;	/* 0: DEFAULT_MAX_FRAMES */
	bool proc_mem, show_rsp, lines, no_demangle, raw, json, stats;
	bool verbose, stack_scan;
	bool no_fold;		/* --no-fold: every frame of a recursion */
	bool no_cache;		/* --no-cache */
	bool ptrace;		/* unwind live memory, threads held stopped */
	bool ignore_deleted;	/* skip mappings of deleted files */
	bool freeze_all;	/* --freeze-all: stop every thread */
	bool no_realtime;	/* --no-realtime: no SCHED_FIFO window */
	bool nonstop;		/* --nonstop: the non-stop path, whatever the
				   thread count */
	/* A Go program's goroutines are printed after the threads;
	 * --goroutines prints only them, --threads only the threads. */
	bool goroutines_only, threads_only;
	int runtime;		/* --runtime: enum runtime_mode */
	/* Saved captures (docs/snapshot-format.md). */
	const char *save_path;	/* --save FILE: write a snapshot file */
	bool quiet;		/* -q: with --save, print no stacks */
	int encoding;		/* --encoding: enum stacksnap_stack_encoding */
	const char *core_path;	/* --core FILE: a core dump instead of a PID */
	const char *exe_path;	/* --exe PATH: its executable */
	const char *debug_dirs;	/* show --debug-dir: NULL for the default */
	bool no_debuginfod;	/* show --no-debuginfod */
	bool count, folded;	/* show --count/--folded (events files) */
	/* -o/--format: the stacks as a profile (a sample per thread). */
	struct profile_out out;
	/* --follow: the processes waited on are dumped too (dump_follow.c);
	 * a followed dump writes its waits to waits_fd (0: none) for the
	 * process pid_override (0: the PID given). */
	bool follow;
	int waits_fd;
	pid_t pid_override;
	bool no_waits;		/* --no-waits: who waits for whom not read */
	bool no_group;		/* --no-group: every thread printed, not one
				   block per distinct stack */
	/* Several processes (dump_multi.c): every PID operand and -p, in
	 * order (pids[0] == pid), and --pgrep's pattern. */
	pid_t *pids;
	size_t npids;
	const char *pgrep;
};

/* --runtime: how language-runtime (Python) frames are shown. */
enum runtime_mode {
	RUNTIME_MERGED = 0,	/* replace the eval loop's native frames */
	RUNTIME_ONLY,		/* the runtime frames alone */
	RUNTIME_OFF,		/* not read at all */
};

/* Exit codes, also listed in --help and the README. */
enum exit_code {
	EXIT_OK = 0,
	EXIT_USAGE = 1,
	EXIT_NO_PROCESS = 2,
	EXIT_NOT_PERMITTED = 3,
	EXIT_TRACED = 4,
	EXIT_ZOMBIE = 5,
	EXIT_KERNEL_THREAD = 6,
	EXIT_EXITED = 7,	/* the target exited during the capture */
	EXIT_PARTIAL = 8,	/* some threads could not be captured */
	EXIT_ERROR = 9,		/* anything else */
	EXIT_CANNOT_RUN = 10,	/* the command after -- could not be started */
	/* A signal (SIGINT, SIGTERM, SIGHUP) ended the run: 128 + its number,
	 * after every thread was detached. */
	EXIT_SIGNAL_BASE = 128,
};

/* The library's messages on stderr: errors always, the rest with
 * cli_verbose (the -v of the command that runs). A stacksnap_log_fn. */
extern bool cli_verbose;
/* Warnings printed without -v (trace, profile: a runtime whose frames
 * cannot be read, mmap records the kernel dropped: frames go missing). */
extern bool cli_warnings;
/* What every message starts with: "stacksnap", or "stacksnap SUBCOMMAND"
 * (set by main before the subcommand runs; getopt's own messages use it
 * too). Messages read "NAME: what: why (fix)". */
extern const char *cli_name;
/* After a usage error was said: one line pointing at --help. Returns
 * EXIT_USAGE. */
int cli_usage_error(void);
void cli_log(enum stacksnap_log_level level, const char *msg, void *user);
/* The last error cli_log printed ("" before any): a caller that would
 * say the same does not say it twice. */
extern char cli_last_error[256];

/* Closes f, an output the command wrote to path (stdout is flushed, not
 * closed; path NULL: "standard output"). A write that failed (ENOSPC, EIO)
 * is said as "NAME: writing PATH: why" and makes rc EXIT_ERROR when it
 * was EXIT_OK or EXIT_PARTIAL: output not written is the run's failure.
 * Returns rc. */
int cli_close_output(FILE *f, const char *path, int rc);
/* --json -o FILE (the dump, show): standard output reopened on FILE, now,
 * before the work, so a wrong path is said at once; cli_close_output then
 * names FILE. Returns 0 (also without them) or EXIT_ERROR (said). */
int cli_json_to_file(const struct options *o);
/* FILE when standard output is -o's (cli_json_to_file), else NULL. */
extern const char *cli_stdout_path;

/* The debug-file cache directory: $STACKSNAP_CACHE_DIR, else
 * $XDG_CACHE_HOME/stacksnap, else $HOME/.cache/stacksnap; NULL when none
 * can be named. The string is static. */
const char *default_cache_dir(void);
/* Writes the caches ctx noted (stacksnap_ctx__defer_cache_writes) from a
 * detached child, after flushing stdout and stderr. */
void cli_write_caches_detached(struct stacksnap_ctx *ctx);
/* What the context's tables and symbols came from (--stats). */
void cli_print_table_stats(FILE *f, const char *who, const struct stacksnap_ctx_stats *c);

/* --encoding's names (pointers, exact, full) as enum
 * stacksnap_stack_encoding; -1 for another name. */
int options_parse_encoding(const char *s);
/* --runtime's argument (merged, only, off): enum runtime_mode, or -1. Every
 * command taking --runtime (the dump, show, profile, trace) parses it here. */
int options_parse_runtime(const char *arg);

/* The exit status for a capture's or an attach's errno: no such process,
 * not permitted, traced, zombie, kernel thread, or other error. */
int exit_code_for_errno(int err);

/* Whether pid (a thread id with is_tid) can be a target: said as
 * "stacksnap SUB: pid N: why" and the exit code returned when it is gone
 * (EXIT_NO_PROCESS), a zombie (EXIT_ZOMBIE) or a kernel thread
 * (EXIT_KERNEL_THREAD); 0 otherwise (permission is the capture's to
 * find). The same words as the dump's check. */
int cli_check_target(pid_t pid, bool is_tid);

/* pid is a thread of another process (its /proc/PID/status Tgid is not
 * pid; /proc shows threads as processes): said as "SUB: pid N: no such
 * process (N is a thread of pid M: give M; ...)" and EXIT_NO_PROCESS
 * returned; 0 otherwise. Before: the process was captured and reported
 * under the thread's id, and trace and profile followed nothing. */
int cli_check_not_thread(pid_t pid);

/* How stacks are printed: the options the dump, show and trace share,
 * with one meaning and one parser (getopt's codes; --rsp is the old
 * spelling of --show-rsp, kept for trace's scripts). */
enum print_opt {
	PRINT_OPT_LINES = 0x5e00, PRINT_OPT_NODEM, PRINT_OPT_RSP, PRINT_OPT_MAXF,
	PRINT_OPT_NOFOLD, PRINT_OPT_RUNTIME,
};
#define PRINT_LONGOPTS							\
	{ "lines", no_argument, NULL, PRINT_OPT_LINES },		\
	{ "no-demangle", no_argument, NULL, PRINT_OPT_NODEM },		\
	{ "show-rsp", no_argument, NULL, PRINT_OPT_RSP },		\
	{ "rsp", no_argument, NULL, PRINT_OPT_RSP },			\
	{ "max-frames", required_argument, NULL, PRINT_OPT_MAXF },	\
	{ "no-fold", no_argument, NULL, PRINT_OPT_NOFOLD },		\
	{ "runtime", required_argument, NULL, PRINT_OPT_RUNTIME }
/* Option c (its argument arg) into o when it is one of PRINT_LONGOPTS
 * (--max-frames at most max_frames). Returns 0 when parsed, 1 when c is
 * not one of them, EXIT_USAGE after saying what is wrong. */
int print_option(struct options *o, int c, const char *arg, unsigned long max_frames);

/* Parses argv; on a usage error prints a message to stderr and returns
 * EXIT_USAGE; for --help/--version prints and returns -1 (exit 0). */
int options_parse(struct options *o, int argc, char **argv);

/* The same for `stacksnap show [OPTIONS] FILE` (argv[0] is "show"); the
 * file named is returned in *file. */
int options_parse_show(struct options *o, int argc, char **argv,
		       const char **file);
/* Number parsers of the command line, shared by the subcommands: a size
 * with an optional k/m/g suffix, and a decimal number up to max. Return 0,
 * or -1 for text that is not one. */
int parse_size(const char *s, size_t *out);
/* Every time option of every subcommand: a number with a unit ns, us,
 * ms, s or m (decimals allowed: 0.5, 1.5s); without a unit, seconds
 * (parse_duration) or unit_ns (the -ms options). Returns 0, or -EINVAL
 * for text that is not a positive time of at most 30 days. */
#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull
int parse_duration(const char *s, uint64_t *ns);
int parse_duration_unit(const char *s, uint64_t unit_ns, uint64_t *ns);
/* The text a usage error shows for a bad time or size. */
#define DURATION_HELP "a time such as 0.5, 2s, 300ms, 1m (units ns us ms s m; no unit: seconds)"
#define SIZE_HELP "a size such as 65536, 64k, 1m (bytes, or a k/m/g suffix)"
int parse_uint(const char *s, unsigned long max, unsigned long *out);

#endif
