/* py_capture.c - copies what can change of every Python thread during the
 * freeze: the thread states and each one's chain of frames (addresses,
 * code object pointers, instruction positions, entry flags), bounded in
 * steps and loop-checked, in few bulk reads: 3.11+'s data-stack chunks
 * whole, and everything else as whole pages (struct py_pages), the pages
 * the last capture used first, in one batch; 3.7-3.10's heap frames are
 * followed across all threads together, a batch of pages per round. */
#include "runtime/python/python.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "mem/mem.h"

/* One capture's reads: the current data-stack chunk of the thread being
 * walked is read in one go, and frames inside it come from that copy
 * instead of a read each. Invariant: chunk_len == 0 or chunk holds the
 * target's bytes [chunk_base, chunk_base + chunk_len). */
struct reader {
	struct stacksnap_mem *mem;
	struct py_capture *cap;
	uint64_t chunk_base;
	size_t chunk_len;
	size_t chunk_off;	/* where in cap->chunk the copy starts */
};

static uint64_t u64_at(const uint8_t *buf, int off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static int32_t i32_at(const uint8_t *buf, int off)
{
	int32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* ------------------------------------------------------------------ */
/* The page store (struct py_pages): whole pages of the target, each read
 * once per capture, batched. The remote read of a page costs about what a
 * few bytes of it do (pinning the page, not copying it, is the price), and
 * CPython's structures of one kind sit together (3.7-3.10's frames of one
 * thread in one pymalloc pool, the thread states of a process in a few
 * pages), so a capture reads pages, not objects. */

enum { PG_PENDING = 1, PG_HAVE, PG_BAD, PG_STATE = 0x7f, PG_USED = 0x80 };

static size_t pg_hash(uint64_t page, size_t nslots)
{
	return (size_t)(((page / MEM_PAGE) * 0x9e3779b97f4a7c15ull) >> 40) &
	       (nslots - 1);
}

/* The entry of the page at addr (page aligned), or -1. */
static long pg_find(const struct py_pages *p, uint64_t addr)
{
	if (!p->nslots)
		return -1;
	for (size_t h = pg_hash(addr, p->nslots);; h = (h + 1) & (p->nslots - 1)) {
		uint32_t s = p->slots[h];

		if (!s)
			return -1;
		if (p->addr[s - 1] == addr)
			return (long)s - 1;
	}
}

static void pg_slot(struct py_pages *p, size_t i)
{
	size_t h = pg_hash(p->addr[i], p->nslots);

	while (p->slots[h])
		h = (h + 1) & (p->nslots - 1);
	p->slots[h] = (uint32_t)i + 1;
}

/* Room for cap entries (at most PY_MAX_PAGES); the new data touched now,
 * so that copies into it in the freeze wait for no page fault. Returns 0,
 * -ENOSPC past the bound, or -ENOMEM. */
static int pg_grow(struct py_pages *p, size_t cap)
{
	size_t ns = 1;

	if (cap <= p->cap)
		return 0;
	if (cap > PY_MAX_PAGES)
		return -ENOSPC;
	uint64_t *addr = realloc(p->addr, cap * sizeof(*addr));
	if (addr)
		p->addr = addr;
	uint8_t *state = realloc(p->state, cap);
	if (state)
		p->state = state;
	uint32_t *queue = realloc(p->queue, cap * sizeof(*queue));
	if (queue)
		p->queue = queue;
	uint8_t *data = realloc(p->data, cap * MEM_PAGE);
	if (data)
		p->data = data;
	while (ns < 2 * cap)
		ns *= 2;
	uint32_t *slots = calloc(ns, sizeof(*slots));
	if (!addr || !state || !queue || !data || !slots) {
		free(slots);
		return -ENOMEM;
	}
	memset(p->data + p->cap * MEM_PAGE, 0, (cap - p->cap) * MEM_PAGE);
	free(p->slots);
	p->slots = slots;
	p->nslots = ns;
	p->cap = cap;
	for (size_t i = 0; i < p->n; i++)
		pg_slot(p, i);
	return 0;
}

/* A new entry for the page at addr, queued for the next fetch; -1 when the
 * store is full. */
static long pg_add(struct py_pages *p, uint64_t addr)
{
	if (p->n == p->cap) {
		size_t want = p->cap ? 2 * p->cap : 64;

		if (want > PY_MAX_PAGES)
			want = PY_MAX_PAGES;
		if (pg_grow(p, want) || p->n == p->cap)
			return -1;
	}
	p->addr[p->n] = addr;
	p->state[p->n] = PG_PENDING;
	pg_slot(p, p->n);
	p->queue[p->nqueue++] = (uint32_t)p->n;
	return (long)p->n++;
}

/* Whether the bytes [addr, addr + len) (len <= MEM_PAGE) are in the store:
 * 1 they are, 0 a page of them is queued (now or before) for the next
 * fetch, -EFAULT a page of them could not be read, -ENOSPC the store is
 * full (read them directly). */
static int pg_want(struct py_pages *p, uint64_t addr, size_t len)
{
	uint64_t first = addr & ~(uint64_t)(MEM_PAGE - 1), last;
	int ret = 1;

	if (!len || addr + len < addr)
		return -EFAULT;
	last = (addr + len - 1) & ~(uint64_t)(MEM_PAGE - 1);
	for (uint64_t pg = first;; pg += MEM_PAGE) {
		long i = pg_find(p, pg);

		if (i < 0) {
			if (pg_add(p, pg) < 0)
				return -ENOSPC;
			ret = ret == 1 ? 0 : ret;
		} else if ((p->state[i] & PG_STATE) == PG_BAD) {
			ret = -EFAULT;
		} else if ((p->state[i] & PG_STATE) == PG_PENDING && ret == 1) {
			ret = 0;
		}
		if (pg == last)
			break;
	}
	return ret;
}

/* The store's copy of [addr, addr + len) when it lies in one page the
 * store holds, else NULL. The entry last found is tried first: a thread's
 * frames follow each other in a page. */
static const uint8_t *pg_at(struct py_pages *p, uint64_t addr, size_t len)
{
	uint64_t pg = addr & ~(uint64_t)(MEM_PAGE - 1);
	long i;

	if (addr - pg + len > MEM_PAGE)
		return NULL;
	if (p->last < p->n && p->addr[p->last] == pg)
		i = (long)p->last;
	else if ((i = pg_find(p, pg)) < 0)
		return NULL;
	if ((p->state[i] & PG_STATE) != PG_HAVE)
		return NULL;
	p->state[i] |= PG_USED;
	p->last = (size_t)i;
	return p->data + (size_t)i * MEM_PAGE + (addr - pg);
}

/* Copies [addr, addr + len) out of the store; pg_want said 1. */
static void pg_copy(struct py_pages *p, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;

	while (len) {
		uint64_t pg = addr & ~(uint64_t)(MEM_PAGE - 1);
		size_t off = addr - pg, n = MEM_PAGE - off;
		long i = pg_find(p, pg);

		if (n > len)
			n = len;
		p->state[i] |= PG_USED;
		memcpy(out, p->data + (size_t)i * MEM_PAGE + off, n);
		out += n;
		addr += n;
		len -= n;
	}
}

/* Whether queue entry k + 1 is the page after entry k's, in the entry
 * after it (then one range reads both: the remote read's cost is per
 * range more than per page). */
static bool pg_follows(const struct py_pages *p, size_t k)
{
	uint32_t i = p->queue[k], j = p->queue[k + 1];

	return j == i + 1 && p->addr[j] == p->addr[i] + MEM_PAGE;
}

/* Reads every queued page, in as few system calls as the memory source
 * allows (64 ranges in one), neighbours in one range. A range that fails
 * is read again a page at a time: which of its pages are there. */
static void pg_fetch(struct stacksnap_mem *mem, struct py_capture *cap)
{
	struct py_pages *p = &cap->pages;
	size_t n = p->nqueue, nv = 0;

	if (!n)
		return;
	p->nqueue = 0;
	if (vec_reserve((void **)&cap->iov, &cap->cap_iov, n, sizeof(*cap->iov))) {
		for (size_t k = 0; k < n; k++) {
			uint32_t i = p->queue[k];

			cap->reads++;
			p->state[i] = mem_read(mem, p->addr[i],
					       p->data + (size_t)i * MEM_PAGE,
					       MEM_PAGE) ? PG_BAD : PG_HAVE;
		}
		return;
	}
	for (size_t k = 0; k < n; k++) {
		uint32_t i = p->queue[k];

		if (k && pg_follows(p, k - 1)) {
			cap->iov[nv - 1].len += MEM_PAGE;
			continue;
		}
		cap->iov[nv++] = (struct mem_iov){ p->addr[i],
						   p->data + (size_t)i * MEM_PAGE,
						   MEM_PAGE, 0 };
	}
	cap->reads += (unsigned)((nv + 63) / 64);
	mem_read_many(mem, cap->iov, nv);
	for (size_t k = 0, v = 0; k < n; v++) {
		size_t pages = cap->iov[v].len / MEM_PAGE;

		for (size_t e = 0; e < pages; e++, k++) {
			uint32_t i = p->queue[k];

			p->state[i] = PG_HAVE;
			if (!cap->iov[v].err)
				continue;
			cap->reads += pages > 1;
			if (pages == 1 ||
			    mem_read(mem, p->addr[i], p->data + (size_t)i * MEM_PAGE,
				     MEM_PAGE))
				p->state[i] = PG_BAD;
		}
	}
}

static void pg_reset(struct py_pages *p)
{
	p->n = p->nqueue = p->last = 0;
	if (p->slots)
		memset(p->slots, 0, p->nslots * sizeof(*p->slots));
}

/* Every read of a capture: the target's bytes [addr, addr + len) from the
 * copy of the thread's data-stack chunk (3.11+) or the page store (the
 * pages fetched if missing), in place when they lie in one piece there,
 * else copied into buf; or, where the store cannot say (full, or a page
 * that failed: a smaller range of it may still be readable from a source
 * that is not a live process), read directly into buf. NULL when they
 * cannot be read. */
static const uint8_t *rd_at(struct reader *r, uint64_t addr, size_t len,
			    void *buf)
{
	struct py_pages *p = &r->cap->pages;
	const uint8_t *at;

	if (r->chunk_len && addr >= r->chunk_base &&
	    addr - r->chunk_base <= r->chunk_len &&
	    len <= r->chunk_len - (addr - r->chunk_base))
		return r->cap->chunk + r->chunk_off + (addr - r->chunk_base);
	if ((at = pg_at(p, addr, len)))
		return at;
	if (len <= MEM_PAGE) {
		int w = pg_want(p, addr, len);

		if (w == 0) {
			pg_fetch(r->mem, r->cap);
			w = pg_want(p, addr, len);
		}
		if (w == 1) {
			pg_copy(p, addr, buf, len);
			return buf;
		}
	}
	r->cap->reads++;
	return mem_read(r->mem, addr, buf, len) ? NULL : buf;
}

static int rd(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	const uint8_t *at = rd_at(r, addr, len, buf);

	if (!at)
		return -EFAULT;
	if (at != buf)
		memcpy(buf, at, len);
	return 0;
}

/* Brent's cycle check over a chain of addresses: step() says whether addr
 * closes a loop. O(1) memory, finds a loop within twice its length. */
struct loop_check {
	uint64_t mark;
	unsigned power, lam;
};

static void loop_init(struct loop_check *lc, uint64_t first)
{
	lc->mark = first;
	lc->power = lc->lam = 1;
}

static bool loop_step(struct loop_check *lc, uint64_t addr)
{
	if (addr == lc->mark)
		return true;
	if (lc->power == lc->lam) {
		lc->mark = addr;
		lc->power *= 2;
		lc->lam = 0;
	}
	lc->lam++;
	return false;
}

/* A thread state the last capture found. */
struct py_hint {
	uint64_t interp, tstate;
};

/* Per thread of a batch: where its frames start, its chunk's copy. */
struct py_batch {
	uint64_t tstate;
	uint64_t frame;
	uint64_t chunk;
	size_t chunk_len, chunk_off;
	bool cframe_read;	/* its frame pointer is in this batch's iov */
	/* walk_heap's place in the thread's chain */
	unsigned steps;
	struct loop_check lc;
};

static int grow(void **items, size_t *cap, size_t need, size_t elem)
{
	return vec_reserve(items, cap, need, elem);
}

static int reserve(struct py_capture *cap, size_t nthreads, size_t nframes,
		   size_t chunk_bytes)
{
	if (grow((void **)&cap->threads, &cap->cap_threads, nthreads,
		 sizeof(*cap->threads)) ||
	    grow((void **)&cap->frames, &cap->cap_frames, nframes,
		 sizeof(*cap->frames)) ||
	    grow((void **)&cap->batch, &cap->cap_batch, nthreads,
		 sizeof(*cap->batch)) ||
	    grow((void **)&cap->iov, &cap->cap_iov, nthreads,
		 sizeof(*cap->iov)))
		return -ENOMEM;
	if (chunk_bytes > cap->chunk_cap) {
		uint8_t *p = realloc(cap->chunk, chunk_bytes);

		if (!p)
			return -ENOMEM;
		/* Touched now: the copies in the freeze must not wait for
		   page faults (the stack copies are prefaulted likewise). */
		memset(p, 0, chunk_bytes);
		cap->chunk = p;
		cap->chunk_cap = chunk_bytes;
	}
	size_t ts = nthreads * 1024;
	if (ts > cap->tsbuf_cap) {
		uint8_t *p = realloc(cap->tsbuf, ts);

		if (!p)
			return -ENOMEM;
		memset(p, 0, ts);
		cap->tsbuf = p;
		cap->tsbuf_cap = ts;
	}
	return 0;
}

int py_capture__reserve(struct py_capture *cap, size_t nthreads,
			size_t nframes, size_t chunk_bytes)
{
	struct py_pages *p = &cap->pages;
	size_t pages = 2 * p->nhints + 64;

	if (pages > PY_MAX_PAGES)
		pages = PY_MAX_PAGES;
	if (reserve(cap, nthreads, nframes, cap->heap_frames ? 0 : chunk_bytes) ||
	    pg_grow(p, pages) ||
	    grow((void **)&p->hints, &p->cap_hints, p->cap, sizeof(*p->hints)) ||
	    grow((void **)&cap->iov, &cap->cap_iov, p->cap, sizeof(*cap->iov)))
		return -ENOMEM;
	return 0;
}

void py_capture__clear(struct py_capture *cap)
{
	cap->nthreads = cap->nframes = 0;
	cap->ninterps = 0;
	cap->state = cap->end = NULL;
	cap->gil_locked = false;
	cap->gil_holder = 0;
	cap->reads = 0;
	cap->batched = false;
}

void py_capture__free(struct py_capture *cap)
{
	free(cap->threads);
	free(cap->frames);
	free(cap->chunk);
	free(cap->hints);
	free(cap->batch);
	free(cap->iov);
	free(cap->tsbuf);
	free(cap->pages.addr);
	free(cap->pages.state);
	free(cap->pages.data);
	free(cap->pages.queue);
	free(cap->pages.slots);
	free(cap->pages.hints);
	memset(cap, 0, sizeof(*cap));
}

const struct py_raw_thread *py_capture__thread(const struct py_capture *cap,
					       uint64_t tid)
{
	for (size_t i = 0; i < cap->nthreads; i++)
		if (cap->threads[i].native_tid == tid)
			return &cap->threads[i];
	return NULL;
}

/* Reads the used part of the thread's current data-stack chunk, where
 * 3.11 keeps its frames (generators' frames live in the generator
 * objects, read one by one). A chunk that does not look like one is
 * simply not used. */
static void read_chunk(struct reader *r, const struct py_layout *l,
		       const uint8_t *ts, int ts_lo)
{
	uint64_t chunk, top;
	size_t len;

	r->chunk_len = 0;
	if (l->ts_datastack_chunk == PY_OFF_NONE ||
	    l->ts_datastack_top == PY_OFF_NONE)
		return;
	chunk = u64_at(ts, l->ts_datastack_chunk - ts_lo);
	top = u64_at(ts, l->ts_datastack_top - ts_lo);
	if (!chunk || top <= chunk || top - chunk > PY_MAX_CHUNK)
		return;
	len = top - chunk;
	if (len > r->cap->chunk_cap) {
		uint8_t *p = realloc(r->cap->chunk, len);

		if (!p)
			return;
		r->cap->chunk = p;
		r->cap->chunk_cap = len;
	}
	r->cap->reads++;
	if (mem_read(r->mem, chunk, r->cap->chunk, len) == 0) {
		r->chunk_base = chunk;
		r->chunk_len = len;
		r->chunk_off = 0;
	}
}

/* Follows one thread's frame chain from frame, bounded and loop-checked,
 * appending to cap->frames; a cut sets t->end. */
static int walk_frames(struct reader *r, const struct py_layout *l,
		       struct py_raw_thread *t, uint64_t frame)
{
	struct py_capture *cap = r->cap;
	uint8_t buf[PY_MAX_FRAME_SIZE];
	const uint8_t *fb;
	struct loop_check lc;

	loop_init(&lc, frame);
	for (unsigned steps = 0; frame; steps++) {
		struct py_raw_frame *f;

		if (steps == PY_MAX_FRAMES) {
			t->end = "too many frames";
			t->end_addr = frame;
			break;
		}
		if (frame & 7) {
			t->end = "misaligned frame pointer";
			t->end_addr = frame;
			break;
		}
		if (!(fb = rd_at(r, frame, (size_t)l->frame_size, buf))) {
			t->end = "frame unreadable";
			t->end_addr = frame;
			break;
		}
		f = VEC_PUSH(cap->frames, cap->nframes, cap->cap_frames);
		if (!f)
			return -ENOMEM;
		f->addr = frame;
		f->code = u64_at(fb, l->frame_code);
		if (l->frame_lasti != PY_OFF_NONE) {
			/* PyFrameObject: f_lasti, and each frame its own C
			   call of the eval loop. */
			f->instr = (uint64_t)(int64_t)i32_at(fb, l->frame_lasti);
			f->owner = 0;
			f->is_entry = 1;
		} else {
			f->instr = u64_at(fb, l->frame_instr);
			f->owner = fb[l->frame_owner];
			f->is_entry = l->frame_is_entry != PY_OFF_NONE &&
				      fb[l->frame_is_entry] != 0;
		}
		f->local0 = l->frame_localsplus != PY_OFF_NONE
				    ? u64_at(fb, l->frame_localsplus) : 0;
		t->nframes++;
		frame = u64_at(fb, l->frame_previous);
		if (frame && loop_step(&lc, frame)) {
			t->end = "loop in frame chain";
			t->end_addr = frame;
			break;
		}
	}
	return 0;
}

/* A new thread entry from its thread state's bytes (ts: [ts_lo, ...)). */
static struct py_raw_thread *thread_from(struct py_capture *cap,
					 const struct py_layout *l,
					 uint64_t tstate, uint64_t interp,
					 int64_t interp_id, const uint8_t *ts,
					 int ts_lo)
{
	struct py_raw_thread *t = VEC_PUSH(cap->threads, cap->nthreads,
					   cap->cap_threads);

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->tstate = tstate;
	t->interp = interp;
	t->interp_id = interp_id;
	t->native_tid = l->ts_native_thread_id != PY_OFF_NONE
		? u64_at(ts, l->ts_native_thread_id - ts_lo) : 0;
	t->thread_id = u64_at(ts, l->ts_thread_id - ts_lo);
	t->first = cap->nframes;
	return t;
}

static int capture_thread(struct reader *r, const struct py_layout *l,
			  uint64_t tstate, uint64_t interp, int64_t interp_id,
			  const uint8_t *ts, int ts_lo)
{
	struct py_raw_thread *t = thread_from(r->cap, l, tstate, interp,
					      interp_id, ts, ts_lo);
	uint64_t frame;
	int err;

	if (!t)
		return -ENOMEM;
	if (l->ts_cframe != PY_OFF_NONE) {
		uint64_t cframe = u64_at(ts, l->ts_cframe - ts_lo);

		/* On the thread's C stack: read alone (the capture in the
		   freeze takes it from the stack copies), not as a page to
		   read first next time. */
		frame = 0;
		if (cframe) {
			r->cap->reads++;
			if (mem_read(r->mem, cframe + (uint64_t)l->cframe_current_frame,
				     &frame, sizeof(frame))) {
				t->end = "cframe unreadable";
				t->end_addr = cframe;
				return 0;
			}
		}
	} else {
		frame = u64_at(ts, l->ts_current_frame - ts_lo);
	}
	t->top_frame = frame;
	if (l->frame_lasti != PY_OFF_NONE)
		return 0;	/* walk_heap follows it */
	read_chunk(r, l, ts, ts_lo);
	err = walk_frames(r, l, t, frame);
	r->chunk_len = 0;
	return err;
}

/* The bytes [lo, hi) of a structure that cover the given offsets (each
 * naming an 8-byte field or PY_OFF_NONE): read in one go. 3.13 puts the
 * interpreter state's list links 7 KiB in, after the eval state, so the
 * span starts at the first field used, not at the structure. */
static void span(const int *offs, size_t n, int *lo, int *hi)
{
	*lo = -1;
	*hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (offs[i] == PY_OFF_NONE)
			continue;
		if (*lo < 0 || offs[i] < *lo)
			*lo = offs[i];
		if (offs[i] + 8 > *hi)
			*hi = offs[i] + 8;
	}
	if (*lo < 0)
		*lo = 0;
}

/* Reads an interpreter's thread states where the last capture found them,
 * in one batch, then the frame pointers of their _PyCFrames in a second
 * and their data-stack chunks in a third, and walks each chain from its
 * copy: a handful of system calls for any number of threads, where the
 * walk one list link at a time costs three each. Returns 1 when done, 0
 * when the lists no longer link exactly the hinted thread states (nothing
 * appended: the caller walks them), or -ENOMEM. */
static int batched_threads(struct reader *r, const struct py_layout *l,
			   uint64_t interp, int64_t id, uint64_t head,
			   int ts_lo, int ts_hi)
{
	struct py_capture *cap = r->cap;
	size_t span = (size_t)(ts_hi - ts_lo), n = 0, total = 0, base;
	uint64_t t;

	for (size_t i = 0; i < cap->nhints; i++)
		if (cap->hints[i].interp == interp)
			n++;
	if (!n || n > PY_MAX_THREADS ||
	    reserve(cap, n, 0, 0) || n * span > cap->tsbuf_cap)
		return n ? -ENOMEM : 0;
	n = 0;
	for (size_t i = 0; i < cap->nhints; i++)
		if (cap->hints[i].interp == interp)
			cap->batch[n++].tstate = cap->hints[i].tstate;
	/* The pages of all of them first (most are there: the capture
	   began with the pages the last one used), then each from them. */
	for (size_t i = 0; i < n; i++)
		pg_want(&cap->pages, cap->batch[i].tstate + (uint64_t)ts_lo, span);
	pg_fetch(r->mem, cap);
	t = head;
	for (size_t i = 0; i < n; i++) {
		if (cap->batch[i].tstate != t ||
		    rd(r, t + (uint64_t)ts_lo, cap->tsbuf + i * span, span))
			return 0;
		t = u64_at(cap->tsbuf + i * span, l->ts_next - ts_lo);
	}
	if (t)
		return 0;

	base = cap->nthreads;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *ts = cap->tsbuf + i * span;
		struct py_batch *b = &cap->batch[i];

		struct py_raw_thread *th = thread_from(cap, l, b->tstate, interp,
						       id, ts, ts_lo);

		if (!th)
			return -ENOMEM;
		b->frame = l->ts_cframe == PY_OFF_NONE
				   ? u64_at(ts, l->ts_current_frame - ts_lo) : 0;
		th->top_frame = b->frame;
		b->chunk = b->chunk_len = 0;
		if (l->ts_datastack_chunk != PY_OFF_NONE &&
		    l->ts_datastack_top != PY_OFF_NONE) {
			uint64_t c = u64_at(ts, l->ts_datastack_chunk - ts_lo);
			uint64_t top = u64_at(ts, l->ts_datastack_top - ts_lo);

			if (c && top > c && top - c <= PY_MAX_CHUNK) {
				b->chunk = c;
				b->chunk_len = top - c;
				b->chunk_off = total;
				total += b->chunk_len;
			}
		}
	}
	if (l->ts_cframe != PY_OFF_NONE) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t cf = u64_at(cap->tsbuf + i * span, l->ts_cframe - ts_lo);

			uint64_t a = cf + (uint64_t)l->cframe_current_frame;
			const uint8_t *b = cf && cap->local
				? cap->local(cap->local_user, a, 8) : NULL;

			/* The eval loop's _PyCFrame is a local of its C
			   frame: in the stack copy, mostly. */
			if (b)
				memcpy(&cap->batch[i].frame, b, 8);
			else if (cf)
				cap->iov[k++] = (struct mem_iov){
					a, &cap->batch[i].frame, 8, 0 };
			cap->batch[i].cframe_read = cf && !b;
		}
		if (k) {
			cap->reads += (unsigned)((k + 63) / 64);
			mem_read_many(r->mem, cap->iov, k);
		}
		k = 0;
		for (size_t i = 0; i < n; i++) {
			uint64_t cf = u64_at(cap->tsbuf + i * span, l->ts_cframe - ts_lo);

			if (cap->batch[i].cframe_read && cap->iov[k++].err) {
				cap->batch[i].frame = 0;
				cap->threads[base + i].end = "cframe unreadable";
				cap->threads[base + i].end_addr = cf;
			}
		}
	}
	if (l->frame_lasti != PY_OFF_NONE) {
		cap->batched = true;
		return 1;	/* walk_heap follows the chains */
	}
	if (total > cap->chunk_cap && reserve(cap, 0, 0, total))
		total = 0;
	if (total) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (cap->batch[i].chunk_len)
				cap->iov[k++] = (struct mem_iov){
					cap->batch[i].chunk,
					cap->chunk + cap->batch[i].chunk_off,
					cap->batch[i].chunk_len, 0 };
		cap->reads += (unsigned)((k + 63) / 64);
		mem_read_many(r->mem, cap->iov, k);
		k = 0;
		for (size_t i = 0; i < n; i++)
			if (cap->batch[i].chunk_len && cap->iov[k++].err)
				cap->batch[i].chunk_len = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct py_batch *b = &cap->batch[i];
		int err;

		r->chunk_len = total ? b->chunk_len : 0;
		r->chunk_base = b->chunk;
		r->chunk_off = b->chunk_off;
		cap->threads[base + i].first = cap->nframes;
		cap->threads[base + i].top_frame = b->frame;
		err = walk_frames(r, l, &cap->threads[base + i], b->frame);
		r->chunk_len = 0;
		if (err)
			return err;
	}
	cap->batched = true;
	return 1;
}

