/* perm_why.c - why the kernel refused this process a ptrace, a BPF program
 * or a perf event (EPERM, EACCES), read from /proc and /sys alone, as one
 * phrase with its fix: "run as root" only where the tool does not run as
 * root, the real cause (a dropped capability, Yama, another tracer,
 * seccomp, a user namespace, lockdown) where it does. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacksnap.h"

enum { CAP_PTRACE_BIT = 19, CAP_ADMIN_BIT = 21, CAP_PERFMON_BIT = 38, CAP_BPF_BIT = 39 };

/* Reads up to size - 1 bytes of path into buf; false when unreadable. */
static bool read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0;
}

/* The text after "KEY:" on its line of a /proc status file, blanks
 * skipped, copied into out (at most size - 1 bytes, to the line's end);
 * false when absent. */
static bool status_field(const char *path, const char *key, char *out, size_t size)
{
	char buf[4096], *p, *end;
	size_t klen = strlen(key), n;

	if (!read_small(path, buf, sizeof(buf)))
		return false;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, klen) || p[klen] != ':')
			continue;
		p += klen + 1;
		p += strspn(p, " \t");
		end = strchr(p, '\n');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n >= size)
			n = size - 1;
		memcpy(out, p, n);
		out[n] = 0;
		return true;
	}
	return false;
}

static bool has_cap(int bit)
{
	char v[64];

	if (!status_field("/proc/self/status", "CapEff", v, sizeof(v)))
		return true; /* not known: not blamed */
	return (strtoull(v, NULL, 16) >> bit) & 1;
}

static long read_long(const char *path, long none)
{
	char buf[32];

	return read_small(path, buf, sizeof(buf)) ? strtol(buf, NULL, 10) : none;
}

/* Not the initial user namespace: its root has no rights outside it. */
static bool in_user_namespace(void)
{
	char buf[256];
	unsigned long a, b, c;

	if (!read_small("/proc/self/uid_map", buf, sizeof(buf)))
		return false;
	return sscanf(buf, "%lu %lu %lu", &a, &b, &c) != 3 || a || b || c != 4294967295ul ||
	       strchr(buf, '\n') != strrchr(buf, '\n');
}

static bool under_seccomp_filter(void)
{
	char v[16];

	return status_field("/proc/self/status", "Seccomp", v, sizeof(v)) && atoi(v) == 2;
}

/* The first thread of pid traced by another process: its tid, *tracer set;
 * 0 when none. */
static pid_t traced_thread(pid_t pid, pid_t *tracer)
{
	char path[64], v[32];
	struct dirent *de;
	DIR *d;
	pid_t found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return 0;
	while (!found && (de = readdir(d))) {
		long t = atol(de->d_name), tp;

		if (t <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/status", (int)pid, t);
		if (status_field(path, "TracerPid", v, sizeof(v)) && (tp = atol(v)) > 0 &&
		    tp != getpid()) {
			found = (pid_t)t;
			*tracer = (pid_t)tp;
		}
	}
	closedir(d);
	return found;
}

/* pid's uids (real, effective, saved) all equal to ours: the owner. */
static bool same_owner(pid_t pid, long *uid)
{
	char path[64], v[128];
	long r, e, s;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	*uid = -1;
	if (!status_field(path, "Uid", v, sizeof(v)) || sscanf(v, "%ld %ld %ld", &r, &e, &s) != 3)
		return true; /* not known: not blamed */
	*uid = e;
	return r == (long)geteuid() && e == (long)geteuid() && s == (long)geteuid();
}

/* Said as root, where the capability is in place: what else refuses. */
static const char *root_rest(char *buf, size_t size, const char *what)
{
	char label[128];

	if (under_seccomp_filter())
		snprintf(buf, size, "stacksnap runs under a seccomp filter, which refuses %s "
			 "in containers by default: e.g. docker run --security-opt "
			 "seccomp=unconfined", what);
	else if (read_small("/proc/self/attr/current", label, sizeof(label)) &&
		 strncmp(label, "unconfined", 10) && label[0]) {
		label[strcspn(label, "\n")] = 0;
		snprintf(buf, size, "stacksnap runs as root, but its security module label "
			 "'%s', AppArmor or SELinux, may refuse %s", label, what);
	} else
		snprintf(buf, size, "refused although stacksnap runs as root with the "
			 "capabilities %s needs: a security module, AppArmor or SELinux, "
			 "or the kernel's lockdown may forbid it", what);
	return buf;
}

static const char *why_ptrace(pid_t pid, char *buf, size_t size)
{
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope", -1), uid;
	pid_t tracer = 0, t = pid > 0 ? traced_thread(pid, &tracer) : 0;
	char comm[64] = "", path[64];

	if (t) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)tracer);
		read_small(path, comm, sizeof(comm));
		comm[strcspn(comm, "\n")] = 0;
		snprintf(buf, size, "thread %d is traced by pid %d%s%s: a thread has one "
			 "tracer at a time, detach it first", (int)t, (int)tracer,
			 comm[0] ? ", " : "", comm);
	} else if (scope == 3)
		snprintf(buf, size, "kernel.yama.ptrace_scope is 3: no process may be "
			 "traced until the next boot");
	else if (geteuid() != 0) {
		if (pid > 0 && !same_owner(pid, &uid))
			snprintf(buf, size, "run as root or as the process owner, uid %ld", uid);
		else if (scope == 1)
			snprintf(buf, size, "kernel.yama.ptrace_scope is 1: only a process's "
				 "ancestors may trace it; run as root, or set "
				 "kernel.yama.ptrace_scope=0");
		else if (scope == 2)
			snprintf(buf, size, "kernel.yama.ptrace_scope is 2: tracing needs "
				 "CAP_SYS_PTRACE; run as root");
		else
			snprintf(buf, size, "the process is not dumpable, setuid or "
				 "prctl PR_SET_DUMPABLE 0: run as root");
	} else if (in_user_namespace())
		snprintf(buf, size, "stacksnap runs as root of a user namespace, which has "
			 "no rights over processes outside it: run it in the target's "
			 "namespace or the host's");
	else if (!has_cap(CAP_PTRACE_BIT))
		snprintf(buf, size, "stacksnap runs as root without CAP_SYS_PTRACE, dropped "
			 "from its capability bounding set as in a container: grant it, "
			 "e.g. docker run --cap-add=SYS_PTRACE");
	else
		return root_rest(buf, size, "ptrace");
	return buf;
}

