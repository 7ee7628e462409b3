/* wait_java.c - a HotSpot JVM's locks: a Java thread asleep waiting to
 * enter a monitor (JavaThread::_current_pending_monitor; its owner the
 * ObjectMonitor's, as jstack names it), in Object.wait() (no owner), or
 * parked with a blocker (LockSupport.park: its owner the blocker's
 * AbstractOwnableSynchronizer.exclusiveOwnerThread), and the monitors
 * every Java thread holds ("- locked"). The JVM is read after the thaw
 * through its own vmStructs tables (runtime/java/hotspot_locks.c), once
 * per graph, at the first thread asked about. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waits_internal.h"
#include "addrspace/addrspace.h"
#include "base/vec.h"
#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_locks.h"
#include "runtime/java/hotspot_structs.h"
#include "runtime/java/hotspot_threads.h"

/* Object candidates tried per thread's stack (legacy stack locking),
 * and in all (each costs a read of the process). */
#define JAVA_SCAN_MAX 8192
#define JAVA_SCAN_TOTAL 262144
/* Monitors one thread is said to hold, at most. */
#define JAVA_HELD_MAX 256

/* Invariant: ok when the tables, code, threads and locks read; then
 * ts[0, n) are the JVM's threads as read at the first classify. */
struct java_waits {
	bool ok;
	const char *why;		/* why not ok (for a log line) */
	struct hotspot_structs hs;
	struct hotspot_code hc;
	struct hotspot_threads ht;
	struct hotspot_locks hl;
	struct hotspot_jthread *ts;
	size_t n;
};

/* libjvm.so's first mapping in the address space, or NULL. */
static const struct as_map *libjvm(const struct stacksnap_addrspace *as)
{
	for (size_t i = 0; as && i < as->n; i++) {
		const char *p = as->maps[i].path, *base;

		if (p && (base = strrchr(p, '/')) && !strcmp(base, "/libjvm.so"))
			return &as->maps[i];
	}
	return NULL;
}

static struct java_waits *java_open(struct stacksnap_waits *w)
{
	const struct as_map *m;
	struct java_waits *j;
	char path[4200];
	int err;

	if (w->java_tried)
		return w->java;
	w->java_tried = true;
	if (w->o.saved || !w->mem || !(m = libjvm(w->as)))
		return NULL;
	if (!(j = calloc(1, sizeof(*j))))
		return NULL;
	w->java = j;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)w->pid, m->path);
	if ((err = hotspot_structs__read(w->mem, path, m->start, m->offset, w->log, &j->hs))) {
		j->why = "its vmStructs tables did not read";
		return j;
	}
	if (hotspot_code__init(&j->hc, &j->hs, w->mem, w->log)) {
		memset(&j->hc, 0, sizeof(j->hc));
		j->why = "its code cache's layout did not read";
		return j;
	}
	if (hotspot_threads__init(&j->ht, &j->hs, &j->hc) ||
	    hotspot_locks__init(&j->hl, &j->hs, &j->ht)) {
		j->why = "its vmStructs tables lack the locks' entries";
		return j;
	}
	if ((err = hotspot_locks__threads(&j->hl, &j->ts, &j->n))) {
		j->why = "its thread list did not read";
		return j;
	}
	j->ok = true;
	return j;
}

static const struct hotspot_jthread *java_thread(const struct java_waits *j, pid_t tid)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->ts[i].tid == tid)
			return &j->ts[i];
	return NULL;
}

/* The object's class, kept with the graph; NULL when it does not read. */
static const char *class_of(struct stacksnap_waits *w, struct java_waits *j, uint64_t obj)
{
	char name[512];

	if (hotspot_locks__class_name(&j->hl, obj, name, sizeof(name)))
		return NULL;
	return waits__strf(w, "%s", name);
}

/* "waiting to lock <0x000000071a4b3c28> (a java.lang.Object)", as jstack. */
static const char *jstack_line(struct stacksnap_waits *w, const char *what, uint64_t obj,
			       const char *type)
{
	return waits__strf(w, "%s <0x%016" PRIx64 "> (a %s)", what, obj,
			   type ? type : "class not known");
}

