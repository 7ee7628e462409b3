/* print_waits.c - who waits for whom in the dump: the graph built from
 * the unwound threads (the library's stacksnap_waits), each thread's wait
 * and the deadlocks, in text and JSON. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "print_waits.h"

struct stacksnap_waits *waits_build(struct stacksnap_ctx *ctx, pid_t pid,
				    struct stacksnap_addrspace *as,
				    struct stacksnap_mem *mem, bool saved,
				    const struct stacksnap_saved *kept,
				    pid_t gil_holder,
				    struct thread_result *res, size_t n)
{
	STACKSNAP_OPTS(stacksnap_waits_opts, wopts, .mem = mem, .saved = saved,
		       .gil_holder = gil_holder, .kept = kept);
	struct stacksnap_waits *w = stacksnap_waits__new(ctx, pid, as, &wopts);

	if (!w)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (stacksnap_waits__add_thread(w, res[i].thread, res[i].frames,
						res[i].nframes > 0 ? (size_t)res[i].nframes : 0))
			goto fail;
	if (stacksnap_waits__resolve(w))
		goto fail;
	for (size_t i = 0; i < n; i++)
		res[i].wait = stacksnap_waits__thread(w, res[i].thread->tid);
	return w;
fail:
	fprintf(stderr, "stacksnap: pid %d: who waits for whom not read: %s\n",
		(int)pid, strerror(errno));
	stacksnap_waits__free(w);
	return NULL;
}

int waits_save_opts(const struct stacksnap_waits *w, const struct thread_result *res,
		    size_t n, struct stacksnap_save_opts *o, struct waits_save *keep)
{
	size_t nc = stacksnap_waits__deadlock_count(w), nm = 0, k = 0;

	memset(keep, 0, sizeof(*keep));
	if (!w)
		return 0;
	for (size_t i = 0; i < nc; i++) {
		const struct stacksnap_wait_owner *m;
		size_t len;

		if (!stacksnap_waits__deadlock(w, i, &m, &len))
			nm += len;
	}
	keep->tids = calloc(n ? n : 1, sizeof(*keep->tids));
	keep->waits = calloc(n ? n : 1, sizeof(*keep->waits));
	keep->members = calloc(nm ? nm : 1, sizeof(*keep->members));
	keep->start = calloc(nc + 1, sizeof(*keep->start));
	if (!keep->tids || !keep->waits || !keep->members || !keep->start) {
		waits_save_free(keep);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		keep->tids[i] = res[i].thread->tid;
		keep->waits[i] = res[i].wait;
	}
	for (size_t i = 0; i < nc; i++) {
		const struct stacksnap_wait_owner *m;
		size_t len;

		if (!stacksnap_waits__deadlock(w, i, &m, &len) && k + len <= nm) {
			memcpy(keep->members + k, m, len * sizeof(*m));
			k += len;
		}
		keep->start[i + 1] = k;
	}
	o->wait_tids = keep->tids;
	o->waits = keep->waits;
	o->nwaits = n;
	o->deadlock_members = keep->members;
	o->deadlock_start = keep->start;
	o->ndeadlocks = nc;
	return 0;
}

void waits_save_free(struct waits_save *keep)
{
	free(keep->tids);
	free(keep->waits);
	free(keep->members);
	free(keep->start);
	memset(keep, 0, sizeof(*keep));
}

static const struct thread_result *find_thread(const struct thread_result *all,
					       size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (all[i].thread->tid == tid)
			return &all[i];
	return NULL;
}

void print_wait_what(FILE *f, const struct stacksnap_wait *w)
{
	fputs(stacksnap_wait_kind__str(w->kind), f);
	if (w->object)
		fprintf(f, " 0x%" PRIx64, w->object);
	if (w->object_name)
		fprintf(f, " (%s)", w->object_name);
	if (w->fd >= 0)
		fprintf(f, " on fd %d", w->fd);
	if (w->file)
		fprintf(f, " (%s)", w->file);
	if (w->detail)
		fprintf(f, ", %s", w->detail);
}

/* "held by thread 1235 (t2)" / "held by process 812 (php-fpm)" */
static void print_holders(FILE *f, const struct stacksnap_wait *w,
			  const struct thread_result *all, size_t n)
{
	if (!w->nowners) {
		if (w->no_owner)
			fprintf(f, "; %s", w->no_owner);
		return;
	}
	fputs(w->kind == STACKSNAP_WAIT_JOIN ? "; joins " : "; held by ", f);
	for (size_t i = 0; i < w->nowners; i++) {
		const struct stacksnap_wait_owner *o = &w->owners[i];
		const struct thread_result *t = o->tid ? find_thread(all, n, o->tid) : NULL;

		if (i)
			fputs(", ", f);
		if (t)
			fprintf(f, "thread %d (%s)", (int)o->tid, t->thread->name);
		else if (o->tid)
			fprintf(f, "thread %d of process %d", (int)o->tid, (int)o->pid);
		else
			fprintf(f, "process %d", (int)o->pid);
	}
	if (w->stale)
		fputs(" (read after the capture: it may have changed hands)", f);
}

