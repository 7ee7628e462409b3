/* wait_futex.c - futex waits: which lock of glibc's a thread waits on
 * (from the frames above its futex call), and its holder from the lock's
 * own words, read after the thaw. Layouts are data (struct glibc_layout),
 * used only for a glibc whose version string says it has them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "waits_internal.h"

#define FUTEX_CMD_MASK 0x7f
#define FUTEX_WAIT_ 0
#define FUTEX_LOCK_PI_ 6
#define FUTEX_WAIT_BITSET_ 9
#define FUTEX_WAIT_REQUEUE_PI_ 11
#define FUTEX_LOCK_PI2_ 13
#define FUTEX_TID_MASK_ 0x3fffffffu
#define FUTEX_OWNER_DIED_ 0x40000000u

/* glibc's lock layouts on x86_64 (nptl, the same since 2.25's new rwlock
 * and condition variable; docs/waits.md). Offsets in bytes. */
static const struct glibc_layout {
	unsigned min_minor;	/* first 2.x release with this layout */
	/* pthread_mutex_t: int __lock, unsigned __count, int __owner,
	   unsigned __nusers, int __kind */
	unsigned mutex_lock, mutex_owner, mutex_kind, mutex_size;
	/* pthread_rwlock_t: unsigned __readers, __writers, __wrphase_futex,
	   __writers_futex, __pad3, __pad4; int __cur_writer, __shared; ...
	   unsigned __flags */
	unsigned rw_readers, rw_wrphase_futex, rw_writers_futex, rw_cur_writer,
		 rw_shared, rw_flags, rw_size;
	unsigned rw_reader_shift, rw_wrlocked;
	/* sem_t (new_sem, 64-bit): uint64_t data, value in its low 32 bits */
	unsigned sem_size;
} glibc_x86_64 = {
	.min_minor = 25,
	.mutex_lock = 0, .mutex_owner = 8, .mutex_kind = 16, .mutex_size = 40,
	.rw_readers = 0, .rw_wrphase_futex = 8, .rw_writers_futex = 12,
	.rw_cur_writer = 24, .rw_shared = 28, .rw_flags = 48, .rw_size = 56,
	.rw_reader_shift = 3, .rw_wrlocked = 2,
	.sem_size = 32,
};

/* Which library function waits, by the names glibc gives them (the
 * innermost match decides: pthread_cond_wait calls the mutex lock only
 * after it woke). */
static const struct lock_fn {
	const char *name;
	enum stacksnap_wait_kind kind;
} lock_fns[] = {
	{ "pthread_mutex_lock", STACKSNAP_WAIT_MUTEX },
	{ "pthread_mutex_timedlock", STACKSNAP_WAIT_MUTEX },
	{ "pthread_mutex_clocklock", STACKSNAP_WAIT_MUTEX },
	{ "pthread_mutex_cond_lock", STACKSNAP_WAIT_MUTEX },
	{ "pthread_rwlock_", STACKSNAP_WAIT_RWLOCK },
	{ "pthread_cond_", STACKSNAP_WAIT_CONDVAR },
	{ "sem_wait", STACKSNAP_WAIT_SEMAPHORE },
	{ "sem_timedwait", STACKSNAP_WAIT_SEMAPHORE },
	{ "sem_clockwait", STACKSNAP_WAIT_SEMAPHORE },
	{ "pthread_join", STACKSNAP_WAIT_JOIN },
	{ "pthread_clockjoin", STACKSNAP_WAIT_JOIN },
	{ "pthread_timedjoin", STACKSNAP_WAIT_JOIN },
};

/* The glibc release in the file at path ("... release version 2.36"),
 * its minor number, or -1: looked for in .rodata only (libc's is ~150
 * KiB of its ~2 MiB), through libelf's bounded section reads. */