static bool java_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	struct java_waits *j;
	const struct hotspot_jthread *jt;

	if (t->nr != NR_FUTEX || !(j = java_open(w)) || !j->ok ||
	    !(jt = java_thread(j, t->th->tid)))
		return false;
	if (jt->pending || jt->waiting) {
		t->pub.kind = STACKSNAP_WAIT_JAVA_MONITOR;
		return true;
	}
	/* Parked (Unsafe.park -> Parker::park) by LockSupport.park(blocker):
	   a thread parked without a blocker names nothing jstack would. */
	if (waits__frame_has(t, "Parker::park") && jt->obj) {
		uint64_t blocker;

		if (!hotspot_locks__park_blocker(&j->hl, jt->obj, &blocker) && blocker) {
			t->pub.kind = STACKSNAP_WAIT_JAVA_LOCK;
			t->pub.object = blocker;
			return true;
		}
	}
	return false;
}

static int no_owner(struct stacksnap_waits *w, struct wait_thread *t, const char *why)
{
	t->pub.no_owner = waits__strf(w, "owner not known: %s", why);
	return t->pub.no_owner ? 0 : -ENOMEM;
}

/* The JavaThread found holding what t waits for: an edge, unless it is
 * t itself (a read after the thaw that met the lock changing hands). */
static int java_owner(struct stacksnap_waits *w, struct wait_thread *t, int32_t tid)
{
	if (tid == t->th->tid) {
		t->pub.stale = true;
		return no_owner(w, t, "it reads as held by the waiting thread itself "
				"(it changed hands since the capture)");
	}
	return waits__name_owner(w, t, (uint32_t)tid);
}

static int monitor_owners(struct stacksnap_waits *w, struct java_waits *j,
			  struct wait_thread *t, const struct hotspot_jthread *jt)
{
	uint64_t obj, owner;
	const char *why;
	int at;

	if (hotspot_locks__monitor(&j->hl, jt->pending ? jt->pending : jt->waiting, &obj,
				   &owner) || !obj) {
		t->pub.detail = jt->pending ? "waiting to lock a monitor" : "in Object.wait()";
		return no_owner(w, t, "its ObjectMonitor did not read");
	}
	t->pub.object = obj;
	t->pub.object_type = class_of(w, j, obj);
	if (!jt->pending) {
		t->pub.detail = jstack_line(w, "waiting on", obj, t->pub.object_type);
		t->pub.no_owner = "Object.wait(): no thread holds what it waits for (a "
				  "notify, notifyAll or its timeout wakes it)";
		return 0;
	}
	t->pub.detail = jstack_line(w, "waiting to lock", obj, t->pub.object_type);
	if ((at = hotspot_locks__owner(&j->hl, owner, obj, j->ts, j->n, &why)) < 0) {
		/* Released since the capture: the owner is not known now. */
		t->pub.stale = !owner;
		return no_owner(w, t, why);
	}
	return java_owner(w, t, j->ts[at].tid);
}

static int lock_owners(struct stacksnap_waits *w, struct java_waits *j,
		       struct wait_thread *t)
{
	uint64_t blocker = t->pub.object, owner_obj, owner_jt;
	int err;

	t->pub.object_type = class_of(w, j, blocker);
	t->pub.detail = jstack_line(w, "parking to wait for ", blocker, t->pub.object_type);
	err = hotspot_locks__exclusive_owner(&j->hl, blocker, &owner_obj);
	if (err == -ENOENT) {
		t->pub.no_owner = "its blocker is no AbstractOwnableSynchronizer: it keeps "
				  "no owner (a Condition, a FutureTask...)";
		return 0;
	}
	if (err)
		return no_owner(w, t, "the blocker's class or fields did not read");
	if (!owner_obj) {
		t->pub.no_owner = "no exclusive owner: a shared synchronizer (a read lock, "
				  "CountDownLatch, Semaphore) keeps none, or it was "
				  "released since the capture";
		return 0;
	}
	if (hotspot_locks__eetop(&j->hl, owner_obj, &owner_jt))
		return no_owner(w, t, "the owner's java.lang.Thread did not read");
	for (size_t i = 0; owner_jt && i < j->n; i++)
		if (j->ts[i].jt == owner_jt)
			return java_owner(w, t, j->ts[i].tid);
	return no_owner(w, t, "its owner's java.lang.Thread has no running JavaThread "
			"(it ended holding the lock)");
}

static int java_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	struct java_waits *j = w->java;
	const struct hotspot_jthread *jt = java_thread(j, t->th->tid);

	if (t->pub.kind == STACKSNAP_WAIT_JAVA_LOCK)
		return lock_owners(w, j, t);
	return monitor_owners(w, j, t, jt);
}

/* The objects one thread holds, at most JAVA_HELD_MAX. */
struct held_objs {
	uint64_t *v;
	size_t n, cap;
};