static const char *why_bpf(char *buf, size_t size)
{
	if (geteuid() != 0 && !(has_cap(CAP_BPF_BIT) && has_cap(CAP_PERFMON_BIT)) &&
	    !has_cap(CAP_ADMIN_BIT))
		snprintf(buf, size, "run as root, or grant CAP_BPF and CAP_PERFMON");
	else if (in_user_namespace())
		snprintf(buf, size, "stacksnap runs in a user namespace: BPF programs need "
			 "CAP_BPF and CAP_PERFMON in the host's");
	else if (!(has_cap(CAP_BPF_BIT) && has_cap(CAP_PERFMON_BIT)) && !has_cap(CAP_ADMIN_BIT))
		snprintf(buf, size, "stacksnap runs without CAP_BPF and CAP_PERFMON, dropped "
			 "from its capability bounding set as in a container: grant them, "
			 "e.g. docker run --cap-add=BPF --cap-add=PERFMON");
	else
		return root_rest(buf, size, "bpf()");
	return buf;
}

static const char *why_perf(char *buf, size_t size)
{
	long paranoid = read_long("/proc/sys/kernel/perf_event_paranoid", 2);

	if (geteuid() != 0 && !has_cap(CAP_PERFMON_BIT) && !has_cap(CAP_ADMIN_BIT))
		snprintf(buf, size, "run as root, grant CAP_PERFMON, or lower "
			 "kernel.perf_event_paranoid, now %ld", paranoid);
	else if (in_user_namespace())
		snprintf(buf, size, "stacksnap runs in a user namespace: perf events need "
			 "CAP_PERFMON in the host's, or a lower kernel.perf_event_paranoid, "
			 "now %ld", paranoid);
	else if (!has_cap(CAP_PERFMON_BIT) && !has_cap(CAP_ADMIN_BIT))
		snprintf(buf, size, "stacksnap runs without CAP_PERFMON, dropped from its "
			 "capability bounding set: grant it, e.g. docker run "
			 "--cap-add=PERFMON, or lower kernel.perf_event_paranoid, now %ld",
			 paranoid);
	else
		return root_rest(buf, size, "perf_event_open");
	return buf;
}

const char *stacksnap_why_not_permitted(enum stacksnap_refused what, pid_t pid, char *buf,
					size_t size)
{
	if (!buf || !size)
		return "";
	switch (what) {
	case STACKSNAP_REFUSED_PTRACE: return why_ptrace(pid, buf, size);
	case STACKSNAP_REFUSED_BPF: return why_bpf(buf, size);
	case STACKSNAP_REFUSED_PERF: return why_perf(buf, size);
	}
	snprintf(buf, size, "not permitted");
	return buf;
}
