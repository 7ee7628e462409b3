/* dump_multi.c - several processes in one run, one freeze each (see
 * dump_multi.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump_multi.h"

static bool have_pid(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* Whether /proc/PID is a user process (a kernel thread has an empty
 * command line) whose name (comm, as pgrep matches) matches re. */
static bool pgrep_match(pid_t pid, const regex_t *re)
{
	char path[64], name[64], cmd[2];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	n = fread(cmd, 1, sizeof(cmd), f);
	fclose(f);
	if (!n)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	n = fread(name, 1, sizeof(name) - 1, f);
	fclose(f);
	name[n] = 0;
	name[strcspn(name, "\n")] = 0;
	return regexec(re, name, 0, NULL, 0) == 0;
}

long dump_multi_pids(const struct options *o, pid_t **out)
{
	size_t n = 0, cap = o->npids + 16, first;
	pid_t *v = malloc(cap * sizeof(*v));
	regex_t re;
	DIR *d;
	struct dirent *de;
	int err;

	if (!v)
		goto nomem;
	for (size_t i = 0; i < o->npids; i++)
		if (!have_pid(v, n, o->pids[i]))
			v[n++] = o->pids[i];
	*out = v;
	if (!o->pgrep)
		return (long)n;
	if ((err = regcomp(&re, o->pgrep, REG_EXTENDED | REG_NOSUB))) {
		char why[128];

		regerror(err, &re, why, sizeof(why));
		fprintf(stderr, "stacksnap: --pgrep '%s': %s\n", o->pgrep, why);
		free(v);
		return -1;
	}
	if (!(d = opendir("/proc"))) {
		perror("stacksnap: /proc");
		regfree(&re);
		free(v);
		return -1;
	}
	first = n;
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);

		if (pid <= 0 || pid == getpid() || have_pid(v, n, pid) ||
		    !pgrep_match(pid, &re))
			continue;
		if (n == cap) {
			pid_t *nv = realloc(v, (cap *= 2) * sizeof(*v));

			if (!nv) {
				closedir(d);
				regfree(&re);
				goto nomem;
			}
			v = nv;
		}
		v[n++] = pid;
	}
	closedir(d);
	regfree(&re);
	qsort(v + first, n - first, sizeof(*v), cmp_pid);
	*out = v;
	return (long)n;
nomem:
	free(v);
	fprintf(stderr, "stacksnap: out of memory\n");
	return -1;
}

int dump_multi_run(const struct options *o, const pid_t *pids, size_t n,
		   dump_one_fn one, void *user)
{
	int rc = EXIT_OK;

	if (o->json)
		fputs("{\"processes\":[", stdout);
	for (size_t i = 0; i < n; i++) {
		bool printed = false;
		int r;

		if (o->json && i)
			fputc(',', stdout);
		else if (i)
			fputc('\n', stdout);
		fflush(stdout);
		r = one(o, pids[i], user, &printed);
		if (o->json && !printed)
			printf("{\"pid\":%d,\"exit\":%d}\n", (int)pids[i], r);
		if (r && rc == EXIT_OK)
			rc = r;
		if (r >= EXIT_SIGNAL_BASE)
			break;
	}
	if (o->json)
		fputs("]}\n", stdout);
	return rc;
}

int dump_multi(const struct options *o, dump_one_fn one, void *user)
{
	pid_t *pids = NULL;
	long n = dump_multi_pids(o, &pids);
	int rc;

	if (n < 0)
		return EXIT_ERROR;
	if (n == 0) {
		fprintf(stderr, "stacksnap: --pgrep '%s': no process matches (the "
			"name is /proc/PID/comm, as pgrep reads it)\n", o->pgrep);
		free(pids);
		return EXIT_NO_PROCESS;
	}
	rc = dump_multi_run(o, pids, (size_t)n, one, user);
	free(pids);
	return rc;
}
