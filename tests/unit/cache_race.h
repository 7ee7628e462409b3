/* cache_race.h - cache files written by racing processes while this one
 * reads them: what test_table_cache and test_sym_cache both check. */
#ifndef SS_TEST_CACHE_RACE_H
#define SS_TEST_CACHE_RACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cache_file.h"
#include "harness.h"

/* nkids processes write bytes to path 30 times each with
 * cache_file__write (the first runs first() instead, if given: a real
 * writer among the copies; it exits non-zero on failure) while this one
 * reads the file 200 times. Records a failed check for a writer that
 * failed and for every read that whole() rejects (a file that is not
 * there is fine). */
static inline void harness_race_cache_writers(const char *path, const uint8_t *bytes,
					      size_t len, int nkids, int (*first)(void),
					      bool (*whole)(const uint8_t *, size_t))
{
	pid_t kids[16];
	int bad = 0;

	if (nkids > 16)
		nkids = 16;
	unlink(path);
	for (int k = 0; k < nkids; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			if (k == 0 && first)
				_exit(first());
			for (int i = 0; i < 30; i++)
				if (cache_file__write(path, bytes, len, NULL))
					_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < 200; i++) {
		size_t n;
		uint8_t *b = harness_slurp(path, &n);

		if (b && !whole(b, n))
			bad++;
		free(b);
	}
	for (int k = 0; k < nkids; k++) {
		int status = 0;

		waitpid(kids[k], &status, 0);
		CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "writer %d failed", k);
	}
	CHECKF(bad == 0, "%d reads saw a partial file", bad);
}

#endif