static int glibc_minor(pid_t pid, const char *path)
{
	static const char tag[] = "release version 2.";
	char root[4200];
	int fd, minor = -1;
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	snprintf(root, sizeof(root), "/proc/%d/root%s", (int)pid, path);
	fd = open(root, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".rodata") || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		const char *p = memmem(d->d_buf, d->d_size, tag, sizeof(tag) - 1);

		if (p && (size_t)(p - (const char *)d->d_buf) + sizeof(tag) < d->d_size)
			minor = atoi(p + sizeof(tag) - 1);
		break;
	}
	elf_end(e);
	close(fd);
	return minor;
}

/* Whether glibc's layouts apply to the lock function in module path;
 * NULL when they do, else why not (said once per graph). */
static const char *layout_why_not(struct stacksnap_waits *w, const char *path)
{
	int minor;

	if (w->libc_checked)
		return w->libc_why;
	w->libc_checked = -1;
	if (!path) {
		w->libc_why = "the module of the lock function is not known";
		return w->libc_why;
	}
	minor = glibc_minor(w->pid, path);
	if (minor < 0)
		w->libc_why = waits__strf(w, "%s is not a glibc this version knows "
					  "(no 'release version 2.' string of glibc's): its lock "
					  "layouts are not known", path);
	else if ((unsigned)minor < glibc_x86_64.min_minor)
		w->libc_why = waits__strf(w, "glibc 2.%d in %s predates the lock "
					  "layouts known (2.%u and later)", minor, path,
					  glibc_x86_64.min_minor);
	else
		w->libc_checked = 1;
	return w->libc_why;
}

static bool is_futex_wait(const struct wait_thread *t)
{
	unsigned cmd = (unsigned)t->args[1] & FUTEX_CMD_MASK;

	if (t->nr_guessed)
		return true; /* the frames said futex; the op was not read */
	return cmd == FUTEX_WAIT_ || cmd == FUTEX_WAIT_BITSET_ ||
	       cmd == FUTEX_LOCK_PI_ || cmd == FUTEX_LOCK_PI2_ ||
	       cmd == FUTEX_WAIT_REQUEUE_PI_;
}

/* Index of the innermost frame naming a lock function, -1 none. */
static int lock_frame(const struct wait_thread *t, enum stacksnap_wait_kind *kind)
{
	for (size_t i = 0; i < t->nfn; i++)
		for (size_t k = 0; t->fn[i] && k < sizeof(lock_fns) / sizeof(lock_fns[0]); k++)
			if (strstr(t->fn[i], lock_fns[k].name)) {
				*kind = lock_fns[k].kind;
				return (int)i;
			}
	return -1;
}

static bool futex_classify(struct stacksnap_waits *w, struct wait_thread *t)
{
	enum stacksnap_wait_kind kind = STACKSNAP_WAIT_FUTEX;
	int at;

	if (t->nr != NR_FUTEX || !is_futex_wait(t))
		return false;
	t->pub.object = t->args[0];
	at = lock_frame(t, &kind);
	t->pub.kind = kind;
	if (!(t->th->regs.valid & (1u << STACKSNAP_REG_RDI)) || !t->args[0]) {
		t->pub.object = 0;
		t->pub.no_owner = "the lock's address (rdi) was not saved: a snapshot "
				  "file keeps the registers an unwind needs";
		return true;
	}
	if (at < 0) {
		t->pub.no_owner = t->nfn && t->fn[0]
			? "a futex no known lock function waits on: its owner is not recorded"
			: "no symbol names the function that waits (a stripped binary?): "
			  "the lock's kind and owner are not known";
		return true;
	}
	const char *why = layout_why_not(w, t->mod[at]);

	if (why) {
		t->pub.kind = STACKSNAP_WAIT_FUTEX;
		t->pub.no_owner = why;
	}
	return true;
}

