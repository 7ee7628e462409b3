/* fuzz_waits.c - libFuzzer target for what the wait graph reads from
 * outside: the /proc lines (a thread's system call, /proc/locks) and the
 * cycle search over any edges (stacksnap_wait_cycles): nothing read past
 * the input, every cycle made of the edges' own nodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stacksnap.h"
#include "waits/proc_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	struct syscall_line sl;
	struct lock_line ll;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (syscall_line__parse(line, &sl) == 0 && sl.nr < 0)
		abort();
	if (lock_line__parse(line, &ll) == 0 &&
	    (strnlen(ll.type, sizeof(ll.type)) == sizeof(ll.type) ||
	     strnlen(ll.rw, sizeof(ll.rw)) == sizeof(ll.rw)))
		abort();
	free(line);

	/* The bytes as edges of small pids and tids (so that they meet). */
	size_t n = size / 4;
	struct stacksnap_wait_edge *e = calloc(n ? n : 1, sizeof(*e));
	struct stacksnap_wait_owner *m;
	size_t *starts, nc;

	if (!e)
		return 0;
	for (size_t i = 0; i < n; i++) {
		e[i].from.pid = data[4 * i] & 3;
		e[i].from.tid = data[4 * i + 1] & 15;
		e[i].to.pid = data[4 * i + 2] & 3;
		e[i].to.tid = data[4 * i + 3] & 15;
	}
	if (stacksnap_wait_cycles(e, n, &m, &starts, &nc) == 0) {
		for (size_t c = 0; c < nc; c++) {
			if (starts[c + 1] <= starts[c])
				abort();
			for (size_t k = starts[c]; k < starts[c + 1]; k++) {
				bool found = false;

				if (!m[k].tid)
					abort(); /* process nodes are left out */
				for (size_t i = 0; i < n && !found; i++)
					found = e[i].from.pid == m[k].pid && e[i].from.tid == m[k].tid;
				if (!found)
					abort();
			}
		}
		free(m);
		free(starts);
	}
	free(e);
	return 0;
}
