/* maps_line.h - the one parser of /proc/PID/maps lines ("start-end perms
 * offset major:minor inode [path]"): live address spaces, the capture's
 * writable ranges, the walker, the trace's code ranges and the saved maps
 * files of `stacksnap symbolize` all read that format through it. */
#ifndef SS_BASE_MAPS_LINE_H
#define SS_BASE_MAPS_LINE_H

#include <stdint.h>
#include <sys/mman.h> /* PROT_*, which maps_line.prot holds */

/* One parsed line. Invariant: start < end. */
struct maps_line {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint64_t inode;
	unsigned dev_major, dev_minor;
	uint32_t prot;		/* PROT_READ/WRITE/EXEC as the perms say */
	const char *path;	/* into the line (NUL-terminated there); NULL
				   when the line names none */
};

/* Parses line in place: a trailing newline is cut, and the path (what
 * follows the inode, leading blanks skipped) is left NUL-terminated in the
 * line. Returns 0, or -EINVAL for text that is not such a line (a fragment
 * of a line longer than the caller's buffer is one). */
int maps_line__parse(char *line, struct maps_line *out);

#endif
