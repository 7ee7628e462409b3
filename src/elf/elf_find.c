/* elf_find.c - finding an ELF file by build-id when it is not where a
 * process had it (a saved capture read on another host): the debug
 * directories' .build-id trees, and debuginfod servers for executables
 * and separate debug files. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "elf/elf_image.h"

/* libdebuginfod is opened when first asked for, not linked: it pulls in
 * libcurl, GnuTLS, Kerberos and LDAP (28 more libraries), whose loading
 * and relocation cost every run of the CLI ~12 ms of CPU at start-up, for
 * a feature few runs use. */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_executable)(debuginfod_client *, const unsigned char *,
			       int, char **);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int,
			      char **);
} dfd;
static pthread_once_t dfd_once = PTHREAD_ONCE_INIT;

static void dfd_load(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (!h)
		return;
	dfd.end = (void (*)(debuginfod_client *))dlsym(h, "debuginfod_end");
	dfd.find_executable = (int (*)(debuginfod_client *, const unsigned char *,
				       int, char **))dlsym(h, "debuginfod_find_executable");
	dfd.find_debuginfo = (int (*)(debuginfod_client *, const unsigned char *,
				      int, char **))dlsym(h, "debuginfod_find_debuginfo");
	if (dfd.end && dfd.find_executable && dfd.find_debuginfo)
		dfd.begin = (debuginfod_client *(*)(void))dlsym(h, "debuginfod_begin");
}

/* A debuginfod client, or NULL (with a message) when the library is not
 * installed or the client cannot start. */
static debuginfod_client *dfd_begin(const struct log_sink *log)
{
	pthread_once(&dfd_once, dfd_load);
	if (!dfd.begin) {
		log_info(log, "debuginfod: libdebuginfod.so.1 not loadable (install "
			 "libdebuginfod1): %s", dlerror() ?: "symbols missing");
		return NULL;
	}
	return dfd.begin();
}

static void hex(const uint8_t *id, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * len] = 0;
}

/* Is the regular file at path an ELF image with build-id id? Only regular
 * files are opened: a hostile path must not block on a FIFO or a device. */
static bool has_build_id(const char *path, const uint8_t *id, size_t len,
			 const struct log_sink *log)
{
	struct elf_image *img;
	struct stat st;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	if (!len)
		return true;
	if (elf_image__open(path, log, &img))
		return false;
	ok = img->build_id_len == len && !memcmp(img->build_id, id, len);
	elf_image__free(img);
	return ok;
}

char *elf_find_by_build_id(const char *path, const uint8_t *id, size_t len,
			   const char *const *dirs, bool debuginfod,
			   const struct log_sink *log)
{
	char buf[4096], idhex[2 * ELF_BUILD_ID_MAX + 1];
	char *found = NULL;

	if (path && has_build_id(path, id, len, log))
		return strdup(path);
	if (!len || len > ELF_BUILD_ID_MAX)
		return NULL;
	hex(id, len, idhex);
	for (size_t i = 0; dirs && dirs[i]; i++) {
		/* Fedora's layout: the executable beside its .debug file. */
		snprintf(buf, sizeof(buf), "%s/.build-id/%.2s/%s", dirs[i],
			 idhex, idhex + 2);
		if (has_build_id(buf, id, len, log))
			return strdup(buf);
	}
	if (!debuginfod)
		return NULL;
	debuginfod_client *c = dfd_begin(log);
	if (!c)
		return NULL;
	int fd = dfd.find_executable(c, id, (int)len, &found);
	dfd.end(c);
	if (fd < 0) {
		log_info(log, "%s: build-id %s: debuginfod has no executable: %s",
			 path ? path : "?", idhex, strerror(-fd));
		return NULL;
	}
	close(fd);
	return found;
}

int elf_image__open_debug_remote(const struct elf_image *img,
				 const struct log_sink *log,
				 struct elf_image **out)
{
	char idhex[2 * ELF_BUILD_ID_MAX + 1], *path = NULL;
	debuginfod_client *c;
	int fd, err;

	*out = NULL;
	if (!img->build_id_len)
		return 0;
	hex(img->build_id, img->build_id_len, idhex);
	c = dfd_begin(log);
	if (!c)
		return 0;
	fd = dfd.find_debuginfo(c, img->build_id, (int)img->build_id_len, &path);
	dfd.end(c);
	if (fd < 0) {
		log_info(log, "%s: build-id %s: no debug file from debuginfod: %s",
			 img->path, idhex, strerror(-fd));
		return 0;
	}
	close(fd);
	err = elf_image__open(path, log, out);
	if (err) {
		*out = NULL;
	} else if ((*out)->build_id_len != img->build_id_len ||
		   memcmp((*out)->build_id, img->build_id, img->build_id_len)) {
		/* A server's answer is a name too: only its note says what
		 * the file is. */
		log_warn(log, "%s: debug file %s from debuginfod has another "
			 "build-id than %s: refused", img->path, path, idhex);
		elf_image__free(*out);
		*out = NULL;
	} else {
		(*out)->found_by_build_id = true;
		log_info(log, "%s: debug file %s from debuginfod", img->path, path);
	}
	free(path);
	return 0;
}
