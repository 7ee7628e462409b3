/* jitdump.h - perf's jitdump files (jit-<pid>.dump, written by V8's
 * --perf-prof, the JVM's perf agents, ...; format: the Linux tree's
 * tools/perf/Documentation/jitdump-specification.txt): code loads and
 * moves for names, debug-info records for file:line, read into code ranges
 * sorted by start. A live process is found by its mapping of the file, as
 * perf finds it (the writer maps it executable as a marker). */
#ifndef SS_SYMBOLIZE_JITDUMP_H
#define SS_SYMBOLIZE_JITDUMP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"

#define JITDUMP_MAGIC 0x4A695444u /* "JiTD" read as a native u32 */
#define JITDUMP_VERSION 1u
#define JITDUMP_HEADER_SIZE 40u
#define JITDUMP_RECORD_HEADER_SIZE 16u

/* Record ids. */
enum jitdump_record_id {
	JIT_CODE_LOAD = 0,
	JIT_CODE_MOVE = 1,
	JIT_CODE_DEBUG_INFO = 2,
	JIT_CODE_CLOSE = 3,
	JIT_CODE_UNWINDING_INFO = 4,
};

/* One source position: code from addr up to the next entry's addr came
 * from file:line. */
struct jitdump_line {
	uint64_t addr;
	const char *file;	/* never NULL */
	uint32_t line;
};

/* One loaded (or moved) piece of code. Invariant: start < end; name and
 * lines[] live as long as the dump; lines sorted by addr, all inside
 * [start, end). */
struct jitdump_code {
	uint64_t start, end;	/* [start, end) */
	const char *name;
	uint64_t code_index;	/* the writer's id, which moves refer to */
	uint32_t seq;		/* record order: the later load wins */
	uint32_t nlines;
	const struct jitdump_line *lines;
};

/* What the header says. */
struct jitdump_header {
	uint32_t version;
	uint32_t elf_mach;
	uint32_t pid;		/* the writer's pid, in its own namespace */
	uint64_t timestamp;
	uint64_t flags;
	int byte_swapped;	/* written on a machine of the other order */
};

struct jitdump;

/* Parses len bytes of a jitdump file (copied). Returns 0 and *out,
 * -EINVAL for bytes that are not a jitdump file (bad magic, header size),
 * -EPROTONOSUPPORT for a version after 1, or -ENOMEM; a record cut short
 * or malformed ends the records read (as a file still being written does;
 * logged). */
int jitdump__from_bytes(const void *data, size_t len,
			const struct log_sink *log, struct jitdump **out);

/* Reads the file at path. Returns 0 and *out, or -errno as above. */
int jitdump__open_path(const char *path, const struct log_sink *log,
		       struct jitdump **out);

/* The jitdump file live process pid has mapped (a mapping of a file named
 * jit-<N>.dump), read through /proc/PID/root, else through
 * /proc/PID/map_files. Returns 0 and *out, -ENOENT when the process maps
 * none, or -errno. */
int jitdump__open_pid(pid_t pid, const struct log_sink *log,
		      struct jitdump **out);

/* Reads the records appended since the last read. Returns the number of
 * code ranges added, or -errno (what was read stays). */
int jitdump__refresh(struct jitdump *jd);

/* The code covering pc (NULL: none) and, when the dump has debug info for
 * it, the source position of pc (*line NULL when not). */
const struct jitdump_code *jitdump__lookup(const struct jitdump *jd,
					   uint64_t pc,
					   const struct jitdump_line **line);

const struct jitdump_code *jitdump__codes(const struct jitdump *jd,
					  size_t *n);
const struct jitdump_header *jitdump__header(const struct jitdump *jd);
const char *jitdump__path(const struct jitdump *jd);

void jitdump__free(struct jitdump *jd);

#endif
