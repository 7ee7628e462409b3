/* go_waits.c - what a waiting goroutine waits on, read from the stopped
 * process: the channel of a channel send or receive and every channel of
 * a select (g.waiting: the goroutine's sudogs, chained by waitlink, each
 * naming its hchan), and the sync object of a semaphore wait (the
 * runtime keeps no link from the g to it: runtime.semtable's treaps are
 * walked for the sudog whose g is this one; its elem is the semaphore,
 * inside the sync.Mutex, RWMutex or WaitGroup). Every read bounded and
 * checked; what cannot be read is said (go_runtime.h). */
#include "runtime/go/go_runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SEMTAB_SIZE 251		/* runtime.semTabSize, every version */
#define SEMTAB_MAX_BYTES (1u << 16)
#define CHAN_CACHE 1024		/* channels remembered in one pass */


/* g's room for its objects, made on first use: most goroutines wait on
 * none, and a list of 20,000 keeps them out of line. False (said in
 * obj_unknown) when out of memory. */
static bool objs_ready(struct goroutine *g)
{
	if (!g->objs && !(g->objs = calloc(GO_MAX_WAIT_OBJECTS, sizeof(*g->objs))))
		g->obj_unknown = "object not known: out of memory";
	return g->objs != NULL;
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static bool bad_ptr(uint64_t p)
{
	return !p || (p & 7) || p >= (1ull << 47);
}

/* The waiters of a channel queue (a waitq: sudogs linked by next),
 * counted up to GO_MAX_WAITQ; false when a link cannot be read. */
static bool count_queue(const struct go_layout *l, struct stacksnap_mem *mem,
			uint64_t first, uint32_t *n, bool *cut)
{
	uint64_t s = first;

	*n = 0;
	while (s) {
		if (*n >= GO_MAX_WAITQ) {
			*cut = true;
			return true;
		}
		if (bad_ptr(s) || mem_read(mem, s + l->sudog_next, &s, 8) < 0)
			return false;
		(*n)++;
	}
	return true;
}

/* The name of the _type at t (a channel's element type) into out, as
 * Go's reflect prints it, or "": t inside the module's type data, its
 * str a name there (a flags byte, a varint length, the bytes), printable.
 * Two bounded reads. */
static void type_name(const struct go_runtime *rt, struct stacksnap_mem *mem,
		      uint64_t bias, uint64_t t, char *out, size_t cap)
{
	const struct go_layout *l = &rt->layout;
	uint8_t tflag, hdr[3];
	int32_t off;
	uint64_t at, len;
	size_t skip;

	out[0] = 0;
	if (!l->type_str || !rt->types || t < rt->types + bias ||
	    t >= rt->etypes + bias ||
	    mem_read(mem, t + l->type_tflag, &tflag, 1) < 0 ||
	    mem_read(mem, t + l->type_str, &off, 4) < 0 || off < 0)
		return;
	at = rt->types + bias + (uint64_t)off;
	if (at + 3 > rt->etypes + bias || mem_read(mem, at, hdr, 3) < 0)
		return;
	/* the length, a varint of at most two bytes here */
	len = hdr[1] & 0x7f;
	skip = 2;
	if (hdr[1] & 0x80) {
		len |= (uint64_t)(hdr[2] & 0x7f) << 7;
		skip = 3;
		if (hdr[2] & 0x80)
			return;
	}
	/* tflagExtraStar: the name is "*T", T's name wanted */
	if (tflag & 2) {
		if (!len)
			return;
		skip++;
		len--;
	}
	if (!len || len >= cap || at + skip + len > rt->etypes + bias ||
	    mem_read(mem, at + skip, out, len) < 0) {
		out[0] = 0;
		return;
	}
	out[len] = 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] > 0x7e) {
			out[0] = 0;
			return;
		}
}

/* Reads the channel at c into o: NULL, or why it cannot be. */
static const char *read_chan(const struct go_runtime *rt,
			     struct stacksnap_mem *mem, uint64_t bias,
			     uint64_t c, struct go_wait_object *o)
{
	const struct go_layout *l = &rt->layout;
	uint8_t buf[4096];
	uint32_t closed;

	memset(o, 0, sizeof(*o));
	o->addr = c;
	o->type = "chan";
	o->capacity = -1;
	if (bad_ptr(c))
		return "object not known: its sudog names no channel";
	if (l->hchan_size > sizeof(buf) || mem_read(mem, c, buf, l->hchan_size) < 0)
		return "object not known: its channel could not be read";
	memcpy(&closed, buf + l->hchan_closed, 4);
	o->capacity = (int64_t)u64_at(buf, l->hchan_dataqsiz);
	o->queued = (int64_t)u64_at(buf, l->hchan_qcount);
	o->closed = closed != 0;
	if (o->capacity < 0 || o->queued < 0 || o->queued > o->capacity ||
	    closed > 1) {
		o->capacity = -1;
		o->queued = 0;
		return "object not known: its channel makes no sense (a queue beyond its capacity)";
	}
	if (!count_queue(l, mem, u64_at(buf, l->hchan_recvq), &o->receivers,
			 &o->counts_cut) ||
	    !count_queue(l, mem, u64_at(buf, l->hchan_sendq), &o->senders,
			 &o->counts_cut))
		return "object not known: its channel's wait queue could not be read";
	type_name(rt, mem, bias, u64_at(buf, l->hchan_elemtype), o->elem_type,
		  sizeof(o->elem_type));
	return NULL;
}

