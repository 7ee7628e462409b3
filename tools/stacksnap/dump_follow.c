/* dump_follow.c - `stacksnap PID --follow`: the process, then each
 * process it waits on (a pipe's other end, a child, a file lock's holder,
 * a lock's owner in another process), recursively, at most FOLLOW_MAX,
 * each dumped by this program itself (the same options, one freeze after
 * another), then the chains from the first process's waiters and the
 * deadlocks across processes (stacksnap_wait_cycles). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "print_waits.h"
#include "subcommands.h"

#define FOLLOW_MAX 16

/* One waiting thread as its process's dump reported it. */
struct follow_wait {
	pid_t pid, tid;
	char name[16], kind[16];
	struct stacksnap_wait_owner owners[8];
	size_t nowners;
	char *what;
};

/* The processes dumped, in order, and what their threads wait for.
 * Invariant: pids[0, n) distinct; out[i] the dump's standard output. */
struct follow {
	pid_t pids[FOLLOW_MAX];
	char *out[FOLLOW_MAX];
	size_t outlen[FOLLOW_MAX];
	int rc[FOLLOW_MAX];
	size_t n, skipped;
	struct follow_wait *waits;
	size_t nwaits, cap;
};

/* A process's name (comm), "?" when it is gone. */
static const char *comm_of(pid_t pid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	snprintf(buf, size, "?");
	if ((f = fopen(path, "re"))) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	return buf;
}

/* Reads a followed dump's two pipes at once (either may fill). */
static void drain(int out_fd, int waits_fd, char **out, size_t *outlen,
		  char **waits, size_t *waitslen)
{
	struct pollfd p[2] = { { out_fd, POLLIN, 0 }, { waits_fd, POLLIN, 0 } };
	char *bufs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 }, caps[2] = { 0, 0 };

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			char chunk[65536];
			ssize_t r;

			if (p[k].fd < 0 || !p[k].revents)
				continue;
			r = read(p[k].fd, chunk, sizeof(chunk));
			if (r <= 0) {
				p[k].fd = -1;
				continue;
			}
			if (lens[k] + (size_t)r + 1 > caps[k]) {
				size_t c = (lens[k] + (size_t)r + 1) * 2;
				char *b = realloc(bufs[k], c);

				if (!b)
					continue;
				bufs[k] = b;
				caps[k] = c;
			}
			memcpy(bufs[k] + lens[k], chunk, (size_t)r);
			lens[k] += (size_t)r;
			bufs[k][lens[k]] = 0;
		}
	}
	*out = bufs[0];
	*outlen = lens[0];
	*waits = bufs[1];
	*waitslen = lens[1];
}

/* Dumps pid with argv's options (--follow left out), its waits to a pipe.
 * Returns its exit code. */
static int dump_one(int argc, char **argv, pid_t pid, char **out, size_t *outlen,
		    char **waits)
{
	int po[2], pw[2], status;
	char fdarg[16], pidarg[16];
	char **args = calloc((size_t)argc + 6, sizeof(*args));
	size_t wlen;
	pid_t c;
	int k = 0;

	*out = *waits = NULL;
	*outlen = 0;
	if (!args || pipe2(po, O_CLOEXEC) || pipe2(pw, O_CLOEXEC)) {
		free(args);
		return EXIT_ERROR;
	}
	args[k++] = (char *)"stacksnap";
	/* The same options but --follow and -o FILE (the JSON of every
	 * process goes to this process, which writes FILE). */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			i++;
			continue;
		}
		if (!strcmp(argv[i], "--follow") || !strncmp(argv[i], "--output=", 9) ||
		    (!strncmp(argv[i], "-o", 2) && argv[i][2]))
			continue;
		args[k++] = argv[i];
	}
	snprintf(fdarg, sizeof(fdarg), "%d", 3);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)pid);
	args[k++] = (char *)"--waits-fd";
	args[k++] = fdarg;
	args[k++] = (char *)"--waits-pid";
	args[k++] = pidarg;
	fflush(stdout);
	fflush(stderr);
	c = fork();
	if (c == 0) {
		dup2(po[1], STDOUT_FILENO);
		dup2(pw[1], 3);
		execv("/proc/self/exe", args);
		_exit(EXIT_ERROR);
	}
	free(args);
	close(po[1]);
	close(pw[1]);
	if (c < 0) {
		close(po[0]);
		close(pw[0]);
		return EXIT_ERROR;
	}
	drain(po[0], pw[0], out, outlen, waits, &wlen);
	close(po[0]);
	close(pw[0]);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_ERROR;
}

