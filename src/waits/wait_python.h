/* wait_python.h - finding a CPython lock object among the words of a
 * waiting thread (wait_python.c), apart so that a fuzz target can drive it
 * with made-up memory. */
#ifndef SS_WAITS_WAIT_PYTHON_H
#define SS_WAITS_WAIT_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reads len bytes at addr of the target: 0, or -errno. */
typedef int (*py_lock_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* A threading.Lock or RLock object found. */
struct py_lock_obj {
	uint64_t addr;		/* the object */
	bool rlock;		/* _thread.RLock (else _thread.lock) */
	uint64_t owner;		/* RLock: rlock_owner (a pthread_t), 0 none */
	uint64_t count;		/* RLock: rlock_count */
};

/* At most this many candidate words are tried (each costs reads). */
#define PY_LOCK_MAX_CANDS 512

/* The first of cands[0, n) (n <= PY_LOCK_MAX_CANDS are looked at) that is
 * a _thread.lock or _thread.RLock object whose PyThread_type_lock (the
 * sem_t the thread sleeps on) is sem: its type's tp_name says which.
 * Layout (CPython 3.7-3.13, x86_64): ob_type @8, lock_lock / rlock_lock
 * @16, rlock_owner @24, rlock_count @32; a type's tp_name @24. Every read
 * is of a fixed size. 1 found, 0 not. */
int waits_python__find_lock(const uint64_t *cands, size_t n, uint64_t sem,
			    py_lock_read_fn rd, void *ctx, struct py_lock_obj *out);

#endif