struct chan_cache {
	struct go_wait_object *slot;	/* CHAN_CACHE, addr 0: empty */
};

static const char *chan_at(const struct go_runtime *rt,
			   struct stacksnap_mem *mem, uint64_t bias,
			   struct chan_cache *cc, uint64_t c,
			   struct go_wait_object *o)
{
	size_t h = (size_t)((c >> 3) * 0x9e3779b97f4a7c15ull >> 54) % CHAN_CACHE;
	const char *why;

	for (size_t k = 0; cc->slot && k < 8; k++) {
		struct go_wait_object *e = &cc->slot[(h + k) % CHAN_CACHE];

		if (e->addr == c && c) {
			*o = *e;
			return NULL;
		}
		if (!e->addr)
			break;
	}
	why = read_chan(rt, mem, bias, c, o);
	for (size_t k = 0; !why && cc->slot && k < 8; k++) {
		struct go_wait_object *e = &cc->slot[(h + k) % CHAN_CACHE];

		if (!e->addr) {
			*e = *o;
			break;
		}
	}
	return why;
}

/* A channel wait: the channels of g.waiting's sudogs (one, or a
 * select's, chained by waitlink). */
static void chan_wait(const struct go_runtime *rt, struct stacksnap_mem *mem,
		      uint64_t bias, struct chan_cache *cc, struct goroutine *g)
{
	const struct go_layout *l = &rt->layout;
	uint64_t s = g->waiting;
	uint8_t buf[4096];

	if (!s) {
		g->obj_unknown = "object not known: the goroutine's g.waiting "
				 "is empty (it is being woken)";
		return;
	}
	if (!objs_ready(g))
		return;
	while (s && g->nobjs < GO_MAX_WAIT_OBJECTS) {
		const char *why;

		if (bad_ptr(s) || l->sudog_size > sizeof(buf) ||
		    mem_read(mem, s, buf, l->sudog_size) < 0) {
			g->obj_unknown = "object not known: its sudog could not "
					 "be read";
			return;
		}
		why = chan_at(rt, mem, bias, cc, u64_at(buf, l->sudog_c),
			      &g->objs[g->nobjs]);
		if (why) {
			g->obj_unknown = why;
			return;
		}
		g->nobjs++;
		s = u64_at(buf, l->sudog_waitlink);
	}
}

static bool is_reason(const char *r, const char *const *set, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		if (!strcmp(r, set[i]))
			return true;
	return false;
}

static const char *const chan_reasons[] = { "chan receive", "chan send",
					    "select" };
static const char *const sema_reasons[] = { "semacquire", "sync.Mutex.Lock",
	"sync.RWMutex.Lock", "sync.RWMutex.RLock", "sync.WaitGroup.Wait" };

/* The sync object around semaphore sema, told by g's innermost sync
 * frame. The semaphore's place in each (Go's published layouts, the same
 * from Go 1.0 for Mutex and RWMutex, Go 1.19 and later for WaitGroup on
 * 64-bit): sync.Mutex{state int32; sema uint32}; sync.RWMutex{w Mutex;
 * writerSem, readerSem uint32...} (its Lock waits first on w);
 * sync.WaitGroup{noCopy; state1 uint64; state2 uint32} (1.20: state,
 * sema: the same place). */
static void sync_object(const struct goroutine *g, uint64_t sema,
			struct go_wait_object *o)
{
	static const struct {
		const char *fn, *type;
		uint32_t sema_off;
	} objs[] = {
		{ "sync.(*Mutex).", "sync.Mutex", 4 },
		{ "sync.(*RWMutex).RLock", "sync.RWMutex", 12 },
		{ "sync.(*RWMutex).Lock", "sync.RWMutex", 8 },
		{ "sync.(*WaitGroup).Wait", "sync.WaitGroup", 8 },
	};

	memset(o, 0, sizeof(*o));
	o->capacity = -1;
	o->addr = sema;
	o->type = "semaphore";
	for (size_t i = 0; i < g->nframes; i++)
		for (size_t k = 0; g->frames[i].function &&
				   k < sizeof(objs) / sizeof(objs[0]); k++)
			if (!strncmp(g->frames[i].function, objs[k].fn,
				     strlen(objs[k].fn))) {
				o->addr = sema - objs[k].sema_off;
				o->type = objs[k].type;
				return;
			}
}

struct sema_want {
	uint64_t g;
	size_t index;
};

static int cmp_want(const void *a, const void *b)
{
	const struct sema_want *x = a, *y = b;

	return x->g < y->g ? -1 : x->g > y->g;
}

/* One sudog of the semaphore treaps: its goroutine, if wanted, gets its
 * semaphore (elem). */