/* How long: lo..hi ns (a group's threads), 0 not known: not said. */
static void print_waited(FILE *f, uint64_t lo, uint64_t hi)
{
	char a[32], b[32];

	if (!lo || !hi)
		return;
	snprintf(a, sizeof(a), "%.1f", lo / 1e9);
	snprintf(b, sizeof(b), "%.1f", hi / 1e9);
	if (strcmp(a, b))
		fprintf(f, " (for %s-%s s)", a, b);
	else
		fprintf(f, " (for %s s)", a);
}

void print_wait_text_waited(FILE *f, const struct thread_result *r,
			    const struct thread_result *all, size_t n,
			    uint64_t waited_lo, uint64_t waited_hi)
{
	const struct stacksnap_wait *w = r->wait;

	if (!w)
		return;
	if (w->kind != STACKSNAP_WAIT_NONE) {
		fputs("    waits for: ", f);
		print_wait_what(f, w);
		print_holders(f, w, all, n);
		print_waited(f, waited_lo, waited_hi);
		fputc('\n', f);
		for (size_t i = 0; i < w->nkernel_frames; i++)
			fprintf(f, "    [kernel] %s\n", w->kernel_frames[i]);
	}
	/* A Java thread's monitors, as jstack -l lists them. */
	for (size_t i = 0; i < w->nheld; i++)
		fprintf(f, "    - locked <0x%016" PRIx64 "> (a %s)\n", w->held[i].object,
			w->held[i].object_type ? w->held[i].object_type : "class not known");
}

void print_wait_text(FILE *f, const struct thread_result *r,
		     const struct thread_result *all, size_t n)
{
	uint64_t ns = r->wait ? r->wait->waited_ns : 0;

	print_wait_text_waited(f, r, all, n, ns, ns);
}

bool print_wait_same(const struct thread_result *a, const struct thread_result *b)
{
	char *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	FILE *fa, *fb;
	bool same;

	if (!a->wait && !b->wait)
		return true;
	fa = open_memstream(&ta, &la);
	fb = open_memstream(&tb, &lb);
	/* How long each has waited is no difference: a group says the
	   range (print_text_grouped). */
	if (fa)
		print_wait_text_waited(fa, a, NULL, 0, 0, 0);
	if (fb)
		print_wait_text_waited(fb, b, NULL, 0, 0, 0);
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	/* Not compared (no memory): not grouped. */
	same = ta && tb && la == lb && !memcmp(ta, tb, la);
	free(ta);
	free(tb);
	return same;
}

void print_wait_json(FILE *f, const struct thread_result *r)
{
	const struct stacksnap_wait *w = r->wait;

	/* A Java thread's monitors held, whatever it waits for. */
	if (w && w->held_known) {
		fputs(",\"locked\":[", f);
		for (size_t i = 0; i < w->nheld; i++) {
			fprintf(f, "%s{\"object\":\"0x%" PRIx64 "\",\"object_type\":",
				i ? "," : "", w->held[i].object);
			json_str(f, w->held[i].object_type);
			fputc('}', f);
		}
		fputc(']', f);
	}
	fputs(",\"wait\":", f);
	if (!w || w->kind == STACKSNAP_WAIT_NONE) {
		fputs("null", f);
		return;
	}
	fputs("{\"kind\":", f);
	json_str(f, stacksnap_wait_kind__str(w->kind));
	if (w->object)
		fprintf(f, ",\"object\":\"0x%" PRIx64 "\"", w->object);
	else
		fputs(",\"object\":null", f);
	fputs(",\"object_name\":", f);
	json_str(f, w->object_name);
	fputs(",\"object_type\":", f);
	json_str(f, w->object_type);
	if (w->fd >= 0)
		fprintf(f, ",\"fd\":%d", w->fd);
	else
		fputs(",\"fd\":null", f);
	fputs(",\"file\":", f);
	json_str(f, w->file);
	if (w->syscall >= 0)
		fprintf(f, ",\"syscall\":%ld", w->syscall);
	else
		fputs(",\"syscall\":null", f);
	fputs(",\"detail\":", f);
	json_str(f, w->detail);
	fputs(",\"owners\":[", f);
	for (size_t i = 0; i < w->nowners; i++) {
		fprintf(f, "%s{\"pid\":%d,\"tid\":", i ? "," : "", (int)w->owners[i].pid);
		if (w->owners[i].tid)
			fprintf(f, "%d}", (int)w->owners[i].tid);
		else
			fputs("null}", f);
	}
	fputs("],\"no_owner\":", f);
	json_str(f, w->no_owner);
	fprintf(f, ",\"stale\":%s,\"frame\":", w->stale ? "true" : "false");
	if (w->frame >= 0)
		fprintf(f, "%d", w->frame);
	else
		fputs("null", f);
	fputs(",\"kernel_frames\":[", f);
	for (size_t i = 0; i < w->nkernel_frames; i++) {
		if (i)
			fputc(',', f);
		json_str(f, w->kernel_frames[i]);
	}
	fputs("],\"waited_ns\":", f);
	if (w->waited_ns)
		fprintf(f, "%" PRIu64, w->waited_ns);
	else
		fputs("null", f);
	fputc('}', f);
}

