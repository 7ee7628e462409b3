/* cache_file.h - the rules that keep a cache directory from being used
 * against its user: the directory is the user's and 0700, a file is read
 * only when it is a regular file the user owns that nobody else may write,
 * and files are written whole under a temporary name, then renamed. */
#ifndef SS_BASE_CACHE_FILE_H
#define SS_BASE_CACHE_FILE_H

#include <stddef.h>

#include "base/log.h"

/* Creates dir and its missing parents with mode 0700. The directory must
 * then be owned by the user (a 0755 one of ours, from older versions, is
 * made 0700). Returns 0, or -errno (-EPERM: owned by someone else) with an
 * info message naming the problem. */
int cache_dir__prepare(const char *dir, const struct log_sink *log);

/* Opens a cache file read-only, or says why not: -ENOENT (absent, no
 * message), -EPERM (a symbolic link, not a regular file, not owned by the
 * user, or writable by group or others: ignored, with an info message).
 * Returns the file descriptor. why (may be NULL) gets the reason. */
int cache_file__open(const char *path, const struct log_sink *log,
		     const char **why);

/* cache_file__open, then the whole file mapped read-only (private) into
 * *map, *len. what names the kind of file in messages. -ENOENT, -EPERM as
 * open; -EINVAL: empty (logged at info level). */
int cache_file__map(const char *path, const char *what,
		    const struct log_sink *log, void **map, size_t *len);

/* Writes len bytes to path atomically: a temporary file of this process
 * in the same directory (created exclusively, 0600), then rename(2).
 * Concurrent writers each rename a whole file; readers see a whole file
 * or none. Creates the directories on the way (0700). Returns 0 or -errno
 * (logged at info level: a cache that cannot be written only costs the
 * next run time). */
int cache_file__write(const char *path, const void *data, size_t len,
		      const struct log_sink *log);

#endif
