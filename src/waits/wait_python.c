/* wait_python.c - CPython's locks: a thread asleep in threading.RLock's or
 * Lock's acquire (rlock_acquire, lock_PyThread_acquire_lock among its
 * innermost native frames) and one waiting for the GIL (take_gil). The
 * lock object is the word of the waiting frames (stack or callee-saved
 * register) whose PyThread_type_lock is the semaphore the futex sleeps on
 * and whose type is named _thread.RLock / _thread.lock: two facts, never a
 * guess. An RLock's owner is a pthread_t: glibc's struct pthread keeps the
 * kernel tid (docs/waits.md). The GIL's holder is the one the capture read
 * (stacksnap_waits_opts.gil_holder). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "waits_internal.h"
#include "wait_python.h"
#include "runtime/python/python.h"

/* Bytes of the waiting frames' stack searched for the lock object. */
#define PY_SCAN_BYTES 4096

enum py_wait { PY_WAIT_LOCK, PY_WAIT_RLOCK, PY_WAIT_GIL };

/* Innermost first: a thread taking the GIL back after its lock's wait is
 * waiting for the GIL. */
static const struct {
	const char *fn;
	enum py_wait what;
} py_fns[] = {
	{ "take_gil", PY_WAIT_GIL },
	{ "rlock_acquire", PY_WAIT_RLOCK },
	{ "lock_PyThread_acquire_lock", PY_WAIT_LOCK },
};

/* Index of the innermost frame naming a CPython wait, -1 none. */
static int python_frame(const struct wait_thread *t, enum py_wait *what)
{
	for (size_t i = 0; i < t->nfn; i++)
		for (size_t k = 0; t->fn[i] && k < sizeof(py_fns) / sizeof(py_fns[0]); k++)
			if (!strcmp(t->fn[i], py_fns[k].fn)) {
				*what = py_fns[k].what;
				return (int)i;
			}
	return -1;
}

static bool python_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	enum py_wait what;
	int at;

	if (t->nr != NR_FUTEX || (at = python_frame(t, &what)) < 0)
		return false;
	t->pub.frame = at;
	if (what == PY_WAIT_GIL) {
		/* The frame that asked for the GIL: the first outside libc and
		 * the interpreter (a C extension's, a native thread's in
		 * PyGILState_Ensure), else take_gil itself. */
		for (size_t i = (size_t)at + 1; i < t->nfn && t->mod[at]; i++)
			if (t->mod[i] && strcmp(t->mod[i], t->mod[at]) &&
			    (!t->mod[0] || strcmp(t->mod[i], t->mod[0]))) {
				t->pub.frame = (int)i;
				break;
			}
		t->pub.kind = STACKSNAP_WAIT_GIL;
		t->pub.detail = "CPython's global interpreter lock";
		return true;
	}
	t->pub.kind = STACKSNAP_WAIT_PYTHON_LOCK;
	t->pub.detail = what == PY_WAIT_RLOCK ? "threading.RLock" : "threading.Lock";
	/* The semaphore slept on, until the object is found. */
	t->pub.object = t->th->regs.valid & (1u << STACKSNAP_REG_RDI) ? t->args[0] : 0;
	if (!t->pub.object)
		t->pub.no_owner = "the lock's address (rdi) was not saved: a snapshot "
				  "file keeps the registers an unwind needs";
	return true;
}

static int read_u64(py_lock_read_fn rd, void *ctx, uint64_t addr, uint64_t *v)
{
	return rd(ctx, addr, v, sizeof(*v));
}

int waits_python__find_lock(const uint64_t *cands, size_t n, uint64_t sem,
			    py_lock_read_fn rd, void *ctx, struct py_lock_obj *out)
{
	if (n > PY_LOCK_MAX_CANDS)
		n = PY_LOCK_MAX_CANDS;
	for (size_t i = 0; i < n; i++) {
		uint64_t c = cands[i], obj[4], name_at;
		char name[16];

		if (c < 0x10000 || (c & 7) || c > UINT64_MAX - 64)
			continue;
		/* ob_type, lock_lock, rlock_owner, rlock_count */
		if (rd(ctx, c + 8, obj, sizeof(obj)) || obj[1] != sem || !obj[0] ||
		    obj[0] > UINT64_MAX - 64)
			continue;
		if (read_u64(rd, ctx, obj[0] + 24, &name_at) || !name_at ||
		    name_at > UINT64_MAX - sizeof(name) ||
		    rd(ctx, name_at, name, sizeof(name)))
			continue;
		name[sizeof(name) - 1] = 0;
		if (!strcmp(name, "_thread.RLock")) {
			*out = (struct py_lock_obj){ c, true, obj[2], obj[3] };
			return 1;
		}
		if (!strcmp(name, "_thread.lock")) {
			*out = (struct py_lock_obj){ c, false, 0, 0 };
			return 1;
		}
	}
	return 0;
}

static int mem_rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return waits__read(ctx, addr, buf, len);
}