/* The monitors each thread holds, gathered: per JVM thread, objects. */
struct held_set {
	struct stacksnap_waits *w;
	struct java_waits *j;
	struct held_objs *t;	/* per thread of j->ts */
	size_t scanned;		/* stack words read as objects, all threads */
	bool nomem;
};

static void held_add(struct held_set *h, size_t i, uint64_t obj)
{
	struct held_objs *o = &h->t[i];
	uint64_t *slot;

	for (size_t k = 0; k < o->n; k++)
		if (o->v[k] == obj)
			return;
	if (o->n >= JAVA_HELD_MAX)
		return;
	if (!(slot = VEC_PUSH(o->v, o->n, o->cap)))
		h->nomem = true;
	else
		*slot = obj;
}

static void held_monitor(void *ctx, uint64_t obj, uint64_t owner)
{
	struct held_set *h = ctx;
	const char *why;
	int at = hotspot_locks__owner(&h->j->hl, owner, obj, h->j->ts, h->j->n, &why);

	if (at >= 0)
		held_add(h, (size_t)at, obj);
}

/* Legacy locking: the objects on thread i's captured stack whose mark
 * word points into its stack. */
static void held_stack_locked(struct held_set *h, size_t i, const struct wait_thread *t)
{
	const struct stacksnap_thread *th = t->th;
	const struct hotspot_jthread *jt = &h->j->ts[i];
	size_t tried = 0;

	if (!th->stack || !h->j->hl.stack_locking)
		return;
	for (size_t off = (8 - (th->stack_base & 7)) & 7; off + 8 <= th->stack_len &&
	     tried < JAVA_SCAN_MAX && h->scanned < JAVA_SCAN_TOTAL; off += 8) {
		uint64_t v;

		memcpy(&v, th->stack + off, 8);
		if (!hotspot_locks__in_heap(&h->j->hl, v))
			continue;
		tried++;
		h->scanned++;
		if (hotspot_locks__stack_locked(&h->j->hl, v, jt->stack_lo, jt->stack_hi))
			held_add(h, i, v);
	}
}

/* Gives every Java thread of the graph the monitors it holds. */
static int java_after(struct stacksnap_waits *w)
{
	struct java_waits *j = java_open(w);
	struct held_set h = { w, j, NULL, 0, false };
	int err = 0;

	if (!j || !j->ok || !j->n)
		return 0;
	if (!(h.t = calloc(j->n, sizeof(*h.t))))
		return -ENOMEM;
	/* Innermost first: the lock stack's top is its newest. */
	for (size_t i = 0; i < j->n; i++)
		for (uint32_t k = j->ts[i].nlock_stack; k-- > 0;)
			held_add(&h, i, j->ts[i].lock_stack[k]);
	for (size_t i = 0; i < j->n; i++) {
		const struct wait_thread *t = waits__find(w, j->ts[i].tid);

		if (t)
			held_stack_locked(&h, i, t);
	}
	/* A list that does not read leaves the others said. */
	hotspot_locks__each_monitor(&j->hl, held_monitor, &h);
	if (h.nomem) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < j->n; i++) {
		struct wait_thread *t = waits__find(w, j->ts[i].tid);
		struct stacksnap_wait_held *held;
		char **keep;

		if (!t)
			continue;
		t->pub.held_known = true;
		if (!h.t[i].n)
			continue;
		if (!(held = calloc(h.t[i].n, sizeof(*held))) ||
		    !(keep = VEC_PUSH(w->strs, w->nstrs, w->strs_cap))) {
			free(held);
			err = -ENOMEM;
			goto out;
		}
		*keep = (char *)held;
		for (size_t k = 0; k < h.t[i].n; k++) {
			held[k].object = h.t[i].v[k];
			held[k].object_type = class_of(w, j, held[k].object);
		}
		t->pub.held = held;
		t->pub.nheld = h.t[i].n;
	}
out:
	for (size_t i = 0; i < j->n; i++)
		free(h.t[i].v);
	free(h.t);
	return err;
}

static void java_free(struct stacksnap_waits *w)
{
	struct java_waits *j = w->java;

	if (!j)
		return;
	free(j->ts);
	hotspot_code__free(&j->hc);
	hotspot_structs__free(&j->hs);
	free(j);
	w->java = NULL;
}

const struct wait_source_ops wait_java_ops = {
	.name = "java",
	.classify = java_classify,
	.owners = java_owners,
	.after = java_after,
	.free = java_free,
};
