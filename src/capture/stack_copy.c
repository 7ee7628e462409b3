/* stack_copy.c - the stack copies of stopped threads: each clamped to the
 * writable mapping its rsp is in, all taken in one batched
 * process_vm_readv (or /proc/PID/mem reads) into a buffer faulted in
 * before the freeze; and the normal stack of a thread whose handler runs
 * on an alternate signal stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "base/maps_line.h"
#include "base/ucontext_regs.h"
#include "base/vec.h"
#include "capture/capture_internal.h"

#define RED_ZONE 128	    /* bytes below rsp a leaf function may use */

static int cmp_rw_map(const void *a, const void *b)
{
	const struct rw_map *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* /proc/PID/maps lists mappings in address order; a list that is not
 * (a caller's own) is sorted once. */
static void sort_maps(struct rw_map *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i - 1].start > v[i].start) {
			qsort(v, n, sizeof(*v), cmp_rw_map);
			return;
		}
}

/* The mapping holding addr, or NULL. */
static const struct rw_map *find_map(const struct rw_map *v, size_t n,
				     uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < v[mid].start)
			hi = mid;
		else if (addr >= v[mid].end)
			lo = mid + 1;
		else
			return &v[mid];
	}
	return NULL;
}

/* The writable mappings of /proc/PID/maps. */
static int read_rw_maps(pid_t pid, struct rw_map **out, size_t *nout)
{
	char path[64], line[512];
	struct rw_map *v = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;

		if (!strchr(line, '\n') && !feof(f)) { /* long path: skip rest */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			line[sizeof(line) - 2] = '\0'; /* the path cut, not the numbers */
		}
		if (maps_line__parse(line, &ml) || !(ml.prot & PROT_WRITE))
			continue;
		uint64_t a = ml.start, b = ml.end;
		struct rw_map *m = VEC_PUSH(v, n, cap);
		if (!m) {
			fclose(f);
			free(v);
			return -ENOMEM;
		}
		m->start = a;
		m->end = b;
	}
	fclose(f);
	sort_maps(v, n);
	*out = v;
	*nout = n;
	return 0;
}

/* The writable mappings: those opts.addrspace read (the caller's own
 * read of the same process a moment ago), else /proc/PID/maps read now. */
int capture__rw_maps_of(struct stacksnap_snapshot *s,
		      const struct stacksnap_snapshot_opts *o,
		      struct rw_map **out, size_t *nout)
{
	const struct as_rw_range *r;
	size_t n = o->addrspace && o->addrspace->pid == s->pid
		? addrspace__writable(o->addrspace, &r) : 0;

