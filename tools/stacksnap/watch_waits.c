/* watch_waits.c - the waits `stacksnap watch` reports at the end of a
 * run: a thread that waited for the same lock held by the same holder at
 * every sample, and a deadlock (a cycle of the wait-for graph) seen at
 * every sample. Each sample's threads asleep in a system call are handed
 * to the library's wait-for graph (locks only: no look through /proc at
 * every sample) after the walk's thaw. Only what the first sample saw can
 * last the whole run, so after it only the threads still in the running
 * are read again. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"
#include "print_waits.h"
#include "watch_waits.h"

/* The innermost frames kept of a waiting thread: a lock's wait is a few
 * libc frames deep, the waiting frame just above (the library names 16). */
#define KEEP_FRAMES 24

/* One thread asleep in a system call in the sample being taken. */
struct pending {
	struct stacksnap_thread th;
	struct stacksnap_frame frames[KEEP_FRAMES];
	size_t nframes;
};

/* A wait the first sample saw. Invariant: seen is the number of samples
 * from the first on that saw the same kind, object and holders; it
 * lasted the run when seen equals the run's samples. */
struct tracked {
	pid_t tid;
	enum stacksnap_wait_kind kind;
	uint64_t object;
	char *object_name;
	struct stacksnap_wait_owner *owners;
	size_t nowners;
	size_t seen;
	char *text;	/* "mutex 0x... (lock_b), normal mutex; held by thread
			   901 (worker)" */
};

/* A deadlock the first sample saw: its members as the library ordered
 * them (each waits for the next, rotated to start at the smallest). */
struct cycle {
	struct stacksnap_wait_owner *m;
	size_t n;
	size_t seen;
};

struct watch_waits {
	struct stacksnap_ctx *ctx;
	pid_t pid;
	struct stacksnap_mem *mem;
	watch_waits_name_fn name;
	void *user;
	struct pending *pend;
	size_t npend, cappend;
	struct tracked *tr;
	size_t ntr, captr;
	struct cycle *cy;
	size_t ncy, capcy;
	size_t nsamples;
	int err;	/* why the waits could not be read (-errno), or 0 */
};

/* Appends a slot to *items (n, cap as in the structure): NULL on
 * -ENOMEM. */
static void *push(void *items, size_t *n, size_t *cap, size_t elem)
{
	void **v = items;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		void *nv = realloc(*v, c * elem);

		if (!nv)
			return NULL;
		*v = nv;
		*cap = c;
	}
	return (char *)*v + elem * (*n)++;
}
#define PUSH(items, n, cap) \
	((__typeof__(items))push(&(items), &(n), &(cap), sizeof(*(items))))

struct watch_waits *watch_waits__new(struct stacksnap_ctx *ctx, pid_t pid,
				     watch_waits_name_fn name, void *user)
{
	struct watch_waits *ww = calloc(1, sizeof(*ww));

	if (!ww)
		return NULL;
	ww->ctx = ctx;
	ww->pid = pid;
	ww->name = name;
	ww->user = user;
	ww->mem = stacksnap_mem__new_pid(pid);
	if (!ww->mem)
		ww->err = -errno;
	return ww;
}

static struct tracked *find_tracked(const struct watch_waits *ww, pid_t tid)
{
	for (size_t i = 0; i < ww->ntr; i++)
		if (ww->tr[i].tid == tid)
			return &ww->tr[i];
	return NULL;
}

/* Whether the run may still report something: a wait or a cycle seen at
 * every sample so far. */
static bool in_the_running(const struct watch_waits *ww)
{
	for (size_t i = 0; i < ww->ntr; i++)
		if (ww->tr[i].seen == ww->nsamples)
			return true;
	for (size_t i = 0; i < ww->ncy; i++)
		if (ww->cy[i].seen == ww->nsamples)
			return true;
	return false;
}

int watch_waits__add(struct watch_waits *ww, const struct stacksnap_walked_thread *th)
{
	struct pending *p;
	int64_t rax;

	if (!ww || ww->err || th->error || !th->regs)
		return 0;
	/* Asleep in a system call at the capture: rax -ENOSYS (read without
	 * stopping it), -EINTR or -ERESTART* (the capture interrupted it).
	 * Anything else ran: it waits for nothing now. */
	rax = (int64_t)th->regs->regs[STACKSNAP_REG_RAX];
	if (rax != -ENOSYS && rax != -EINTR && !(rax >= -516 && rax <= -512))
		return 0;
	/* After the first sample only what it saw can last the run. */
	if (ww->nsamples) {
		const struct tracked *t = find_tracked(ww, th->tid);

		if (!t || t->seen != ww->nsamples)
			return 0;
	}
	if (!(p = PUSH(ww->pend, ww->npend, ww->cappend)))
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->th.tid = th->tid;
	p->th.state = 'S';
	p->th.regs = *th->regs;
	p->nframes = th->nframes < KEEP_FRAMES ? th->nframes : KEEP_FRAMES;
	memcpy(p->frames, th->frames, p->nframes * sizeof(*p->frames));
	return 0;
}

