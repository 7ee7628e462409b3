/* hotspot_locks.c - Java's monitors and j.u.c locks in a live JVM, read
 * through the vmStructs tables as the Serviceability Agent reads them:
 * JavaThread::_current_pending_monitor / _current_waiting_monitor, the
 * ObjectMonitor's _object and _owner (a JavaThread* on JDK 17 and 21, an
 * owner id (JavaThread::_monitor_owner_id) from JDK 24, a BasicLock* on
 * the owner's stack for a stack-locked monitor inflated by a contender,
 * anonymous for a lightweight-locked one: the oop is then on the owner's
 * lock stack), java.lang.Thread's parkBlocker and eetop and
 * AbstractOwnableSynchronizer's exclusiveOwnerThread from the classes'
 * field tables. Every read is of a fixed size and checked. */
#define _GNU_SOURCE
#include "runtime/java/hotspot_locks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

/* Klass::_super links followed, at most. */
#define HOTSPOT_MAX_SUPERS 32

static int rd(struct stacksnap_mem *mem, uint64_t addr, void *v, size_t n)
{
	return mem_read(mem, addr, v, n) ? -EFAULT : 0;
}

/* A field's offset (or a static's address); false when absent. */
static bool field(const struct hotspot_structs *hs, const char *type, const char *name,
		  uint64_t *out)
{
	const struct hotspot_field *f = hotspot_structs__field(hs, type, name);

	if (f)
		*out = f->is_static ? f->address : f->offset;
	return f != NULL;
}

int hotspot_locks__init(struct hotspot_locks *hl, const struct hotspot_structs *hs,
			struct hotspot_threads *ht)
{
	uint64_t in_use, head;
	int64_t mask, locked;

	memset(hl, 0, sizeof(*hl));
	hl->ht = ht;
	hl->mem = ht->mem;
	if (!field(hs, "JavaThread", "_current_pending_monitor", &hl->jt_pending) ||
	    !field(hs, "JavaThread", "_current_waiting_monitor", &hl->jt_waiting) ||
	    !field(hs, "JavaThread", "_stack_base", &hl->jt_stack_base) ||
	    !field(hs, "JavaThread", "_stack_size", &hl->jt_stack_size) ||
	    !field(hs, "ObjectMonitor", "_object", &hl->om_object) ||
	    !field(hs, "ObjectMonitor", "_owner", &hl->om_owner) ||
	    !field(hs, "ObjectMonitor", "_next_om", &hl->om_next) ||
	    !field(hs, "ObjectSynchronizer", "_in_use_list", &in_use) ||
	    !field(hs, "MonitorList", "_head", &head) ||
	    !field(hs, "Universe", "_collectedHeap", &hl->heap_static) ||
	    !field(hs, "CollectedHeap", "_reserved", &hl->heap_reserved) ||
	    !field(hs, "MemRegion", "_start", &hl->mr_start) ||
	    !field(hs, "MemRegion", "_word_size", &hl->mr_words) ||
	    !field(hs, "Klass", "_super", &hl->klass_super) ||
	    !hotspot_structs__constant(hs, "markWord::lock_mask", &mask) ||
	    !hotspot_structs__constant(hs, "markWord::locked_value", &locked))
		return -ENOENT;
	/* The stack-lock test below is mark & 3 == 0: the tables must say
	   so. */
	if (mask != 3 || locked != 0)
		return -EPROTO;
	hl->in_use_head = in_use + head;
	/* JDK 21+: the lock stack; _top is a byte offset from the
	   JavaThread. */
	if (field(hs, "JavaThread", "_lock_stack", &hl->jt_lock_stack) &&
	    (!field(hs, "LockStack", "_top", &hl->ls_top) ||
	     !field(hs, "LockStack", "_base[0]", &hl->ls_base)))
		hl->jt_lock_stack = 0;
	/* JDK 24+: owners are ids. */
	field(hs, "JavaThread", "_monitor_owner_id", &hl->jt_owner_id);
	hl->has_stack_locker = field(hs, "ObjectMonitor", "_stack_locker",
				     &hl->om_stack_locker);
	if (!hotspot_structs__constant(hs, "ObjectMonitor::ANONYMOUS_OWNER",
				       &hl->anonymous_owner))
		/* JDK 21's anonymous owner, (void*)1, is not in its tables;
		   JDK 17 has none (no lock stack). */
		hl->anonymous_owner = hl->jt_lock_stack ? 1 : -1;
	if (!hotspot_structs__constant(hs, "LM_LEGACY", &hl->lm_legacy))
		hl->lm_legacy = -1;
	if (!hotspot_structs__constant(hs, "ObjectMonitor::DEFLATER_MARKER",
				       &hl->deflater_marker))
		hl->deflater_marker = -1;
	return 0;
}

