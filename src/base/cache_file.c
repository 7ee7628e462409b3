/* cache_file.c - opening and writing files of the cache directory under
 * the rules that keep it from being used against its user. */
#define _GNU_SOURCE
#include "base/cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stacksnap.h"

/* Checks the directory at path (already existing) is ours and private. */
static int own_dir(const char *path, const struct log_sink *log)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		log_info(log, "%s: cache directory %s; not used (remove it, or "
			 "set STACKSNAP_CACHE_DIR to a directory of yours)", path,
			 !S_ISDIR(st.st_mode) ? "is not a directory"
					      : "is not owned by you");
		return -EPERM;
	}
	if ((st.st_mode & 077) && chmod(path, 0700))
		return -errno;
	return 0;
}

int cache_dir__prepare(const char *dir, const struct log_sink *log)
{
	char *p = strdup(dir);
	int err = 0;

	if (!p)
		return -ENOMEM;
	/* Parents the user names may be shared (/tmp): only what we create
	 * is made 0700; the directory itself must be ours. */
	for (char *s = p + 1; *s && !err; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			err = -errno;
		*s = '/';
	}
	if (!err && mkdir(p, 0700) && errno != EEXIST)
		err = -errno;
	if (!err)
		err = own_dir(p, log);
	else
		log_info(log, "%s: cannot create the cache directory: %s", dir,
			 strerror(-err));
	free(p);
	return err;
}

int cache_file__open(const char *path, const struct log_sink *log,
		     const char **why)
{
	const char *reason = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (why)
		*why = NULL;
	if (fd < 0) {
		if (errno == ELOOP)
			reason = "is a symbolic link";
		else
			return -errno;
	} else if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	} else if (!S_ISREG(st.st_mode)) {
		reason = "is not a regular file";
	} else if (st.st_uid != geteuid()) {
		reason = "is not owned by you";
	} else if (st.st_mode & 022) {
		reason = "is writable by others";
	}
	if (reason) {
		if (fd >= 0)
			close(fd);
		log_info(log, "%s: cache file %s; ignored", path, reason);
		if (why)
			*why = reason;
		return -EPERM;
	}
	return fd;
}

int cache_file__map(const char *path, const char *what,
		    const struct log_sink *log, void **map, size_t *len)
{
	struct stat st;
	int fd = cache_file__open(path, log, NULL);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		log_info(log, "%s: empty %s file; ignored", path, what);
		return -EINVAL;
	}
	*map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (*map == MAP_FAILED)
		return -errno;
	*len = (size_t)st.st_size;
	return 0;
}

int cache_file__write(const char *path, const void *data, size_t len,
		      const struct log_sink *log)
{
	static unsigned seq;
	char *dir = strdup(path), *slash, *tmp = NULL;
	const char *b = data;
	int fd = -1, err = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		err = cache_dir__prepare(dir, log);
	}
	if (!err && asprintf(&tmp, "%s.tmp.%d.%u", path, (int)getpid(), seq++) < 0) {
		tmp = NULL;
		err = -ENOMEM;
	}
	if (!err && (fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		err = -errno;
	for (size_t done = 0; !err && done < len;) {
		ssize_t w = write(fd, b + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			err = w < 0 ? -errno : -EIO;
		else
			done += (size_t)w;
	}
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		if (fd >= 0)
			unlink(tmp);
		log_info(log, "%s: cannot write the cache file: %s", path,
			 strerror(-err));
	}
	free(tmp);
	free(dir);
	return err;
}

int stacksnap_cache__open(const char *path, const char **why)
{
	int fd = cache_file__open(path, NULL, why);

	return fd < 0 ? fail(fd) : fd;
}

int stacksnap_cache__write(const char *path, const void *data, size_t len)
{
	int err = cache_file__write(path, data, len, NULL);

	return err ? fail(err) : 0;
}