static bool followed(const struct follow *f, pid_t pid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}

/* Parses one dump's "W" lines (waits_write_edges) and queues the
 * processes they wait on. */
static void add_waits(struct follow *f, char *text)
{
	char *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[7], *fs = NULL;
		int nf = 0;

		for (char *x = strtok_r(line, "\t", &fs); x && nf < 7; x = strtok_r(NULL, "\t", &fs))
			field[nf++] = x;
		if (nf < 6 || strcmp(field[0], "W"))
			continue;
		if (f->nwaits == f->cap) {
			size_t c = f->cap ? 2 * f->cap : 16;
			struct follow_wait *w = realloc(f->waits, c * sizeof(*w));

			if (!w)
				return;
			f->waits = w;
			f->cap = c;
		}
		struct follow_wait *w = &f->waits[f->nwaits++];

		memset(w, 0, sizeof(*w));
		w->pid = (pid_t)atoi(field[1]);
		w->tid = (pid_t)atoi(field[2]);
		snprintf(w->name, sizeof(w->name), "%s", field[3]);
		snprintf(w->kind, sizeof(w->kind), "%s", field[4]);
		w->what = strdup(nf > 6 ? field[6] : field[5]);
		/* OWNERS may be empty: the fields shift by one then. */
		if (nf > 6) {
			for (char *o = field[5]; *o && w->nowners < 8;) {
				char *end;
				long p = strtol(o, &end, 10);

				if (*end != ':')
					break;
				w->owners[w->nowners].pid = (pid_t)p;
				w->owners[w->nowners++].tid = (pid_t)strtol(end + 1, &end, 10);
				o = *end == ',' ? end + 1 : end;
			}
		}
		for (size_t k = 0; k < w->nowners; k++) {
			pid_t p = w->owners[k].pid;

			if (!p || followed(f, p))
				continue;
			if (f->n < FOLLOW_MAX)
				f->pids[f->n++] = p;
			else
				f->skipped++;
		}
	}
}

static const struct follow_wait *wait_of(const struct follow *f, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < f->nwaits; i++)
		if (f->waits[i].pid == pid && (f->waits[i].tid == tid || !tid))
			return &f->waits[i];
	return NULL;
}

/* The chain from one waiter of the first process: each step what it
 * waits for, to the thread at its end (waiting for nothing followed, a
 * process not captured, or back on the chain). */
static void print_chain(FILE *out, const struct follow *f, const struct follow_wait *w)
{
	char comm[64];
	pid_t seen[64];
	size_t nseen = 0;

	fprintf(out, "  %s %d/%d", comm_of(w->pid, comm, sizeof(comm)),
		(int)w->pid, (int)w->tid);
	while (w && nseen < 64) {
		seen[nseen++] = w->tid;
		fprintf(out, " -> %s", w->what);
		if (!w->nowners)
			break;
		const struct stacksnap_wait_owner *o = &w->owners[0];
		const struct follow_wait *next = wait_of(f, o->pid, o->tid);
		bool loop = false;

		for (size_t i = 0; next && i < nseen; i++)
			loop |= seen[i] == next->tid;
		if (!followed(f, o->pid)) {
			fprintf(out, " -> process %d: not followed", (int)o->pid);
			break;
		}
		if (!next) {
			fprintf(out, " -> %s %d%s: waits for nothing followed",
				comm_of(o->pid, comm, sizeof(comm)), (int)o->pid,
				o->tid ? "" : " (no thread of it waits)");
			break;
		}
		fprintf(out, " -> %s %d/%d", comm_of(next->pid, comm, sizeof(comm)),
			(int)next->pid, (int)next->tid);
		if (loop) {
			fputs(" (back on the chain: a deadlock)", out);
			break;
		}
		w = next;
	}
	fputc('\n', out);
}