/* 3.7-3.10: every frame is a heap object (PyFrameObject), found only
 * from the one after it. The chains of all threads are followed together,
 * in rounds: each round follows every chain as far as the store's pages
 * go and reads the pages the chains stopped at in one batch, so a capture
 * makes a system call per round (none when the pages the last capture
 * used hold them all), not one per frame. Then each thread's chain is
 * walked from the store, bounded and loop-checked, into cap->frames.
 * Threads [from, nthreads). Returns 0 or -ENOMEM. */
static int walk_heap(struct reader *r, const struct py_layout *l, size_t from)
{
	struct py_capture *cap = r->cap;
	size_t n = cap->nthreads - from, fs = (size_t)l->frame_size;
	bool more = true;

	if (grow((void **)&cap->batch, &cap->cap_batch, n, sizeof(*cap->batch)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct py_batch *b = &cap->batch[i];

		b->frame = cap->threads[from + i].end ? 0
						: cap->threads[from + i].top_frame;
		b->steps = 0;
		loop_init(&b->lc, b->frame);
	}
	while (more) {
		for (size_t i = 0; i < n; i++) {
			struct py_batch *b = &cap->batch[i];

			while (b->frame && b->steps < PY_MAX_FRAMES &&
			       !(b->frame & 7)) {
				uint64_t prev;
				const uint8_t *at = pg_at(&cap->pages, b->frame, fs);

				if (at) {
					memcpy(&prev, at + l->frame_previous, sizeof(prev));
				} else {
					int w = pg_want(&cap->pages, b->frame, fs);

					if (w != 1) {
						if (w != 0)
							b->frame = 0; /* the walk says */
						break;
					}
					pg_copy(&cap->pages, b->frame + (uint64_t)l->frame_previous,
						&prev, sizeof(prev));
				}
				b->steps++;
				b->frame = prev && !loop_step(&b->lc, prev) ? prev : 0;
			}
			if (b->steps >= PY_MAX_FRAMES || (b->frame & 7))
				b->frame = 0;
		}
		more = cap->pages.nqueue != 0;
		pg_fetch(r->mem, cap);
	}
	for (size_t i = from; i < cap->nthreads; i++) {
		struct py_raw_thread *t = &cap->threads[i];
		int err;

		if (t->end)
			continue;
		t->first = cap->nframes;
		if ((err = walk_frames(r, l, t, t->top_frame)))
			return err;
	}
	return 0;
}

/* Before 3.11 a thread state has no kernel tid, only thread_id, the
 * thread's pthread_self(): glibc keeps the tid in that struct pthread, at
 * the offset its _thread_db_pthread_tid descriptor gives (rt->pthread_tid,
 * found with the interpreter). Read for every thread in one batch; a
 * value that cannot be read or is not a tid leaves the thread without
 * one (its frames then belong to no kernel thread). */
static void read_tids(const struct py_runtime *rt, struct stacksnap_mem *mem,
		      struct py_capture *cap)
{
	size_t n = 0;

	if (reserve(cap, cap->nthreads, 0, 0))
		return;
	for (size_t i = 0; i < cap->nthreads; i++) {
		struct py_raw_thread *t = &cap->threads[i];

		memset(&cap->batch[i].frame, 0, sizeof(cap->batch[i].frame));
		/* A stopped thread's thread pointer is its struct pthread. */
		if (t->thread_id && cap->tid_of &&
		    (t->native_tid = cap->tid_of(cap->local_user, t->thread_id)))
			continue;
		if (!t->thread_id || !rt->pthread_tid)
			continue;
		cap->iov[n++] = (struct mem_iov){ t->thread_id + rt->pthread_tid,
						  &cap->batch[i].frame, 4, 0 };
	}
	if (!n)
		return;
	cap->reads += (unsigned)((n + 63) / 64);
	mem_read_many(mem, cap->iov, n);
	n = 0;
	for (size_t i = 0; i < cap->nthreads; i++) {
		struct py_raw_thread *t = &cap->threads[i];
		int32_t tid;

		if (!t->thread_id || !rt->pthread_tid || t->native_tid)
			continue;
		memcpy(&tid, &cap->batch[i].frame, 4);
		if (!cap->iov[n++].err && tid > 0)
			t->native_tid = (uint64_t)tid;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* What this capture found, for the next one's batch: the thread states,
 * and the pages read that were used. */
static void keep_hints(struct py_capture *cap)
{
	struct py_pages *p = &cap->pages;

	p->nhints = 0;
	if (!grow((void **)&p->hints, &p->cap_hints, p->n, sizeof(*p->hints)))
		for (size_t i = 0; i < p->n; i++)
			if (p->state[i] == (PG_HAVE | PG_USED))
				p->hints[p->nhints++] = p->addr[i];
	/* In address order: neighbours are read as one range. */
	qsort(p->hints, p->nhints, sizeof(*p->hints), cmp_u64);
	cap->nhints = 0;
	if (grow((void **)&cap->hints, &cap->cap_hints, cap->nthreads,
		 sizeof(*cap->hints)))
		return;
	for (size_t i = 0; i < cap->nthreads; i++)
		cap->hints[cap->nhints++] = (struct py_hint){
			cap->threads[i].interp, cap->threads[i].tstate };
}

int py_capture__all(const struct py_runtime *rt, struct stacksnap_mem *mem,
		    struct py_capture *cap)
{
	const struct py_layout *l = rt->layout;
	struct reader r = { .mem = mem, .cap = cap };
	uint8_t rs[2048], is[1024], ts_buf[1024];
	int rs_lo, rs_hi, is_lo, is_hi, ts_lo, ts_hi;
	uint64_t interp;
	struct loop_check ilc;
	int err;

	py_capture__clear(cap);
	if (!l)
		return -ENOTSUP;
	cap->heap_frames = l->frame_lasti != PY_OFF_NONE;
	const int rs_offs[] = { l->rt_initialized, l->rt_finalizing,
				l->rt_interpreters_head, l->rt_gil_locked,
				l->rt_gil_holder };
	const int is_offs[] = { l->interp_next, l->interp_id,
				l->interp_threads_head };
	const int ts_offs[] = { l->ts_next, l->ts_thread_id,
				l->ts_native_thread_id, l->ts_cframe,
				l->ts_current_frame, l->ts_datastack_chunk,
				l->ts_datastack_top };
	span(rs_offs, 5, &rs_lo, &rs_hi);
	span(is_offs, 3, &is_lo, &is_hi);
	span(ts_offs, 7, &ts_lo, &ts_hi);
	if (rs_hi - rs_lo > (int)sizeof(rs) || is_hi - is_lo > (int)sizeof(is) ||
	    ts_hi - ts_lo > (int)sizeof(ts_buf) ||
	    l->frame_size > PY_MAX_FRAME_SIZE)
		return -EINVAL;
	mem_invalidate(mem);
	/* The pages the last capture used, in one batch: what has not
	   changed place (a thread's frames, thread states, the runtime's
	   lists) is then read in no more system calls. */
	pg_reset(&cap->pages);
	for (size_t i = 0; i < cap->pages.nhints; i++)
		if (pg_add(&cap->pages, cap->pages.hints[i]) < 0)
			break;
	pg_fetch(mem, cap);
	if (rd(&r, rt->runtime_addr + (uint64_t)rs_lo, rs,
	       (size_t)(rs_hi - rs_lo)))
		return -EFAULT;
	if (l->rt_finalizing != PY_OFF_NONE && u64_at(rs, l->rt_finalizing - rs_lo))
		cap->state = "finalizing";
	if (l->rt_gil_locked != PY_OFF_NONE) {
		cap->gil_locked = i32_at(rs, l->rt_gil_locked - rs_lo) != 0;
		cap->gil_holder = u64_at(rs, l->rt_gil_holder - rs_lo);
	}
	interp = u64_at(rs, l->rt_interpreters_head - rs_lo);
	if (!interp || (l->rt_initialized != PY_OFF_NONE &&
			!i32_at(rs, l->rt_initialized - rs_lo))) {
		if (!cap->state)
			cap->state = "not initialized";
		if (!interp)
			return 0;
	}
	loop_init(&ilc, interp);
	while (interp) {
		uint64_t tstate;
		struct loop_check tlc;
		int64_t id;

		if (cap->ninterps == PY_MAX_INTERPS) {
			cap->end = "too many interpreters";
			break;
		}
		if (rd(&r, interp + (uint64_t)is_lo, is, (size_t)(is_hi - is_lo))) {
			cap->end = "interpreter state unreadable";
			break;
		}
		cap->ninterps++;
		memcpy(&id, is + l->interp_id - is_lo, sizeof(id));
		if (l->interp_gil_locked != PY_OFF_NONE) {
			uint8_t g[16];

			/* 3.12+: each interpreter's own GIL. */
			if (!rd(&r, interp + (uint64_t)l->interp_gil_locked, g, 4) &&
			    i32_at(g, 0)) {
				uint64_t holder;

				if (!rd(&r, interp + (uint64_t)l->interp_gil_holder,
					&holder, 8)) {
					cap->gil_locked = true;
					cap->gil_holder = holder;
				}
			}
		}
		tstate = u64_at(is, l->interp_threads_head - is_lo);
		err = tstate ? batched_threads(&r, l, interp, id, tstate, ts_lo,
					       ts_hi) : 0;
		if (err < 0)
			return err;
		if (err > 0)
			tstate = 0;	/* done by the batch */
		loop_init(&tlc, tstate);
		while (tstate) {
			if (cap->nthreads == PY_MAX_THREADS) {
				cap->end = "too many threads";
				break;
			}
			if (rd(&r, tstate + (uint64_t)ts_lo, ts_buf,
			       (size_t)(ts_hi - ts_lo))) {
				cap->end = "thread state unreadable";
				break;
			}
			err = capture_thread(&r, l, tstate, interp, id, ts_buf, ts_lo);
			if (err)
				return err;
			tstate = u64_at(ts_buf, l->ts_next - ts_lo);
			if (tstate && loop_step(&tlc, tstate)) {
				cap->end = "loop in thread list";
				break;
			}
		}
		interp = u64_at(is, l->interp_next - is_lo);
		if (interp && loop_step(&ilc, interp)) {
			cap->end = "loop in interpreter list";
			break;
		}
	}
	if (l->frame_lasti != PY_OFF_NONE && (err = walk_heap(&r, l, 0)))
		return err;
	if (l->ts_native_thread_id == PY_OFF_NONE)
		read_tids(rt, mem, cap);
	if (cap->gil_locked)
		for (size_t i = 0; i < cap->nthreads; i++)
			cap->threads[i].holds_gil =
				cap->threads[i].tstate == cap->gil_holder;
	keep_hints(cap);
	return 0;
}