	if (!n)
		return read_rw_maps(s->mm_pid, out, nout);
	if (!(*out = malloc(n * sizeof(**out))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (struct rw_map){ r[i].start, r[i].end };
	sort_maps(*out, n);
	*nout = n;
	s->maps_borrowed = true;
	return 0;
}

/* A stack pointer in none of the borrowed mappings: a thread created
 * since they were read. Read them afresh, once. */
static int reread_maps(struct stacksnap_snapshot *s)
{
	struct rw_map *maps;
	size_t n;
	int err;

	s->maps_borrowed = false;
	if ((err = read_rw_maps(s->mm_pid, &maps, &n)))
		return err;
	free(s->maps);
	s->maps = maps;
	s->nmaps = n;
	return 0;
}

/* The range to copy of a stack holding sp: from sp minus the red zone to
 * the end of its writable mapping or the thread pointer fs_base, at most
 * stack_size bytes. False when sp is in no writable mapping (after
 * reading the maps afresh, when they were borrowed from the caller's
 * address space). *below_tp: the range reaches up to the thread pointer
 * (sp is on the thread's own glibc stack, its frames all copied). */
static bool stack_range(struct stacksnap_snapshot *s, uint64_t sp,
			uint64_t fs_base, uint64_t stack_size, uint64_t *start,
			uint64_t *len, bool *below_tp)
{
	uint64_t lo = sp >= RED_ZONE ? sp - RED_ZONE : 0, hi = 0;
	const struct rw_map *m = find_map(s->maps, s->nmaps, sp);

	if (m) {
		if (lo < m->start)
			lo = m->start;
		hi = m->end;
	}
	if (!hi && s->maps_borrowed && reread_maps(s) == 0)
		return stack_range(s, sp, fs_base, stack_size, start, len,
				   below_tp);
	if (!hi)
		return false;
	/* glibc puts a thread's descriptor at its thread pointer, at the top
	 * of its stack mapping, above the outermost frame: the unwinder never
	 * reads it. */
	*below_tp = fs_base > sp && fs_base < hi;
	if (*below_tp)
		hi = fs_base;
	if (hi - lo > stack_size) {
		hi = lo + stack_size;
		*below_tp = false; /* an alternate stack may lie in the same
				      mapping, below the thread's own */
	}
	*start = lo;
	*len = hi - lo;
	return true;
}

/* Whether thread t's thread pointer is a glibc thread descriptor (its
 * first word points at itself), not a Go runtime thread's m.tls in the
 * heap: then a copy that stopped below it stopped at the top of the
 * thread's own pthread stack. The main thread's is told by startstack. */
static bool glibc_tcb(const struct stacksnap_snapshot *s,
		      const struct cap_thread *t)
{
	uint64_t self = 0;
	struct iovec l = { &self, 8 }, r = { (void *)(uintptr_t)t->fs_base, 8 };

	if (t->pub.tid == s->pid)
		return true;
	return process_vm_readv(s->pid, &l, 1, &r, 1, 0) == 8 &&
	       self == t->fs_base;
}

/* Where thread t's copy starts and how long it is (t->copy_start,
 * copy_len). False, with the thread's error set, when rsp is in no
 * writable mapping. */
static bool copy_range(struct stacksnap_snapshot *s, struct cap_thread *t)
{
	if (!stack_range(s, t->pub.regs.regs[STACKSNAP_REG_RSP], t->fs_base,
			 s->copy_opts->stack_size, &t->copy_start, &t->copy_len,
			 &t->below_tp)) {
		t->pub.error = STACKSNAP_THREAD_NO_STACK;
		return false;
	}
	/* The main thread's thread pointer is no mark of its stack (glibc's
	 * TLS block may even share a mapping with an alternate stack): the
	 * stack's start is. The search for a signal frame costs ~1 us per
	 * thread inside the freeze; only a thread whose copy misses its own
	 * stack's top pays it (or one whose alternate stack lies inside its
	 * own stack, a local array, which is not looked for). */
	if (t->pub.tid == s->pid)
		t->below_tp = s->start_stack >= t->copy_start &&
			      s->start_stack - t->copy_start < t->copy_len;
	/* A Go thread on a stack the runtime allocated (a goroutine's, or
	 * the system stack of a thread it started itself) lies in a heap
	 * mapping of many stacks: its copy ends at the runtime's own bound
	 * of that stack, not at the mapping's end (8 MiB by default, for a
	 * stack of a few KiB). A stack the copy reaches the top of (a cgo
	 * thread's pthread stack, the main thread's OS stack, whose runtime
	 * bounds are only approximate) is left as it is. */
	if (s->go && (!t->below_tp || !glibc_tcb(s, t))) {
		uint64_t top = capture__go_stack_top(s, t);

		if (top > t->copy_start && top - t->copy_start < t->copy_len)
			t->copy_len = top - t->copy_start;
	}
	return true;
}

/* Bytes for a copy of len taken after the prefaulted buffer's share, or
 * NULL. */
static uint8_t *more_buf(struct stacksnap_snapshot *s, size_t len)
{
	uint8_t **slot, *buf;

	if (len <= s->stack_cap - s->stack_off) {
		buf = s->stack_bytes + s->stack_off;
		s->stack_off += len;
		return buf;
	}
	slot = VEC_PUSH(s->extra, s->nextra, s->extra_cap);
	buf = slot ? malloc(len) : NULL;
	if (slot && !buf)
		s->nextra--;
	else if (slot)
		*slot = buf;
	return buf;
}

/* Thread t (its stack copied, stopped or proven asleep) running a signal
 * handler on an alternate signal stack: its normal stack, from the
 * interrupted rsp, is copied into t->pub.more_stacks, so the walk goes on
 * past the signal frame. Returns 0 (copied, or not on an alternate
 * stack), or -errno when that stack could not be read. */
int capture__copy_more(struct stacksnap_snapshot *s,
		       const struct stacksnap_snapshot_opts *o, struct cap_thread *t)
{
	uint64_t rsp, start, len;
	bool below_tp;
	uint8_t *buf;
	ssize_t r;

	if (t->below_tp || !t->pub.stack || t->pub.nmore_stacks ||
	    !(rsp = ucontext__altstack_interrupted_sp(
		      t->pub.stack, t->pub.stack_len, t->pub.stack_base,
		      t->pub.regs.regs[STACKSNAP_REG_RSP])))
		return 0;
	if (!stack_range(s, rsp, t->fs_base, o->stack_size, &start, &len, &below_tp))
		return -EFAULT;
	if (!len || !(buf = more_buf(s, len)))
		return len ? -ENOMEM : 0;
	if (o->proc_mem) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", s->mm_pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = fd < 0 ? -1 : pread(fd, buf, len, (off_t)start);
		if (fd >= 0)
			close(fd);
	} else {
		struct iovec l = { buf, len };
		struct iovec rm = { (void *)(uintptr_t)start, len };

		r = process_vm_readv(s->mm_pid, &l, 1, &rm, 1, 0);
	}
	if (r != (ssize_t)len)
		return -EFAULT;
	t->pub.more_stacks[0] = (struct stacksnap_stack_range){ buf, len, start };
	t->pub.nmore_stacks = 1;
	s->stats.bytes_copied += len;
	return 0;
}

static void copy_done(struct stacksnap_snapshot *s, struct cap_thread *t,
		      uint8_t *at)
{
	t->pub.stack = at;
	t->pub.stack_len = t->copy_len;
	t->pub.stack_base = t->copy_start;
	s->stats.bytes_copied += t->copy_len;
}

/* Copies the stack of every stopped thread not copied yet (copy_now()):
 * one process_vm_readv for all of them (in batches of IOV_MAX), or
 * /proc/PID/mem reads. */
int capture__copy_stacks(struct stacksnap_snapshot *s)
{
	const struct stacksnap_snapshot_opts *o = s->copy_opts;
	size_t total = 0, off = 0;
	struct iovec *local, *remote;
	uint8_t *buf;
	size_t *which, niov = 0;
	int err = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->stopped || t->pub.error || t->pub.stack || !t->have_regs)
			continue;
		if (copy_range(s, t))
			total += t->copy_len;
	}
	s->copied_any = total != 0;
	if (!total)
		return 0;
	/* The buffer was faulted in before the freeze; page faults on a
	 * fresh one would be paid inside it. Copies already taken keep
	 * their bytes: the rest goes after them, or into a buffer of its
	 * own. */
	if (total > s->stack_cap - s->stack_off) {
		uint8_t **slot = VEC_PUSH(s->extra, s->nextra, s->extra_cap);

		buf = slot ? malloc(total) : NULL;
		if (!buf) {
			if (slot)
				s->nextra--;
			return -ENOMEM;
		}
		*slot = buf;
	} else {
		buf = s->stack_bytes + s->stack_off;
		s->stack_off += total;
	}
	local = calloc(s->n + 1, sizeof(*local));
	remote = calloc(s->n + 1, sizeof(*remote));
	which = calloc(s->n + 1, sizeof(*which));
	if (!local || !remote || !which) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cap_thread *t = &s->threads[i];

		if (!t->copy_len || t->pub.stack || !t->stopped || t->pub.error ||
		    !t->have_regs)
			continue;
		local[niov] = (struct iovec){ buf + off, t->copy_len };
		remote[niov] = (struct iovec){ (void *)(uintptr_t)t->copy_start,
					       t->copy_len };
		which[niov++] = i;
		off += t->copy_len;
	}
	if (o->proc_mem) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", s->mm_pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		for (size_t k = 0; k < niov; k++) {
			ssize_t r = fd < 0 ? -1
					   : pread(fd, local[k].iov_base,
						   local[k].iov_len,
						   (off_t)(uintptr_t)remote[k].iov_base);
			if (r != (ssize_t)local[k].iov_len)
				s->threads[which[k]].pub.error =
					STACKSNAP_THREAD_NO_STACK;
		}
		if (fd >= 0)
			close(fd);
	} else {
		for (size_t k = 0; k < niov; k += IOV_MAX) {
			size_t cnt = niov - k < IOV_MAX ? niov - k : IOV_MAX;
			ssize_t r = process_vm_readv(s->mm_pid, local + k, cnt,
						     remote + k, cnt, 0);
			size_t want = 0;

			for (size_t j = k; j < k + cnt; j++)
				want += local[j].iov_len;
			if (r == (ssize_t)want)
				continue;
			/* A partial read stops at the first failing range:
			 * redo them one by one to know which. */
			for (size_t j = k; j < k + cnt; j++)
				if (process_vm_readv(s->mm_pid, &local[j], 1,
						     &remote[j], 1, 0) !=
				    (ssize_t)local[j].iov_len)
					s->threads[which[j]].pub.error =
						STACKSNAP_THREAD_NO_STACK;
		}
	}
	for (size_t k = 0; k < niov; k++) {
		struct cap_thread *t = &s->threads[which[k]];

		if (!t->pub.error)
			copy_done(s, t, local[k].iov_base);
	}
	/* The other stack of a thread on an alternate signal stack: one more
	 * read, rarely needed; without it the walk ends at the signal frame
	 * (stack copy too small), as it did before. */
	for (size_t k = 0; k < niov; k++)
		if (!s->threads[which[k]].pub.error)
			capture__copy_more(s, o, &s->threads[which[k]]);
out:
	free(local);
	free(remote);
	free(which);
	return err;
}

/* Faults in buf by having the kernel write it (a read of /dev/zero),
 * not by a write of ours: on the virtual machines measured (shadow page
 * tables, and the kernel runs on page tables of its own), the kernel's
 * first write to each page of a buffer costs ~5-20 us even after the
 * process wrote it, the next ones nothing. The copy phase of the freeze
 * writes the buffer from the kernel (process_vm_readv): without this,
 * 64 threads' stacks (~400 KiB) took ~1 ms to copy instead of ~0.1 ms. */
void capture_prefault_kernel(uint8_t *buf, size_t len)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	size_t done = 0;

	while (fd >= 0 && done < len) {
		ssize_t r = read(fd, buf + done, len - done);

		if (r <= 0)
			break;
		done += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	memset(buf + done, 0, len - done);
}
