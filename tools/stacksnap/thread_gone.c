/* thread_gone.c - threads that exited while the capture ran: told from
 * threads that exist and were not captured, and left out of the dump. */
#include <stdio.h>
#include <string.h>

#include "thread_gone.h"

bool thread_gone(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (!(f = fopen(path, "re")))
		return true;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	return p && (p = strrchr(buf, ')')) && (p[2] == 'Z' || p[2] == 'X');
}

size_t drop_gone_threads(pid_t pid, struct thread_result *res, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_thread *th = res[i].thread;

		if (th && th->error == STACKSNAP_THREAD_GONE && !res[i].frames &&
		    thread_gone(pid, th->tid))
			continue;
		res[k++] = res[i];
	}
	return k;
}