/* The frame that waits, as "#3 worker_a (deadlock.c:30)". */
static void print_wait_frame(FILE *f, const struct thread_result *r)
{
	int k = r->wait->frame;

	if (k < 0)
		return;
	for (size_t i = 0; i < r->nout; i++) {
		const struct out_frame *l = &r->out[i];

		if (l->frame != &r->frames[k] || l->sym.inlined)
			continue;
		fprintf(f, "\n        at #%d %s", k, l->sym.function ? l->sym.function : "??");
		if (l->sym.file)
			fprintf(f, " (%s:%d)", l->sym.file, l->sym.line);
		else if (l->sym.module)
			fprintf(f, " (%s)", l->sym.module);
		break;
	}
	/* The runtime's frame that made the call (a Python function taking
	 * an RLock): what the reader of a Python or Java program looks for. */
	for (size_t i = 0; i < r->nrframes; i++) {
		const struct stacksnap_runtime_frame *rf = &r->rframes[i];

		if ((int)rf->native_index <= k || (rf->flags & STACKSNAP_RFRAME_VM))
			continue;
		fprintf(f, "\n        called from %s", rf->function);
		if (rf->file && rf->line)
			fprintf(f, " (%s:%u)", rf->file, rf->line);
		else if (rf->file)
			fprintf(f, " (%s)", rf->file);
		fprintf(f, " %s", rframe_tag(rf));
		return;
	}
}

void print_deadlocks_text(FILE *f, const struct stacksnap_waits *w,
			  const struct thread_result *res, size_t n)
{
	size_t nd = stacksnap_waits__deadlock_count(w);

	for (size_t d = 0; d < nd; d++) {
		const struct stacksnap_wait_owner *m;
		size_t len;

		if (stacksnap_waits__deadlock(w, d, &m, &len))
			continue;
		fprintf(f, "\nDeadlock %zu of %zu: %zu threads wait for each other:\n",
			d + 1, nd, len);
		for (size_t i = 0; i < len; i++) {
			const struct thread_result *r = find_thread(res, n, m[i].tid);

			if (!r || !r->wait)
				continue;
			fprintf(f, "  thread %d (%s)", (int)m[i].tid, r->thread->name);
			if (r->rname)
				fprintf(f, ", %s thread \"%s\"",
					r->rname_java ? "Java" : "Python", r->rname);
			fputs(" waits for ", f);
			print_wait_what(f, r->wait);
			print_holders(f, r->wait, res, n);
			print_wait_frame(f, r);
			fputc('\n', f);
		}
	}
}

void print_deadlocks_json(FILE *f, const struct stacksnap_waits *w)
{
	size_t nd = stacksnap_waits__deadlock_count(w);

	fputs(",\"deadlocks\":[", f);
	for (size_t d = 0; d < nd; d++) {
		const struct stacksnap_wait_owner *m;
		size_t len;

		if (stacksnap_waits__deadlock(w, d, &m, &len))
			continue;
		fprintf(f, "%s[", d ? "," : "");
		for (size_t i = 0; i < len; i++)
			fprintf(f, "%s{\"pid\":%d,\"tid\":%d}", i ? "," : "",
				(int)m[i].pid, (int)m[i].tid);
		fputc(']', f);
	}
	fputc(']', f);
}

/* s with tabs and newlines made spaces (one field of an edge line). */
static void one_field(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n')
			*s = ' ';
}

void waits_write_edges(int fd, pid_t pid, const struct thread_result *res, size_t n)
{
	char *buf = NULL, *what = NULL;
	size_t len = 0, wlen = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct stacksnap_wait *w = res[i].wait;
		FILE *m;

		if (!w || w->kind == STACKSNAP_WAIT_NONE || !(m = open_memstream(&what, &wlen)))
			continue;
		print_wait_what(m, w);
		print_holders(m, w, res, n);
		fclose(m);
		one_field(what);
		fprintf(f, "W\t%d\t%d\t%s\t%s\t", (int)pid, (int)res[i].thread->tid,
			res[i].thread->name, stacksnap_wait_kind__str(w->kind));
		for (size_t k = 0; k < w->nowners; k++)
			fprintf(f, "%s%d:%d", k ? "," : "", (int)w->owners[k].pid,
				(int)w->owners[k].tid);
		fprintf(f, "\t%s\n", what);
		free(what);
		what = NULL;
	}
	fclose(f);
	for (size_t off = 0; off < len;) {
		ssize_t r = write(fd, buf + off, len - off);

		if (r <= 0)
			break;
		off += (size_t)r;
	}
	free(buf);
}