int follow_main(const struct options *o, int argc, char **argv)
{
	struct follow f;
	struct stacksnap_wait_edge *edges = NULL;
	struct stacksnap_wait_owner *members = NULL;
	size_t *starts = NULL, ncycles = 0, nedges = 0;
	int rc;

	if (o->save_path || o->out.format_set || o->ptrace || o->ntids) {
		fprintf(stderr, "stacksnap: --follow prints the stacks of several "
			"processes: it does not go with --save, -o/--format, --ptrace "
			"or -t\n");
		return cli_usage_error();
	}
	memset(&f, 0, sizeof(f));
	f.pids[f.n++] = o->pid;
	for (size_t i = 0; i < f.n; i++) {
		char *waits;

		f.rc[i] = dump_one(argc, argv, f.pids[i], &f.out[i], &f.outlen[i], &waits);
		if (waits)
			add_waits(&f, waits);
		free(waits);
	}
	/* Edges: each waiter to its holders; each process to its waiters
	 * (a holder that is a process as a whole waits when they do). */
	edges = calloc(f.nwaits * 9 + 1, sizeof(*edges));
	for (size_t i = 0; edges && i < f.nwaits; i++) {
		const struct follow_wait *w = &f.waits[i];

		for (size_t k = 0; k < w->nowners; k++) {
			edges[nedges].from.pid = w->pid;
			edges[nedges].from.tid = w->tid;
			edges[nedges++].to = w->owners[k];
		}
		edges[nedges].from.pid = w->pid;
		edges[nedges].to.pid = w->pid;
		edges[nedges++].to.tid = w->tid;
	}
	if (edges)
		stacksnap_wait_cycles(edges, nedges, &members, &starts, &ncycles);
	rc = f.rc[0];
	for (size_t i = 1; i < f.n; i++)
		if (f.rc[i] != EXIT_OK && rc == EXIT_OK)
			rc = EXIT_PARTIAL;
	if (o->json) {
		fputs("{\"processes\":[", stdout);
		for (size_t i = 0, first = 1; i < f.n; i++) {
			size_t len = f.outlen[i];

			while (len && f.out[i][len - 1] == '\n')
				len--;
			if (!len)
				continue;
			printf("%s%.*s", first ? "" : ",", (int)len, f.out[i]);
			first = 0;
		}
		fputs("],\"deadlocks\":[", stdout);
		for (size_t c = 0; c < ncycles; c++) {
			printf("%s[", c ? "," : "");
			for (size_t m = starts[c]; m < starts[c + 1]; m++)
				printf("%s{\"pid\":%d,\"tid\":%d}", m > starts[c] ? "," : "",
				       (int)members[m].pid, (int)members[m].tid);
			putchar(']');
		}
		fputs("]}\n", stdout);
	} else {
		char comm[64];

		for (size_t i = 0; i < f.n; i++) {
			printf("%s==> process %d (%s)%s <==\n", i ? "\n" : "", (int)f.pids[i],
			       comm_of(f.pids[i], comm, sizeof(comm)),
			       i ? ", waited on" : "");
			if (f.out[i])
				fwrite(f.out[i], 1, f.outlen[i], stdout);
			if (f.rc[i] != EXIT_OK && f.rc[i] != EXIT_PARTIAL)
				printf("(not captured: exit %d, said above)\n", f.rc[i]);
		}
		bool header = false;

		for (size_t i = 0; i < f.nwaits; i++) {
			const struct follow_wait *w = &f.waits[i];
			bool out = false;

			for (size_t k = 0; k < w->nowners; k++)
				out |= w->owners[k].pid != w->pid;
			if (w->pid != f.pids[0] || !out)
				continue;
			if (!header)
				puts("\nChains (from the first process's waiters):");
			header = true;
			print_chain(stdout, &f, w);
		}
		for (size_t c = 0; c < ncycles; c++) {
			bool across = false;

			for (size_t m = starts[c] + 1; m < starts[c + 1]; m++)
				across |= members[m].pid != members[starts[c]].pid;
			if (!across)
				continue; /* printed by its process's dump */
			printf("\nDeadlock across processes: %zu threads wait for each other:\n",
			       starts[c + 1] - starts[c]);
			for (size_t m = starts[c]; m < starts[c + 1]; m++) {
				const struct follow_wait *w = wait_of(&f, members[m].pid,
								      members[m].tid);

				printf("  %s %d/%d (%s) waits for %s\n",
				       comm_of(members[m].pid, comm, sizeof(comm)),
				       (int)members[m].pid, (int)members[m].tid,
				       w ? w->name : "?", w ? w->what : "?");
			}
		}
	}
	if (f.skipped)
		fprintf(stderr, "stacksnap: --follow: %zu more processes waited on, not "
			"followed (at most %d)\n", f.skipped, FOLLOW_MAX);
	for (size_t i = 0; i < f.nwaits; i++)
		free(f.waits[i].what);
	for (size_t i = 0; i < f.n; i++)
		free(f.out[i]);
	free(f.waits);
	free(edges);
	free(members);
	free(starts);
	return cli_close_output(stdout, NULL, rc);
}
