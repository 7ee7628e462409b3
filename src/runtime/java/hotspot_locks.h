/* hotspot_locks.h - Java's locks in a live JVM, read as the Serviceability
 * Agent and jstack read them (hotspot_locks.c): each JavaThread's monitor
 * it enters or waits on, its java.lang.Thread's parkBlocker, who owns a
 * monitor (an ObjectMonitor's _owner: a JavaThread, a BasicLock on the
 * owner's stack, an owner id, or anonymous with the object on the
 * owner's lock stack), an object's class, and the monitors a thread
 * holds. Offsets from the vmStructs tables and the classes' own field
 * tables, never per version. */
#ifndef SS_RUNTIME_JAVA_HOTSPOT_LOCKS_H
#define SS_RUNTIME_JAVA_HOTSPOT_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/java/hotspot_structs.h"
#include "runtime/java/hotspot_threads.h"

/* A lock stack's entries kept, at most (HotSpot's has 8). */
#define HOTSPOT_LOCK_STACK_MAX 16
/* Monitors of the in-use list walked, at most. */
#define HOTSPOT_MAX_MONITORS 200000

/* One JavaThread as the locks see it. */
struct hotspot_jthread {
	int32_t tid;			/* the OS thread */
	uint64_t jt;			/* the JavaThread */
	uint64_t obj;			/* its java.lang.Thread; 0 not read */
	uint64_t stack_lo, stack_hi;	/* its stack, [lo, hi) */
	uint64_t pending;		/* ObjectMonitor* it waits to enter; 0 */
	uint64_t waiting;		/* ObjectMonitor* of its Object.wait(); 0 */
	int64_t owner_id;		/* JDK 24+: the id monitors it owns say */
	uint64_t lock_stack[HOTSPOT_LOCK_STACK_MAX]; /* JDK 21+: oops it
							fast-locked */
	uint32_t nlock_stack;
};

/* Offsets (init), then what prepare reads once: the heap's range, the
 * locking mode, java.lang.Thread's and AbstractOwnableSynchronizer's
 * field offsets. */
struct hotspot_locks {
	struct hotspot_threads *ht;	/* names, references, classes; not owned */
	struct stacksnap_mem *mem;
	uint64_t jt_pending, jt_waiting, jt_stack_base, jt_stack_size;
	uint64_t jt_lock_stack, ls_top, ls_base;	/* 0: no lock stack */
	uint64_t jt_owner_id;		/* 0: owners are pointers (JDK 17, 21) */
	uint64_t om_object, om_owner, om_next, om_stack_locker;
	bool has_stack_locker;
	uint64_t in_use_head;		/* &ObjectSynchronizer::_in_use_list._head */
	uint64_t heap_static, heap_reserved, mr_start, mr_words;
	uint64_t klass_super;
	int64_t anonymous_owner, deflater_marker; /* -1: none */
	int64_t lm_legacy;		/* LockingMode's LM_LEGACY; -1 none */
	/* prepared: */
	bool prepared;
	int prepare_err;
	bool stack_locking;		/* legacy locking: a stack-locked object's
					   mark word points at its BasicLock */
	uint64_t heap_lo, heap_hi;
	uint64_t thread_park_blocker, thread_eetop;
	uint64_t aos_klass, aos_owner;	/* found at the first blocker */
};

/* 0, or -ENOENT when the tables lack an entry the locks need. */
int hotspot_locks__init(struct hotspot_locks *hl, const struct hotspot_structs *hs,
			struct hotspot_threads *ht);
/* Every JavaThread now (*out malloc'ed; threads that do not read are
 * left out). 0 or -errno (the layout did not read). */
int hotspot_locks__threads(struct hotspot_locks *hl, struct hotspot_jthread **out,
			   size_t *n);
/* The object of ObjectMonitor mon and its _owner word. 0 or -EFAULT. */
int hotspot_locks__monitor(struct hotspot_locks *hl, uint64_t mon, uint64_t *obj,
			   uint64_t *owner);
/* The thread (index into ts) that owns a monitor whose _owner is owner,
 * whose object is obj; -1 with *why set when none is found. */
int hotspot_locks__owner(const struct hotspot_locks *hl, uint64_t owner, uint64_t obj,
			 const struct hotspot_jthread *ts, size_t n, const char **why);
/* The class of the object at obj as jstack names it
 * ("java.util.concurrent.locks.ReentrantLock$NonfairSync"). 0 or -errno. */
int hotspot_locks__class_name(struct hotspot_locks *hl, uint64_t obj, char *buf,
			      size_t size);
/* The java.lang.Thread thread_obj's parkBlocker (0 none). 0 or -errno. */
int hotspot_locks__park_blocker(struct hotspot_locks *hl, uint64_t thread_obj,
				uint64_t *blocker);
/* The exclusiveOwnerThread of blocker when it is an
 * AbstractOwnableSynchronizer (*thread_obj 0: none owns it): 0, -ENOENT
 * (not one) or -errno. */
int hotspot_locks__exclusive_owner(struct hotspot_locks *hl, uint64_t blocker,
				   uint64_t *thread_obj);
/* The JavaThread of a java.lang.Thread (its eetop; 0 not started or
 * ended). 0 or -errno. */
int hotspot_locks__eetop(struct hotspot_locks *hl, uint64_t thread_obj, uint64_t *jt);
/* Calls fn for every inflated monitor in use (its object and _owner), at
 * most HOTSPOT_MAX_MONITORS. 0 or -errno. */
int hotspot_locks__each_monitor(struct hotspot_locks *hl,
				void (*fn)(void *ctx, uint64_t obj, uint64_t owner),
				void *ctx);
/* Whether v may be an object: 8-aligned, inside the Java heap. */
bool hotspot_locks__in_heap(const struct hotspot_locks *hl, uint64_t v);
/* Legacy (stack) locking: whether the object at obj is stack-locked by a
 * BasicLock in [lo, hi) (its mark word points there). */
bool hotspot_locks__stack_locked(struct hotspot_locks *hl, uint64_t obj, uint64_t lo,
				 uint64_t hi);

#endif
