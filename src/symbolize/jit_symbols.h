/* jit_symbols.h - the JIT symbol files of one live process (its perf map
 * and its jitdump file) as one symbol source for pcs in its anonymous
 * executable memory: opened at the first such pc, re-read when a pc is not
 * covered yet (the files grow as the process compiles). */
#ifndef SS_SYMBOLIZE_JIT_SYMBOLS_H
#define SS_SYMBOLIZE_JIT_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"

struct jit_symbols;

/* What a JIT symbol file says about a pc. Strings live as long as the
 * jit_symbols. */
struct jit_symbol {
	const char *name;
	uint64_t start, end;	/* the named code */
	const char *file;	/* from a jitdump's debug info; NULL if none */
	unsigned line;
	const char *source;	/* the symbol file that named it, as the
				   process (and perf) names it:
				   "/tmp/perf-PID.map", a jitdump's path */
};

/* The symbol source of live process pid; nothing is read yet. NULL and
 * errno on -ENOMEM. log may be NULL. */
struct jit_symbols *jit_symbols__new(pid_t pid, const struct log_sink *log);

/* Names pc (in the process's anonymous executable memory). The first
 * call opens the files; a pc neither covers re-reads them (at most every
 * JIT_SYMBOLS_REREAD_MS). Returns true and *out, or false. */
bool jit_symbols__lookup(struct jit_symbols *js, uint64_t pc,
			 struct jit_symbol *out);

/* The source of a process seen only in recorded events (perf.data),
 * perhaps gone: /tmp/perf-<pid>.map of our own /tmp, as `perf script`
 * reads it. NULL and errno on -ENOMEM. */
struct jit_symbols *jit_symbols__new_recorded(pid_t pid,
					      const struct log_sink *log);

/* A source of names read from a saved snapshot (never re-read): takes
 * pm. NULL and errno on -ENOMEM (pm freed). */
struct perf_map;
struct jit_symbols *jit_symbols__from_map(struct perf_map *pm);

void jit_symbols__free(struct jit_symbols *js);

/* Files are re-read for an uncovered pc at most this often: a profile
 * meets the same unnamed code (a stub no map names) many times a second. */
#define JIT_SYMBOLS_REREAD_MS 200

#endif