static int prepare(struct hotspot_locks *hl)
{
	struct hotspot_threads *ht = hl->ht;
	uint64_t heap, start, words;
	int64_t mode = -1;
	int err;

	if (hl->prepared)
		return hl->prepare_err;
	hl->prepared = true;
	hl->prepare_err = -EPROTO;
	if ((err = hotspot_threads__prepare(ht)))
		return hl->prepare_err = err;
	if (rd(hl->mem, hl->heap_static, &heap, 8) || !heap ||
	    rd(hl->mem, heap + hl->heap_reserved + hl->mr_start, &start, 8) ||
	    rd(hl->mem, heap + hl->heap_reserved + hl->mr_words, &words, 8) ||
	    words > (UINT64_MAX - start) / 8)
		return hl->prepare_err;
	hl->heap_lo = start;
	hl->heap_hi = start + words * 8;
	/* LockingMode (JDK 21+; JDK 17 has only stack locking). */
	if (hotspot_threads__flag(ht, "LockingMode", &mode) == 0)
		hl->stack_locking = hl->lm_legacy >= 0 && mode == hl->lm_legacy;
	else
		hl->stack_locking = !hl->jt_lock_stack;
	{
		uint64_t ik;

		if (rd(hl->mem, ht->thread_klass, &ik, 8) ||
		    hotspot_threads__field_offset(ht, ik, "parkBlocker", "Ljava/lang/Object;",
						  &hl->thread_park_blocker) ||
		    hotspot_threads__field_offset(ht, ik, "eetop", "J", &hl->thread_eetop))
			return hl->prepare_err;
	}
	hl->prepare_err = 0;
	return 0;
}

bool hotspot_locks__in_heap(const struct hotspot_locks *hl, uint64_t v)
{
	return !(v & 7) && v >= hl->heap_lo && v < hl->heap_hi;
}

/* The lock stack's oops of JavaThread jt. */
static void read_lock_stack(struct hotspot_locks *hl, struct hotspot_jthread *t)
{
	uint64_t ls = t->jt + hl->jt_lock_stack, base = hl->jt_lock_stack + hl->ls_base;
	uint32_t top;
	size_t n;

	if (!hl->jt_lock_stack || rd(hl->mem, ls + hl->ls_top, &top, 4) || top < base ||
	    (top - base) % 8)
		return;
	n = (top - base) / 8;
	if (n > HOTSPOT_LOCK_STACK_MAX)
		return; /* not a lock stack: torn or another layout */
	if (n && rd(hl->mem, t->jt + base, t->lock_stack, 8 * n))
		return;
	for (size_t i = 0; i < n; i++)
		if (hotspot_locks__in_heap(hl, t->lock_stack[i]))
			t->lock_stack[t->nlock_stack++] = t->lock_stack[i];
}

int hotspot_locks__threads(struct hotspot_locks *hl, struct hotspot_jthread **out,
			   size_t *nout)
{
	struct hotspot_jthread *ts;
	uint64_t threads;
	uint32_t n;
	size_t k = 0;
	int err;

	*out = NULL;
	*nout = 0;
	if ((err = prepare(hl)) || (err = hotspot_threads__list(hl->ht, &threads, &n)))
		return err;
	if (!(ts = calloc(n ? n : 1, sizeof(*ts))))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct hotspot_jthread *t = &ts[k];
		uint64_t base, size;

		if (hotspot_threads__thread(hl->ht, threads, i, &t->jt, &t->tid, &t->obj) ||
		    rd(hl->mem, t->jt + hl->jt_pending, &t->pending, 8) ||
		    rd(hl->mem, t->jt + hl->jt_waiting, &t->waiting, 8) ||
		    rd(hl->mem, t->jt + hl->jt_stack_base, &base, 8) ||
		    rd(hl->mem, t->jt + hl->jt_stack_size, &size, 8)) {
			memset(t, 0, sizeof(*t));
			continue;
		}
		if (size <= base) {
			t->stack_lo = base - size;
			t->stack_hi = base;
		}
		if (hl->jt_owner_id &&
		    rd(hl->mem, t->jt + hl->jt_owner_id, &t->owner_id, 8))
			t->owner_id = 0;
		read_lock_stack(hl, t);
		k++;
	}
	*out = ts;
	*nout = k;
	return 0;
}

int hotspot_locks__monitor(struct hotspot_locks *hl, uint64_t mon, uint64_t *obj,
			   uint64_t *owner)
{
	uint64_t slot;

	*obj = 0;
	/* _object is a WeakHandle: a pointer to the oop's storage slot,
	   which holds the full reference. */
	if (rd(hl->mem, mon + hl->om_object, &slot, 8) || !slot ||
	    rd(hl->mem, slot, obj, 8) || rd(hl->mem, mon + hl->om_owner, owner, 8))
		return -EFAULT;
	/* JDK 24+ legacy locking: an anonymous owner's BasicLock. */
	if (hl->has_stack_locker && (int64_t)*owner == hl->anonymous_owner) {
		uint64_t locker;

		if (!rd(hl->mem, mon + hl->om_stack_locker, &locker, 8) && locker)
			*owner = locker;
	}
	return 0;
}

