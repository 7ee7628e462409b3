/* profile_out.h - the profile outputs every source shares (profile,
 * watch, trace --count/--folded, show and the live dump): the -o/--format/
 * --colors options, the aggregated stacks written in the chosen format,
 * and walked stacks added to them. */
#ifndef STACKSNAP_TOOL_PROFILE_OUT_H
#define STACKSNAP_TOOL_PROFILE_OUT_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "stacksnap.h"

/* getopt values of the long-only options (above every command's own). */
enum { PROFILE_OUT_FORMAT = 0x5f00, PROFILE_OUT_COLORS };

/* The options of tools/stacksnap/help/output.inc, for a longopts table
 * (-o is the command's short option "o:"). */
#define PROFILE_OUT_LONGOPTS						\
	{ "output", required_argument, NULL, 'o' },			\
	{ "format", required_argument, NULL, PROFILE_OUT_FORMAT },	\
	{ "colors", required_argument, NULL, PROFILE_OUT_COLORS }

/* What to write. Invariant: format_set when --format was given (a
 * command whose default output is not a profile writes one only then). */
struct profile_out {
	const char *output;	/* NULL: standard output */
	enum stacksnap_stacks_format format;
	enum stacksnap_svg_colors colors;
	bool format_set;
	/* -o's name ended in .svg, .pb.gz, .json, .folded...: format is
	 * the one it says unless --format gave one (format_set). */
	bool format_by_name;
	/* --format ctf: a CTF trace of events into the directory -o names
	 * (format_set stays false). Taken only where ctf_allowed (trace and
	 * show, which set it before parsing). */
	bool ctf, ctf_allowed;
};

/* Takes option c (with its argument) when it is one of the output
 * options. Returns 1 when c is another option, 0 when taken, EXIT_USAGE
 * * after saying what is wrong ("PREFIX: ...", e.g. "stacksnap watch"). */
int profile_out_option(struct profile_out *po, const char *prefix, int c,
		       const char *arg);

/* Opens po's file (standard output without -o), before the work, so a
 * wrong path is said at once. NULL after saying why. */
FILE *profile_out_open(const struct profile_out *po, const char *prefix);
/* Closes f, opened by profile_out_open, when the run ends without writing
 * to it (the command could not run, the target was gone): a regular file
 * still empty is removed, so that a failed run leaves no empty profile
 * behind. */
void profile_out_abandon(const struct profile_out *po, FILE *f);
/* Writes st to f (NULL: opens it now) in po's format, and closes f
 * unless it is standard output. Returns EXIT_OK, or EXIT_ERROR after
 * saying why. */
int profile_out_write(const struct profile_out *po, const char *prefix, FILE *f,
		      const struct stacksnap_stacks *st, const char *title);

/* Adds one walked and symbolized thread (print.h's thread_result) with
 * weight count: its frames, a "[truncated]" frame above the outermost
 * when the walk did not reach the bottom, and root (the thread's or
 * event's name) as the root. as gives the frames' mappings (pprof). */
struct thread_result;
int profile_out_add_thread(struct stacksnap_stacks *st,
			   struct stacksnap_addrspace *as, const char *root,
			   const struct thread_result *r, uint64_t count);
/* The same, and *id names the stack (stacksnap_stacks__add_again). */
int profile_out_add_thread_id(struct stacksnap_stacks *st,
			      struct stacksnap_addrspace *as, const char *root,
			      const struct thread_result *r, uint64_t count,
			      uint64_t *id);

/* A snapshot (live dump, saved file, core) as a profile: one sample per
 * thread of res[0..n) (symbolized), its name as the root, and, when
 * ngoroutines, one per goroutine of goroutines[] as profile_go_add
 * (profile_go.h) counts them (goroutines alone: Go's sample type
 * goroutine/count); written as po says. Returns EXIT_OK or EXIT_ERROR after saying why. */
int profile_out_threads(const struct profile_out *po, const char *prefix,
			const struct stacksnap_goroutine *goroutines,
			size_t ngoroutines,
			struct stacksnap_addrspace *as,
			const struct thread_result *res, size_t n, const char *title);

/* The folded lines of st most frequent first (ties by text): v[0..n),
 * each text and count; free with profile_out_top_free. */
struct profile_top {
	struct { char *text; uint64_t count; } *v;
	size_t n, cap;
};
int profile_out_top(const struct stacksnap_stacks *st, struct profile_top *top);
void profile_out_top_free(struct profile_top *top);

#endif
