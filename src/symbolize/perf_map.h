/* perf_map.h - JIT symbol files in perf's map format
 * (/tmp/perf-<pid>.map: "START SIZE name" lines, hex, written by V8's
 * --perf-basic-prof, HotSpot's `jcmd PID Compiler.perfmap`, LuaJIT, ...):
 * parsed once into an array sorted by start and looked up by binary search;
 * re-read from where the last read stopped when the file grows. */
#ifndef SS_SYMBOLIZE_PERF_MAP_H
#define SS_SYMBOLIZE_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"

/* One named range of JIT code. Invariant: start < end; name is
 * NUL-terminated and lives as long as the map (refreshes included). */
struct perf_map_entry {
	uint64_t start, end;	/* [start, end) */
	const char *name;
	uint32_t seq;		/* line number in the file: of two entries
				   covering one pc, the later line wins */
};

struct perf_map;

/* Parses len bytes of map text (any bytes: lines that are not
 * "START SIZE name" are skipped and counted). The text is copied. Returns
 * 0 and *out, or -ENOMEM. */
int perf_map__from_text(const char *text, size_t len, struct perf_map **out);

/* Reads the map file at path (opened as given: callers pass
 * /proc/PID/root/... for another process). Returns 0 and *out, -ENOENT
 * when there is no such file, or another -errno. */
int perf_map__open_path(const char *path, const struct log_sink *log,
			struct perf_map **out);

/* The map of live process pid: /tmp/perf-<nspid>.map seen through
 * /proc/PID/root, where nspid is pid in the process's own pid namespace
 * (so a process in a container is found with its container's /tmp).
 * Returns 0 and *out, -ENOENT when the process wrote no map, or -errno. */
int perf_map__open_pid(pid_t pid, const struct log_sink *log,
		       struct perf_map **out);

/* Reads the lines appended since the last read (the writer appends as it
 * compiles); a file that shrank or was replaced is read again whole.
 * Returns the number of entries added (0: the file did not grow), or
 * -errno (the entries already read stay). */
int perf_map__refresh(struct perf_map *pm);

/* The entry covering pc, or NULL. Of overlapping entries (code freed and
 * its space reused) the one from the later line wins, as in perf. */
const struct perf_map_entry *perf_map__lookup(const struct perf_map *pm,
					      uint64_t pc);

/* The entries, sorted by start, one per start. */
const struct perf_map_entry *perf_map__entries(const struct perf_map *pm,
					       size_t *n);
/* Lines skipped as not "START SIZE name" (or of size 0), over every read. */
size_t perf_map__bad_lines(const struct perf_map *pm);
/* The file read (NULL for perf_map__from_text). */
const char *perf_map__path(const struct perf_map *pm);

void perf_map__free(struct perf_map *pm);

/* pid in its own (innermost) pid namespace: the last field of NSpid: in
 * /proc/PID/status; pid itself on kernels without that line. Returns 0
 * and *nspid, or -errno (-ESRCH: no such process). */
int proc_ns_pid(pid_t pid, pid_t *nspid);

#endif
