/* wait_flock.c - flock and fcntl(F_SETLKW) waits: the holders of a lock
 * on the same file (device and inode), from /proc/locks. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "waits_internal.h"
#include "proc_lines.h"

#define F_SETLKW_ 7
#define F_OFD_SETLKW_ 38

static bool flock_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	if (t->nr == NR_FLOCK ||
	    (t->nr == NR_FCNTL && (t->args[1] == F_SETLKW_ || t->args[1] == F_OFD_SETLKW_))) {
		t->pub.kind = STACKSNAP_WAIT_FILE_LOCK;
		t->pub.fd = (int)t->args[0];
		if (w->o.saved)
			t->pub.no_owner = "a saved capture holds no file descriptors";
		return true;
	}
	return false;
}

static int flock_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	char path[64], link[256], line[256];
	struct stat st;
	ssize_t r;
	FILE *f;
	int err = 0;

	if (w->o.saved)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w->pid, t->pub.fd);
	if (stat(path, &st)) {
		t->pub.no_owner = "the fd is closed since the capture";
		t->pub.stale = true;
		return 0;
	}
	if ((r = readlink(path, link, sizeof(link) - 1)) > 0) {
		link[r] = 0;
		t->pub.file = waits__strf(w, "%s", link);
	}
	if (!(f = fopen("/proc/locks", "re")))
		return 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have
	 * "->" after the number. */
	while (!err && fgets(line, sizeof(line), f)) {
		struct lock_line l;

		if (lock_line__parse(line, &l) || l.waiter)
			continue;
		if (l.inode != st.st_ino || l.major != major(st.st_dev) ||
		    l.minor != minor(st.st_dev))
			continue;
		t->pub.detail = waits__strf(w, "%s %s lock", l.type, l.rw);
		if (l.pid > 0)
			err = waits__add_owner(t, l.pid, 0);
	}
	fclose(f);
	if (!err && !t->pub.nowners)
		t->pub.no_owner = "no lock on the file now (released since the capture, "
				  "or an OFD lock, which names no process)";
	return err;
}

const struct wait_source_ops wait_flock_ops = {
	.name = "file locks",
	.classify = flock_classify,
	.owners = flock_owners,
};