/* Why a lock's words could not be read. */
static const char *unreadable(struct stacksnap_waits *w, const char *what)
{
	if (!w->o.saved)
		return waits__strf(w, "the %s could not be read", what);
	return waits__strf(w, "the %s's memory is not in the saved capture (a "
			   "snapshot file keeps the stacks only; a core dump keeps "
			   "it)", what);
}

/* A lock word in a captured stack (a lock on a thread's stack) is also
 * compared with its value at the capture. */
static bool captured_word(struct stacksnap_waits *w, uint64_t addr, uint32_t *v)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct stacksnap_thread *th = w->threads[i].th;

		if (th->stack && addr >= th->stack_base &&
		    addr + 4 <= th->stack_base + th->stack_len) {
			memcpy(v, th->stack + (addr - th->stack_base), 4);
			return true;
		}
	}
	return false;
}

static const char *mutex_kind_str(struct stacksnap_waits *w, uint32_t kind)
{
	static const char *const base[] = { "normal", "recursive", "error-checking",
					    "adaptive" };

	return waits__strf(w, "%s mutex%s%s%s", base[kind & 3],
			   kind & 16 ? ", robust" : "",
			   kind & 32 ? ", priority-inheritance" : "",
			   kind & 64 ? ", priority-protect" : "");
}

static int mutex_owner(struct stacksnap_waits *w, struct wait_thread *t, uint64_t m)
{
	const struct glibc_layout *L = &glibc_x86_64;
	int32_t words[10];
	uint32_t lock, kind, tid, then;

	if (waits__read(w, m, words, L->mutex_size)) {
		t->pub.no_owner = unreadable(w, "mutex");
		return 0;
	}
	memcpy(&lock, (char *)words + L->mutex_lock, 4);
	memcpy(&tid, (char *)words + L->mutex_owner, 4);
	memcpy(&kind, (char *)words + L->mutex_kind, 4);
	kind &= 0x7f;
	t->pub.detail = mutex_kind_str(w, kind);
	if (kind & (16 | 32)) {
		/* Robust and PI mutexes keep the owner's TID in the futex word. */
		tid = lock & FUTEX_TID_MASK_;
		if (lock & FUTEX_OWNER_DIED_)
			t->pub.detail = waits__strf(w, "%s; its owner died holding it",
						    t->pub.detail);
	}
	if (!w->o.saved && captured_word(w, m + L->mutex_lock, &then) && then != lock)
		t->pub.stale = true;
	if (!lock) {
		t->pub.stale = !w->o.saved;
		t->pub.no_owner = w->o.saved ? "unlocked in the saved memory"
					     : "unlocked since the capture (it changed hands)";
		return 0;
	}
	if (tid == 0x7fffffff || tid == 0x7ffffffe) {
		t->pub.no_owner = tid == 0x7fffffff ? "inconsistent (its owner died)"
						    : "not recoverable";
		return 0;
	}
	if (!tid) {
		t->pub.no_owner = "locked, its owner not recorded yet (between the "
				  "lock and the store of __owner)";
		return 0;
	}
	return waits__name_owner(w, t, tid);
}

/* The rwlock holding the futex word at addr: its data symbol's start when
 * one names it, else the one start of the words glibc waits on whose
 * fields are plausible. 0 when not known. */
static uint64_t rwlock_base(struct stacksnap_waits *w, uint64_t addr)
{
	const struct glibc_layout *L = &glibc_x86_64;
	const unsigned offs[] = { L->rw_readers, L->rw_wrphase_futex, L->rw_writers_futex };
	uint64_t start, size, found = 0;
	int nfound = 0;

	if (waits__data_symbol(w, addr, &start, &size) && size >= L->rw_size &&
	    addr - start < 16)
		return start;
	for (size_t i = 0; i < 3; i++) {
		uint32_t b[14];
		int32_t cur, shared;

		if (addr < offs[i] || waits__read(w, addr - offs[i], b, L->rw_size))
			continue;
		memcpy(&cur, (char *)b + L->rw_cur_writer, 4);
		memcpy(&shared, (char *)b + L->rw_shared, 4);
		if ((shared != 0 && shared != 1) ||
		    b[L->rw_flags / 4] > 2 || b[16 / 4] || b[20 / 4] ||
		    (cur && !waits__thread_exists(w, cur)))
			continue;
		found = addr - offs[i];
		nfound++;
	}
	return nfound == 1 ? found : 0;
}