static bool same_owners(const struct stacksnap_wait_owner *a, size_t na,
			const struct stacksnap_wait_owner *b, size_t nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

/* The wait's text, its holders named as the caller names them. */
static char *wait_text(const struct watch_waits *ww, const struct stacksnap_wait *w)
{
	char *s = NULL;
	size_t len = 0;
	const char *rname, *rkind;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	print_wait_what(f, w);
	fputs(w->kind == STACKSNAP_WAIT_JOIN ? "; joins " : "; held by ", f);
	for (size_t i = 0; i < w->nowners; i++) {
		const struct stacksnap_wait_owner *o = &w->owners[i];

		if (i)
			fputs(", ", f);
		if (o->tid && o->pid == ww->pid)
			fprintf(f, "thread %d (%s)", (int)o->tid,
				ww->name(ww->user, o->tid, &rname, &rkind));
		else if (o->tid)
			fprintf(f, "thread %d of process %d", (int)o->tid, (int)o->pid);
		else
			fprintf(f, "process %d", (int)o->pid);
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

/* The first sample: every wait with a holder and every cycle kept. */
static int first_sample(struct watch_waits *ww, const struct stacksnap_waits *w)
{
	for (size_t i = 0; i < ww->npend; i++) {
		const struct stacksnap_wait *x = stacksnap_waits__thread(w, ww->pend[i].th.tid);
		struct tracked *t;

		if (!x || !x->nowners)
			continue;
		if (!(t = PUSH(ww->tr, ww->ntr, ww->captr)))
			return -ENOMEM;
		memset(t, 0, sizeof(*t));
		t->tid = ww->pend[i].th.tid;
		t->kind = x->kind;
		t->object = x->object;
		t->seen = 1;
		t->nowners = x->nowners;
		t->owners = malloc(x->nowners * sizeof(*t->owners));
		t->object_name = x->object_name ? strdup(x->object_name) : NULL;
		t->text = wait_text(ww, x);
		if (!t->owners || !t->text || (x->object_name && !t->object_name))
			return -ENOMEM;
		memcpy(t->owners, x->owners, x->nowners * sizeof(*t->owners));
	}
	for (size_t d = 0; d < stacksnap_waits__deadlock_count(w); d++) {
		const struct stacksnap_wait_owner *m;
		struct cycle *c;
		size_t n;

		if (stacksnap_waits__deadlock(w, d, &m, &n))
			continue;
		if (!(c = PUSH(ww->cy, ww->ncy, ww->capcy)))
			return -ENOMEM;
		c->n = n;
		c->seen = 1;
		if (!(c->m = malloc(n * sizeof(*m))))
			return -ENOMEM;
		memcpy(c->m, m, n * sizeof(*m));
	}
	return 0;
}

/* A later sample: what the first saw counted again where it is the same
 * (kind, object, holders; the same cycle). */
static void next_sample(struct watch_waits *ww, const struct stacksnap_waits *w)
{
	for (size_t i = 0; i < ww->npend; i++) {
		const struct stacksnap_wait *x = stacksnap_waits__thread(w, ww->pend[i].th.tid);
		struct tracked *t = find_tracked(ww, ww->pend[i].th.tid);

		if (x && t && t->seen == ww->nsamples && x->kind == t->kind &&
		    x->object == t->object &&
		    same_owners(x->owners, x->nowners, t->owners, t->nowners))
			t->seen++;
	}
	for (size_t d = 0; d < stacksnap_waits__deadlock_count(w); d++) {
		const struct stacksnap_wait_owner *m;
		size_t n;

		if (stacksnap_waits__deadlock(w, d, &m, &n))
			continue;
		for (size_t k = 0; k < ww->ncy; k++)
			if (ww->cy[k].seen == ww->nsamples &&
			    same_owners(ww->cy[k].m, ww->cy[k].n, m, n))
				ww->cy[k].seen++;
	}
}

void watch_waits__sample(struct watch_waits *ww, struct stacksnap_addrspace *as, bool ok)
{
	STACKSNAP_OPTS(stacksnap_waits_opts, wopts, .mem = ww ? ww->mem : NULL,
		       .no_kernel_stacks = true, .locks_only = true);
	struct stacksnap_waits *w = NULL;
	int err = 0;

	if (!ww || ww->err || !ok)
		goto out;
	if (ww->nsamples && !in_the_running(ww)) {
		ww->nsamples++;
		goto out;
	}
	w = stacksnap_waits__new(ww->ctx, ww->pid, as, &wopts);
	if (!w) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < ww->npend && !err; i++)
		err = stacksnap_waits__add_thread(w, &ww->pend[i].th, ww->pend[i].frames,
						  ww->pend[i].nframes);
	if (!err && stacksnap_waits__resolve(w))
		err = -errno;
	if (!err && !ww->nsamples)
		err = first_sample(ww, w);
	else if (!err)
		next_sample(ww, w);
	if (!err)
		ww->nsamples++;
out:
	if (err)
		ww->err = err;
	stacksnap_waits__free(w);
	if (ww)
		ww->npend = 0;
}

static size_t lasting_waits(const struct watch_waits *ww)
{
	size_t n = 0;

	for (size_t i = 0; ww->nsamples > 1 && i < ww->ntr; i++)
		n += ww->tr[i].seen == ww->nsamples;
	return n;
}

static void print_thread(FILE *f, const struct watch_waits *ww, pid_t tid);

void watch_waits__print_text(FILE *f, const struct watch_waits *ww, uint64_t elapsed_ns)
{
	if (!ww)
		return;
	if (ww->err) {
		fprintf(f, "(waits not followed: %s)\n", strerror(-ww->err));
		return;
	}
	if (ww->nsamples < 2)
		return;
	if (lasting_waits(ww))
		fputc('\n', f);
	for (size_t i = 0; i < ww->ntr; i++) {
		const struct tracked *t = &ww->tr[i];

		if (t->seen != ww->nsamples)
			continue;
		print_thread(f, ww, t->tid);
		fprintf(f, " waited for %s in every sample (%zu of %zu, %.2f s)\n", t->text,
			t->seen, ww->nsamples, (double)elapsed_ns / 1e9);
	}
	for (size_t k = 0; k < ww->ncy; k++) {
		const struct cycle *c = &ww->cy[k];

		if (c->seen != ww->nsamples)
			continue;
		fprintf(f, "\nDeadlock seen in every sample (%zu of %zu, %.2f s): %zu threads "
			   "wait for each other:\n", c->seen, ww->nsamples,
			(double)elapsed_ns / 1e9, c->n);
		for (size_t i = 0; i < c->n; i++) {
			const struct tracked *t = find_tracked(ww, c->m[i].tid);

			fputs("  ", f);
			print_thread(f, ww, c->m[i].tid);
			fprintf(f, " waits for %s\n", t ? t->text : "?");
		}
	}
}

/* "thread 905 (worker)", or with its runtime's name "thread 905
 * (python3.11), Python thread "dl-a"", as the dump names them. */
static void print_thread(FILE *f, const struct watch_waits *ww, pid_t tid)
{
	const char *rname, *rkind;
	const char *comm = ww->name(ww->user, tid, &rname, &rkind);

	fprintf(f, "thread %d (%s)", (int)tid, comm);
	if (rname)
		fprintf(f, ", %s thread \"%s\"", rkind, rname);
}

static void json_owners(FILE *f, const struct stacksnap_wait_owner *o, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s{\"pid\": %d, \"tid\": ", i ? ", " : "", (int)o[i].pid);
		if (o[i].tid)
			fprintf(f, "%d}", (int)o[i].tid);
		else
			fputs("null}", f);
	}
	fputc(']', f);
}

void watch_waits__print_json(FILE *f, const struct watch_waits *ww)
{
	bool first = true;

	if (!ww)
		return;
	fputs(",\n \"persistent_waits\": ", f);
	if (ww->err) {	/* not read: not "none" */
		fputs("null, \"persistent_deadlocks\": null", f);
		return;
	}
	fputc('[', f);
	for (size_t i = 0; ww->nsamples > 1 && i < ww->ntr; i++) {
		const struct tracked *t = &ww->tr[i];

		if (t->seen != ww->nsamples)
			continue;
		const char *rname, *rkind;

		fprintf(f, "%s\n  {\"tid\": %d, \"thread\": ", first ? "" : ",", (int)t->tid);
		json_str(f, ww->name(ww->user, t->tid, &rname, &rkind));
		fputs(", \"runtime_name\": ", f);
		json_str(f, rname);
		fputs(", \"kind\": ", f);
		json_str(f, stacksnap_wait_kind__str(t->kind));
		if (t->object)
			fprintf(f, ", \"object\": \"0x%" PRIx64 "\"", t->object);
		else
			fputs(", \"object\": null", f);
		fputs(", \"object_name\": ", f);
		json_str(f, t->object_name);
		fputs(", \"owners\": ", f);
		json_owners(f, t->owners, t->nowners);
		fprintf(f, ", \"samples\": %zu}", t->seen);
		first = false;
	}
	fputs("],\n \"persistent_deadlocks\": [", f);
	first = true;
	for (size_t k = 0; ww->nsamples > 1 && k < ww->ncy; k++) {
		const struct cycle *c = &ww->cy[k];

		if (c->seen != ww->nsamples)
			continue;
		fprintf(f, "%s\n  {\"threads\": ", first ? "" : ",");
		json_owners(f, c->m, c->n);
		fprintf(f, ", \"samples\": %zu}", c->seen);
		first = false;
	}
	fputc(']', f);
}

void watch_waits__free(struct watch_waits *ww)
{
	if (!ww)
		return;
	for (size_t i = 0; i < ww->ntr; i++) {
		free(ww->tr[i].object_name);
		free(ww->tr[i].owners);
		free(ww->tr[i].text);
	}
	for (size_t i = 0; i < ww->ncy; i++)
		free(ww->cy[i].m);
	free(ww->tr);
	free(ww->cy);
	free(ww->pend);
	stacksnap_mem__free(ww->mem);
	free(ww);
}