static void sema_found(struct goroutine *gs, const struct sema_want *want,
		       size_t nwant, uint64_t g, uint64_t elem)
{
	struct sema_want key = { g, 0 }, *w;

	w = bsearch(&key, want, nwant, sizeof(*want), cmp_want);
	if (!w || gs[w->index].nobjs || bad_ptr(elem & ~7ull) ||
	    !objs_ready(&gs[w->index]))
		return;
	sync_object(&gs[w->index], elem, &gs[w->index].objs[0]);
	gs[w->index].nobjs = 1;
	gs[w->index].obj_unknown = NULL;
}

/* Walks runtime.semtable: each root's treap (children prev and next),
 * each node's waiters on the same address (waitlink), at most
 * GO_MAX_SEMA_NODES sudogs in all. NULL, or why it could not. */
static const char *walk_semtable(const struct go_runtime *rt,
				 struct stacksnap_mem *mem, uint64_t bias,
				 struct goroutine *gs,
				 const struct sema_want *want, size_t nwant)
{
	const struct go_layout *l = &rt->layout;
	uint64_t stride = rt->semtable_size / SEMTAB_SIZE, *stack;
	size_t budget = GO_MAX_SEMA_NODES, top;
	uint8_t *tab, sbuf[4096];
	const char *why = NULL;

	if (!rt->semtable)
		return "object not known: runtime.semtable is not in the symbol "
		       "table nor found in runtime.semacquire1's code";
	if (rt->semtable_size > SEMTAB_MAX_BYTES || stride < l->semroot_treap + 8 ||
	    l->sudog_size > sizeof(sbuf))
		return "object not known: runtime.semtable's size makes no sense";
	tab = malloc(rt->semtable_size);
	stack = malloc(GO_MAX_SEMA_NODES * sizeof(*stack));
	if (!tab || !stack) {
		free(tab);
		free(stack);
		return "object not known: out of memory";
	}
	if (mem_read(mem, rt->semtable + bias, tab, rt->semtable_size) < 0)
		why = "object not known: runtime.semtable could not be read";
	for (size_t r = 0; !why && r < SEMTAB_SIZE && budget; r++) {
		top = 0;
		stack[top] = u64_at(tab, (uint32_t)(r * stride + l->semroot_treap));
		top += stack[top] != 0;
		while (top && budget) {
			uint64_t node = stack[--top], s = node;

			/* the node, then its waiters on the same address */
			while (s && budget) {
				budget--;
				if (bad_ptr(s) ||
				    mem_read(mem, s, sbuf, l->sudog_size) < 0) {
					why = "object not known: a sudog of "
					      "runtime.semtable could not be read";
					break;
				}
				sema_found(gs, want, nwant, u64_at(sbuf, l->sudog_g),
					   u64_at(sbuf, l->sudog_elem));
				if (s == node) {
					uint64_t kids[2] = {
						u64_at(sbuf, l->sudog_prev),
						u64_at(sbuf, l->sudog_next) };

					for (int k = 0; k < 2; k++)
						if (kids[k] && top < GO_MAX_SEMA_NODES)
							stack[top++] = kids[k];
				}
				s = u64_at(sbuf, l->sudog_waitlink);
			}
			if (why)
				break;
		}
	}
	if (!why && !budget)
		why = "object not known: runtime.semtable holds more sudogs "
		      "than are walked";
	free(tab);
	free(stack);
	return why;
}

int go_goroutines__read_waits(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, uint64_t bias,
			      struct goroutine *gs, size_t n)
{
	const struct go_layout *l = &rt->layout;
	struct chan_cache cc = { calloc(CHAN_CACHE, sizeof(*cc.slot)) };
	struct sema_want *want = NULL;
	size_t nwant = 0;

	for (size_t i = 0; i < n; i++) {
		struct goroutine *g = &gs[i];
		const char *r;

		g->nobjs = 0;
		g->obj_unknown = NULL;
		if ((g->status & ~(uint32_t)GO_GSCAN) != GO_GWAITING)
			continue;
		r = go_wait_reason(g->waitreason);
		if (!is_reason(r, chan_reasons, 3) && !is_reason(r, sema_reasons, 5))
			continue;
		if (!rt->have_layout || !l->waits) {
			g->obj_unknown = "object not known: no layout of the "
					 "runtime's wait structures for this "
					 "Go version";
			continue;
		}
		if (is_reason(r, chan_reasons, 3)) {
			chan_wait(rt, mem, bias, &cc, g);
			continue;
		}
		g->obj_unknown = "object not known: its sudog is not in "
				 "runtime.semtable";
		if (!want && !(want = malloc(n * sizeof(*want)))) {
			free(cc.slot);
			return fail(-ENOMEM);
		}
		want[nwant].g = g->g;
		want[nwant++].index = i;
	}
	free(cc.slot);
	if (nwant) {
		const char *why;

		qsort(want, nwant, sizeof(*want), cmp_want);
		why = walk_semtable(rt, mem, bias, gs, want, nwant);
		for (size_t i = 0; why && i < nwant; i++)
			if (!gs[want[i].index].nobjs)
				gs[want[i].index].obj_unknown = why;
	}
	free(want);
	return 0;
}