static int rwlock_owner(struct stacksnap_waits *w, struct wait_thread *t)
{
	const struct glibc_layout *L = &glibc_x86_64;
	uint64_t base = rwlock_base(w, t->args[0]);
	uint32_t b[14], readers;
	int32_t cur;

	if (!base) {
		t->pub.no_owner = "the rwlock's start is not known (no symbol names "
				  "it and more than one of its words fits)";
		return 0;
	}
	t->pub.object = base;
	if (waits__read(w, base, b, L->rw_size)) {
		t->pub.no_owner = unreadable(w, "rwlock");
		return 0;
	}
	memcpy(&cur, (char *)b + L->rw_cur_writer, 4);
	readers = b[L->rw_readers / 4] >> L->rw_reader_shift;
	if (cur)
		return waits__name_owner(w, t, (uint32_t)cur);
	if (readers) {
		t->pub.detail = waits__strf(w, "held by %u reader%s", readers,
					    readers == 1 ? "" : "s");
		t->pub.no_owner = "read-locked: glibc does not record which threads read";
		return 0;
	}
	t->pub.stale = true;
	t->pub.no_owner = "unlocked since the capture (it changed hands)";
	return 0;
}

static int futex_owners(struct stacksnap_waits *w, struct wait_thread *t)
{
	uint32_t v;

	if (!t->pub.object_name)
		t->pub.object_name = waits__data_symbol(w, t->pub.object, NULL, NULL);
	if (t->pub.no_owner)
		return 0;
	switch (t->pub.kind) {
	case STACKSNAP_WAIT_MUTEX:
		/* A mutex is never on the waiter's stack's futex word in use:
		 * glibc, told EDEADLK or ESRCH by FUTEX_LOCK_PI, waits forever
		 * on a local word (__pthread_mutex_lock_full). */
		if (captured_word(w, t->pub.object, &v) && waits__frame_has(t, "lock_full")) {
			t->pub.no_owner = "the kernel refused the lock (EDEADLK: a deadlock "
					  "it found on a priority-inheritance mutex, or "
					  "ESRCH): glibc waits here forever; which mutex "
					  "is not known";
			t->pub.object = 0;
			t->pub.object_name = NULL;
			return 0;
		}
		return mutex_owner(w, t, t->pub.object);
	case STACKSNAP_WAIT_RWLOCK: {
		int err = rwlock_owner(w, t);

		t->pub.object_name = waits__data_symbol(w, t->pub.object, NULL, NULL);
		return err;
	}
	case STACKSNAP_WAIT_CONDVAR:
		t->pub.no_owner = "a condition variable has no owner: a signal or "
				  "broadcast wakes it";
		return 0;
	case STACKSNAP_WAIT_SEMAPHORE:
		if (!waits__read(w, t->pub.object, &v, 4))
			t->pub.detail = waits__strf(w, "value %u", v);
		t->pub.no_owner = "a semaphore has no owner: a sem_post wakes it";
		return 0;
	case STACKSNAP_WAIT_JOIN:
		/* The joined thread's tid word, cleared by the kernel when it
		 * exits. */
		if (waits__read(w, t->pub.object, &v, 4) || !v) {
			t->pub.stale = true;
			t->pub.no_owner = "the thread joined has exited since the capture";
			return 0;
		}
		return waits__name_owner(w, t, v);
	default:
		return 0;
	}
}

const struct wait_source_ops wait_futex_ops = {
	.name = "futex locks",
	.lock = true,
	.classify = futex_classify,
	.owners = futex_owners,
};