int hotspot_locks__owner(const struct hotspot_locks *hl, uint64_t owner, uint64_t obj,
			 const struct hotspot_jthread *ts, size_t n, const char **why)
{
	if (!owner) {
		*why = "no thread owns it now (released since the capture)";
		return -1;
	}
	if ((int64_t)owner == hl->deflater_marker) {
		*why = "the monitor is being deflated (no owner)";
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (hl->jt_owner_id ? ts[i].owner_id && (uint64_t)ts[i].owner_id == owner
				    : ts[i].jt == owner)
			return (int)i;
	/* Anonymous: the object is on its owner's lock stack. */
	if ((int64_t)owner == hl->anonymous_owner) {
		for (size_t i = 0; i < n; i++)
			for (uint32_t k = 0; k < ts[i].nlock_stack; k++)
				if (ts[i].lock_stack[k] == obj)
					return (int)i;
		*why = "its owner is anonymous and no thread's lock stack holds it";
		return -1;
	}
	/* A BasicLock on the owner's stack (stack-locked, then inflated). */
	for (size_t i = 0; i < n; i++)
		if (owner >= ts[i].stack_lo && owner < ts[i].stack_hi)
			return (int)i;
	*why = "its owner is no thread of this JVM now (it exited?)";
	return -1;
}

static int klass_name(struct hotspot_locks *hl, uint64_t klass, char *buf, size_t size)
{
	uint64_t sym;

	if (rd(hl->mem, klass + hl->ht->klass_name, &sym, 8) || !sym)
		return -EFAULT;
	return hotspot_code__symbol(hl->ht->hc, sym, buf, size);
}

int hotspot_locks__class_name(struct hotspot_locks *hl, uint64_t obj, char *buf,
			      size_t size)
{
	uint64_t klass;
	int err;

	if ((err = prepare(hl)) || (err = hotspot_threads__klass(hl->ht, obj, &klass)) ||
	    (err = klass_name(hl, klass, buf, size)))
		return err;
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
	return 0;
}

int hotspot_locks__park_blocker(struct hotspot_locks *hl, uint64_t thread_obj,
				uint64_t *blocker)
{
	int err;

	*blocker = 0;
	if ((err = prepare(hl)))
		return err;
	return hotspot_threads__read_ref(hl->ht, thread_obj + hl->thread_park_blocker,
					 blocker);
}

int hotspot_locks__exclusive_owner(struct hotspot_locks *hl, uint64_t blocker,
				   uint64_t *thread_obj)
{
	static const char aos[] = "java/util/concurrent/locks/AbstractOwnableSynchronizer";
	uint64_t k;
	int err;

	*thread_obj = 0;
	if ((err = prepare(hl)) || (err = hotspot_threads__klass(hl->ht, blocker, &k)))
		return err;
	/* Its class or a super is AbstractOwnableSynchronizer (by name). */
	for (int depth = 0;; depth++) {
		char name[sizeof(aos) + 1];

		if (!k || depth == HOTSPOT_MAX_SUPERS)
			return -ENOENT;
		if (k == hl->aos_klass)
			break;
		if (!klass_name(hl, k, name, sizeof(name)) && !strcmp(name, aos)) {
			if ((err = hotspot_threads__field_offset(
				     hl->ht, k, "exclusiveOwnerThread",
				     "Ljava/lang/Thread;", &hl->aos_owner)))
				return err == -ENOENT ? -EPROTO : err;
			hl->aos_klass = k;
			break;
		}
		if (rd(hl->mem, k + hl->klass_super, &k, 8))
			return -EFAULT;
	}
	return hotspot_threads__read_ref(hl->ht, blocker + hl->aos_owner, thread_obj);
}

int hotspot_locks__eetop(struct hotspot_locks *hl, uint64_t thread_obj, uint64_t *jt)
{
	int err;

	*jt = 0;
	if ((err = prepare(hl)))
		return err;
	return rd(hl->mem, thread_obj + hl->thread_eetop, jt, 8);
}

int hotspot_locks__each_monitor(struct hotspot_locks *hl,
				void (*fn)(void *ctx, uint64_t obj, uint64_t owner),
				void *ctx)
{
	uint64_t mon, mark = 0;

	if (rd(hl->mem, hl->in_use_head, &mon, 8))
		return -EFAULT;
	for (size_t i = 0; mon && i < HOTSPOT_MAX_MONITORS; i++) {
		uint64_t obj, owner, next;

		if (rd(hl->mem, mon + hl->om_next, &next, 8))
			return -EFAULT;
		if (!hotspot_locks__monitor(hl, mon, &obj, &owner) && obj && owner)
			fn(ctx, obj, owner);
		/* A list that comes back to a monitor (torn, or not a list):
		   the monitor marked at each power of two seen again. */
		if (next == mark)
			return -EPROTO;
		if (!(i & (i + 1)))
			mark = mon;
		mon = next;
	}
	return 0;
}

bool hotspot_locks__stack_locked(struct hotspot_locks *hl, uint64_t obj, uint64_t lo,
				 uint64_t hi)
{
	uint64_t mark;

	return hl->stack_locking && !rd(hl->mem, obj, &mark, 8) && !(mark & 3) &&
	       mark >= lo && mark < hi;
}