/* The words the acquiring frame's self may be in: the callee-saved
 * registers the capture holds, then the stack from frame 0 up to the end
 * of frame at (its CFA), at most PY_SCAN_BYTES: from the stack the
 * capture copied, or, where it kept none (watch's walker hands over no
 * copy), read from the process now (a thread still in the call it was
 * captured in, as the driver checked, has not changed those frames). */
static size_t candidates(struct stacksnap_waits *w, const struct wait_thread *t, int at,
			 uint64_t *c, size_t max)
{
	static const int saved[] = { STACKSNAP_REG_RBX, STACKSNAP_REG_RBP,
				     STACKSNAP_REG_R12, STACKSNAP_REG_R13,
				     STACKSNAP_REG_R14, STACKSNAP_REG_R15 };
	const struct stacksnap_thread *th = t->th;
	uint8_t live[PY_SCAN_BYTES];
	const uint8_t *bytes = th->stack;
	uint64_t base = th->stack_base;
	size_t len = th->stack_len, n = 0;

	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]) && n < max; i++)
		if (th->regs.valid & (1u << saved[i]))
			c[n++] = th->regs.regs[saved[i]];
	if (!t->nframes || (!bytes && w->o.saved))
		return n;
	uint64_t lo = t->frames[0].sp, hi = t->frames[at].cfa;

	if (!hi && (size_t)at + 1 < t->nframes)
		hi = t->frames[at + 1].sp;
	if (hi < lo || hi - lo > PY_SCAN_BYTES)
		hi = lo + PY_SCAN_BYTES;
	if (!bytes) {
		/* Read whole or not at all (bounded by live). */
		if (waits__read(w, lo, live, hi - lo))
			return n;
		bytes = live;
		base = lo;
		len = hi - lo;
	}
	if (lo < base)
		lo = base;
	if (hi > base + len)
		hi = base + len;
	for (uint64_t a = (lo + 7) & ~7ull; a + 8 <= hi && n < max; a += 8) {
		uint64_t v;

		memcpy(&v, bytes + (a - base), 8);
		if (v >= base && v < base + len)
			continue; /* a pointer into the stack: no heap object */
		bool dup = false;

		for (size_t k = 0; k < n && !dup; k++)
			dup = c[k] == v;
		if (!dup)
			c[n++] = v;
	}
	return n;
}

static int gil_owner(struct stacksnap_waits *w, struct wait_thread *t)
{
	pid_t h = w->o.gil_holder;

	if (!h) {
		t->pub.no_owner = "the GIL's holder is not known (a CPython whose layout "
				  "is not known, a saved capture, or no holder at the "
				  "capture)";
		return 0;
	}
	if (h == t->th->tid) {
		t->pub.no_owner = "the capture found it holding the GIL itself";
		return 0;
	}
	return waits__name_owner(w, t, (uint32_t)h);
}

static int python_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	uint64_t c[PY_LOCK_MAX_CANDS], tid = 0, self = 0;
	struct py_lock_obj o;
	size_t n;

	if (t->pub.kind == STACKSNAP_WAIT_GIL)
		return gil_owner(w, t);
	if (t->pub.no_owner)
		return 0;
	n = candidates(w, t, t->pub.frame, c, PY_LOCK_MAX_CANDS);
	if (!waits_python__find_lock(c, n, t->pub.object, mem_rd, w, &o)) {
		t->pub.no_owner = waits__strf(
			w, "the %s object was not found (its layout is known for "
			"CPython 3.7-3.13): its owner is not known for this version",
			strcmp(t->pub.detail, "threading.RLock") ? "Lock" : "RLock");
		return t->pub.no_owner ? 0 : -ENOMEM;
	}
	t->pub.object = o.addr;
	if (!o.rlock) {
		t->pub.detail = "threading.Lock";
		t->pub.no_owner = "a threading.Lock keeps no owner (nor do the Condition, "
				  "Event and Queue waits made of one): any thread's "
				  "release wakes it";
		return 0;
	}
	t->pub.detail = "threading.RLock";
	if (!o.owner || !o.count) {
		t->pub.stale = true;
		t->pub.no_owner = "unlocked since the capture (it changed hands)";
		return 0;
	}
	/* rlock_owner is the owner's pthread_self(): glibc's struct pthread,
	 * whose header.self (@16) points at itself. */
	if (o.owner > UINT64_MAX - GLIBC_PTHREAD_TID - 4 ||
	    waits__read(w, o.owner + 16, &self, 8) || self != o.owner ||
	    waits__read(w, o.owner + GLIBC_PTHREAD_TID, &tid, 4)) {
		t->pub.no_owner = waits__strf(w, "its owner 0x%llx is not a thread's "
					      "struct pthread (it exited?)",
					      (unsigned long long)o.owner);
		return t->pub.no_owner ? 0 : -ENOMEM;
	}
	t->pub.detail = waits__strf(w, "threading.RLock, count %llu",
				    (unsigned long long)o.count);
	return waits__name_owner(w, t, (uint32_t)tid);
}

const struct wait_source_ops wait_python_ops = {
	.name = "python",
	.lock = true,
	.classify = python_classify,
	.owners = python_owners,
};
