/* wait_child.c - wait4/waitid: the children waited for (every child of
 * the process from /proc/PID/task/TID/children, or the one named) and
 * their states. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waits_internal.h"

static bool child_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	if (t->nr != NR_WAIT4 && t->nr != NR_WAITID)
		return false;
	t->pub.kind = STACKSNAP_WAIT_CHILD;
	if (w->o.saved)
		t->pub.no_owner = "a saved capture holds no process list: the "
				  "children are not known";
	return true;
}

/* Child c's state letter from /proc/C/stat, '?' when gone. */
static char child_state(pid_t c)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)c);
	if (!(f = fopen(path, "re")))
		return '?';
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')) || !p[1] || !p[2])
		return '?';
	return p[2];
}

static int add_child(struct stacksnap_waits *w, struct wait_thread *t, pid_t c,
		     char *desc, size_t size)
{
	char comm[32];
	size_t len = strlen(desc);

	snprintf(desc + len, size - len, "%schild %d (%s) state %c", len ? ", " : "",
		 (int)c, waits__comm(c, comm, sizeof(comm)), child_state(c));
	return waits__add_owner(t, c, 0);
}

static int child_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	pid_t want = 0;
	char desc[512] = "", path[64];
	DIR *d;
	struct dirent *e;
	int err = 0;

	if (w->o.saved)
		return 0;
	if (t->nr == NR_WAIT4 && (long)t->args[0] > 0)
		want = (pid_t)t->args[0];
	else if (t->nr == NR_WAITID && t->args[0] == 1 /* P_PID */)
		want = (pid_t)t->args[1];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)w->pid);
	if (!(d = opendir(path)))
		return 0;
	while (!err && (e = readdir(d))) {
		char cpath[96], buf[4096], *p, *end;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%.32s/children",
			 (int)w->pid, e->d_name);
		if (!(f = fopen(cpath, "re")))
			continue;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		for (; !err && p && *p; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (!want || c == want)
				err = add_child(w, t, (pid_t)c, desc, sizeof(desc));
		}
	}
	closedir(d);
	if (err)
		return err;
	if (desc[0])
		t->pub.detail = waits__strf(w, "%s", desc);
	else
		t->pub.no_owner = want ? "the child waited for is not a child of the "
					 "process (any more)"
				       : "the process has no children";
	return 0;
}

const struct wait_source_ops wait_child_ops = {
	.name = "children",
	.classify = child_classify,
	.owners = child_owners,
};
