/* rb_frames.c - a Ruby thread's control frames: copied in the freeze
 * (ruby_current_ec through the native thread's TLS, then the control
 * frames from ec->cfp up to the end of the VM stack, one read, and each
 * frame's env flags), named after the thaw from the iseqs (label, path,
 * the line of the pc from the insns_info table), and merged into the
 * native frames of rb_vm_exec. Every read of the target is bounded. */
#include "runtime/ruby/ruby.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

#define VM_FRAME_FLAG_FINISH 0x0020
#define VM_FRAME_FLAG_CFRAME 0x0080
#define VM_FRAME_MAGIC_MASK 0x7fff0001
#define VM_FRAME_MAGIC_CFUNC 0x55550001
#define T_IMEMO 0x1a
#define IMEMO_SVAR 2		/* (flags >> 12) & 0xf: imemo_svar */
#define IMEMO_MENT 6		/* imemo_ment */
#define RB_QNIL 0x08
#define RB_MAX_STR 4096		/* longest label or path read */
#define RB_MAX_VALUES (1u << 20)	/* bytes of a thread's VM stack values
				   read in one range for its envs */
#define RB_MAX_ISEQ (1u << 22)	/* instructions of one iseq */
#define RB_MAX_INSNS (1u << 20)	/* insns_info entries */
#define T_MASK 0x1f
#define T_STRING 0x05
#define T_ARRAY 0x07

static int rd(struct stacksnap_mem *mem, unsigned *reads, uint64_t addr,
	      void *buf, size_t len)
{
	(*reads)++;
	return stacksnap_mem__read(mem, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, unsigned off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

int rb_capture__reserve(struct rb_capture *cap, size_t nthreads, size_t nframes)
{
	if (nthreads > cap->cap_threads) {
		void *p = realloc(cap->threads, nthreads * sizeof(*cap->threads));

		if (!p)
			return -ENOMEM;
		cap->threads = p;
		cap->cap_threads = nthreads;
	}
	if (nframes > cap->cap_frames) {
		void *p = realloc(cap->frames, nframes * sizeof(*cap->frames));

		if (!p)
			return -ENOMEM;
		cap->frames = p;
		cap->cap_frames = nframes;
	}
	return 0;
}

void rb_capture__clear(struct rb_capture *cap)
{
	cap->nthreads = 0;
	cap->nframes = 0;
	cap->reads = 0;
}

void rb_capture__free(struct rb_capture *cap)
{
	free(cap->threads);
	free(cap->frames);
	free(cap->buf);
	free(cap->listed);
	free(cap->pend);
	free(cap->iov);
	free(cap->env);
	free(cap->sbuf);
	memset(cap, 0, sizeof(*cap));
}

int rb_capture__list(const struct rb_runtime *rt, struct stacksnap_mem *mem,
		     struct rb_capture *cap)
{
	const struct rb_layout *l = rt->layout;
	uint64_t vm, main, node;

	cap->nlisted = 0;
	if (!l || rd(mem, &cap->reads, rt->vm_ptr_addr, &vm, 8) || !vm ||
	    rd(mem, &cap->reads, vm + l->vm_main_thread, &main, 8) || !main)
		return 0;
	node = main;
	for (unsigned steps = 0; steps < RB_MAX_THREADS; steps++) {
		uint64_t th[11], tp;
		uint32_t tid;

		/* The list's head, inside the ractor, is no thread: its
		   "vm" slot is not the VM. */
		if (rd(mem, &cap->reads, node, th, sizeof(th)))
			break;
		if (th[l->th_vm / 8] == vm && (tp = th[l->th_thread_id / 8]) &&
		    !rd(mem, &cap->reads, tp + l->pthread_tid, &tid, 4) && tid) {
			if (cap->nlisted == cap->cap_listed) {
				size_t c = cap->cap_listed ? 2 * cap->cap_listed : 64;
				void *p = realloc(cap->listed, c * sizeof(*cap->listed));

				if (!p)
					return -ENOMEM;
				cap->listed = p;
				cap->cap_listed = c;
			}
			cap->listed[cap->nlisted].tid = tid;
			cap->listed[cap->nlisted++].tp = tp;
		}
		node = th[0];		/* lt_node.next */
		if (!node || node == main)
			break;
	}
	return 0;
}

uint64_t rb_capture__listed_tp(const struct rb_capture *cap, uint64_t tid)
{
	for (size_t i = 0; i < cap->nlisted; i++)
		if (cap->listed[i].tid == tid)
			return cap->listed[i].tp;
	return 0;
}

const struct rb_raw_thread *rb_capture__find(const struct rb_capture *cap,
					     uint64_t tid)
{
	for (size_t i = 0; i < cap->nthreads; i++)
		if (cap->threads[i].tid == tid)
			return &cap->threads[i];
	return NULL;
}

/* One thread in rb_capture__threads: what each level read. */
struct rb_pending {
	uint64_t tid, tp;
	uint64_t a;		/* the DTV, then the TLS block */
	uint64_t ec;
	uint64_t ecb[3];	/* ec's vm_stack, vm_stack_size, cfp */
	size_t t;		/* its index in cap->threads */
	size_t n, off;		/* its control frames, at off in cap->buf */
	uint64_t lo, hi;	/* the VM stack's values its envs lie in, */
	size_t soff;		/* read at soff in cap->sbuf */
};

/* Whether the env at ep (from ep - back to ep + 8) lies in the range of
 * p's VM stack values read in one. */
static bool env_in(const struct rb_pending *p, uint64_t ep, unsigned back)
{
	return p->hi && ep > back && ep - back >= p->lo && ep < p->hi &&
	       p->hi - ep >= 8;
}

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
	void *q;

	if (want <= *cap)
		return 0;
	if (!(q = realloc(*p, want * size)))
		return -ENOMEM;
	*p = q;
	*cap = want;
	return 0;
}

/* Reads the k ranges of cap->iov; a range that fails reads as zeros. */
static void batch(struct stacksnap_mem *mem, struct rb_capture *cap, size_t k)
{
	if (!k)
		return;
	cap->reads += (unsigned)k;
	if (!mem_read_many(mem, cap->iov, k))
		return;
	for (size_t i = 0; i < k; i++)
		if (cap->iov[i].err)
			memset(cap->iov[i].buf, 0, cap->iov[i].len);
}

static void want(struct rb_capture *cap, size_t *k, uint64_t addr, void *buf,
		 size_t len)
{
	cap->iov[(*k)++] = (struct mem_iov){ .addr = addr, .buf = buf, .len = len };
}

int rb_capture__threads(const struct rb_runtime *rt, struct stacksnap_mem *mem,
			const struct rb_listed *who, size_t n,
			struct rb_capture *cap)
{
	const struct rb_layout *l = rt->layout;
	struct rb_pending *p;
	size_t k, np = 0, bytes = 0, nf = 0;

	if (!l || !n)
		return 0;
	if (l->ep_me_cref + 8 > 24 || l->ec_vm_stack > 16 || l->ec_vm_stack_size > 16 ||
	    l->ec_cfp > 16 || l->cfp_size < l->cfp_ep + 8)
		return 0;
	if (grow((void **)&cap->pend, &cap->cap_pend, n, sizeof(*cap->pend)) ||
	    grow((void **)&cap->iov, &cap->cap_iov, n, sizeof(*cap->iov)))
		return -ENOMEM;
	p = cap->pend;
	/* The execution context each thread runs: ruby_current_ec in
	   libruby's TLS block, through the thread's DTV (tcbhead_t.dtv at
	   the thread pointer + 8; entry modid of 16 bytes: {val, to_free}). */
	k = 0;
	for (size_t i = 0; i < n; i++) {
		p[i] = (struct rb_pending){ .tid = who[i].tid, .tp = who[i].tp };
		if (p[i].tp)
			want(cap, &k, p[i].tp + 8, &p[i].a, 8);
	}
	batch(mem, cap, k);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].a)
			want(cap, &k, p[i].a + 16 * rt->tls_modid, &p[i].a, 8);
		else
			p[i].tp = 0;
	batch(mem, cap, k);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].tp && p[i].a && p[i].a != UINT64_MAX)
			want(cap, &k, p[i].a + rt->ec_tls_off, &p[i].ec, 8);
	batch(mem, cap, k);
	/* Each Ruby thread (0: the thread runs no Ruby, e.g. the timer
	   thread): its execution context's stack and frame pointer. */
	k = 0;
	for (size_t i = 0; i < n; i++) {
		struct rb_raw_thread *t;

		if (!p[i].tp || !p[i].ec)
			continue;
		if (cap->nthreads >= RB_MAX_THREADS ||
		    rb_capture__reserve(cap, cap->nthreads + 1, cap->nframes))
			return -ENOMEM;
		p[i].t = cap->nthreads;
		t = &cap->threads[cap->nthreads++];
		memset(t, 0, sizeof(*t));
		t->tid = p[i].tid;
		t->ec = p[i].ec;
		t->end = "execution context unreadable";
		want(cap, &k, p[i].ec, p[i].ecb, sizeof(p[i].ecb));
		p[np++] = p[i];		/* only these go on */
	}
	batch(mem, cap, k);
	/* Their control frames lie from cfp up to the VM stack's end: one
	   range each. */
	for (size_t i = 0; i < np; i++) {
		struct rb_raw_thread *t = &cap->threads[p[i].t];
		uint64_t stack = p[i].ecb[l->ec_vm_stack / 8];
		uint64_t size = p[i].ecb[l->ec_vm_stack_size / 8];
		uint64_t cfp = p[i].ecb[l->ec_cfp / 8], end = stack + size * 8;

		p[i].n = 0;
		if (!stack && !size && !cfp)
			continue;	/* unreadable, said so */
		t->end = NULL;
		if (!stack || size > (1u << 28) || end < stack || cfp < stack ||
		    cfp >= end || (end - cfp) % l->cfp_size) {
			t->end = "control frame pointer outside the VM stack";
			continue;
		}
		p[i].n = (end - cfp) / l->cfp_size;
		if (p[i].n > RB_MAX_FRAMES) {
			p[i].n = RB_MAX_FRAMES;
			t->end = "too many frames";
		}
		p[i].off = bytes;
		bytes += p[i].n * l->cfp_size;
		nf += p[i].n;
	}
	if (grow((void **)&cap->buf, &cap->buf_cap, bytes, 1) ||
	    grow((void **)&cap->iov, &cap->cap_iov, nf > np ? nf : np, sizeof(*cap->iov)) ||
	    grow((void **)&cap->env, &cap->cap_env, 3 * nf, sizeof(*cap->env)) ||
	    rb_capture__reserve(cap, cap->nthreads, cap->nframes + nf))
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < np; i++)
		if (p[i].n)
			want(cap, &k, p[i].ecb[l->ec_cfp / 8], cap->buf + p[i].off,
			     p[i].n * l->cfp_size);
	batch(mem, cap, k);
	/* Each frame's env, ep[-2] (the method entry or cref) to ep[0]
	   (flags): the envs on the VM stack (below the control frames) in
	   one range a thread, from the lowest to the highest; an env moved
	   to the heap (a block's, kept by a Proc) a range of its own. */
	size_t sbytes = 0;

	for (size_t i = 0; i < np; i++) {
		uint64_t stack = p[i].ecb[l->ec_vm_stack / 8];
		uint64_t cfp = p[i].ecb[l->ec_cfp / 8];

		p[i].lo = UINT64_MAX;
		p[i].hi = 0;
		for (size_t f = 0; f < p[i].n; f++) {
			uint64_t ep = u64_at(cap->buf + p[i].off + f * l->cfp_size, l->cfp_ep);

			if (ep >= stack && ep - stack >= l->ep_me_cref && ep < cfp &&
			    cfp - ep >= 8) {
				if (ep - l->ep_me_cref < p[i].lo)
					p[i].lo = ep - l->ep_me_cref;
				if (ep + 8 > p[i].hi)
					p[i].hi = ep + 8;
			}
		}
		if (p[i].hi <= p[i].lo || p[i].hi - p[i].lo > RB_MAX_VALUES) {
			p[i].lo = p[i].hi = 0;
			continue;
		}
		p[i].soff = sbytes;
		sbytes += p[i].hi - p[i].lo;
	}
	if (grow((void **)&cap->sbuf, &cap->cap_sbuf, sbytes, 1) ||
	    grow((void **)&cap->iov, &cap->cap_iov, nf + np, sizeof(*cap->iov)))
		return -ENOMEM;
	k = 0;
	for (size_t i = 0, j = 0; i < np; i++) {
		if (p[i].hi)
			want(cap, &k, p[i].lo, cap->sbuf + p[i].soff, p[i].hi - p[i].lo);
		for (size_t f = 0; f < p[i].n; f++, j++) {
			uint64_t ep = u64_at(cap->buf + p[i].off + f * l->cfp_size, l->cfp_ep);

			memset(&cap->env[3 * j], 0, 24);
			if (ep > l->ep_me_cref && !env_in(&p[i], ep, l->ep_me_cref))
				want(cap, &k, ep - l->ep_me_cref, &cap->env[3 * j],
				     l->ep_me_cref + 8);
		}
	}
	batch(mem, cap, k);
	for (size_t i = 0, j = 0; i < np; i++)
		for (size_t f = 0; f < p[i].n; f++, j++) {
			uint64_t ep = u64_at(cap->buf + p[i].off + f * l->cfp_size, l->cfp_ep);

			if (env_in(&p[i], ep, l->ep_me_cref))
				memcpy(&cap->env[3 * j],
				       cap->sbuf + p[i].soff + (ep - l->ep_me_cref - p[i].lo),
				       l->ep_me_cref + 8);
		}
	for (size_t i = 0, j = 0; i < np; i++) {
		struct rb_raw_thread *t = &cap->threads[p[i].t];
		bool zero = true;

		t->first = cap->nframes;
		/* All-zero frames: the range's read failed. */
		for (size_t b = 0; b < p[i].n * l->cfp_size && zero; b += 8)
			zero = !u64_at(cap->buf + p[i].off, (unsigned)b);
		if (p[i].n && zero) {
			t->end = "control frames unreadable";
			j += p[i].n;
			continue;
		}
		for (size_t f = 0; f < p[i].n; f++, j++) {
			const uint8_t *fb = cap->buf + p[i].off + f * l->cfp_size;
			struct rb_raw_frame *rf = &cap->frames[cap->nframes++];
			const uint64_t *env = &cap->env[3 * j];
			uint64_t flags = env[l->ep_me_cref / 8];

			rf->pc = u64_at(fb, l->cfp_pc);
			rf->iseq = u64_at(fb, l->cfp_iseq);
			rf->flags = 0;
			if (flags & VM_FRAME_FLAG_FINISH)
				rf->flags |= RB_FRAME_FINISH;
			if (flags && !(flags & VM_FRAME_FLAG_CFRAME) && rf->iseq && rf->pc)
				rf->flags |= RB_FRAME_RUBY;
			/* A C method (Ruby's RUBYVM_CFUNC_FRAME_P, no iseq):
			   named after the thaw from its method entry. */
			if ((flags & VM_FRAME_MAGIC_MASK) == VM_FRAME_MAGIC_CFUNC &&
			    !rf->iseq) {
				rf->flags |= RB_FRAME_RUBY | RB_FRAME_CFUNC;
				rf->iseq = env[0];
			}
			t->n++;
		}
		/* Ruby's backtrace starts at the second control frame from
		   the stack's end (backtrace_each): the outermost is a
		   thread's dummy frame, or the main thread's top-level frame
		   of Init_VM. */
		if (!t->end && t->n)
			cap->frames[t->first + t->n - 1].flags &=
				(uint8_t)~(RB_FRAME_RUBY | RB_FRAME_CFUNC);
	}
	return 0;
}

int rb_capture__thread(const struct rb_runtime *rt, struct stacksnap_mem *mem,
		       uint64_t tid, uint64_t fs_base, struct rb_capture *cap)
{
	struct rb_listed who = { .tid = tid, .tp = fs_base };

	return rb_capture__threads(rt, mem, &who, 1, cap);
}

/* ------------------------------------------------------------------ */
/* Naming */

struct rb_iseq_names {
	uint64_t iseq;			/* or a C method's method entry;
					   0: stale (kept for its strings) */
	uint64_t body;			/* iseq->body, or the entry's def */
	bool cfunc;
	char *label, *path;
	uint64_t encoded;
	unsigned iseq_size, first_line;
	uint8_t *entries;		/* insns_info.body */
	uint32_t *positions;		/* NULL: succ is used */
	uint8_t *succ;
	size_t nentries, succ_len;
	bool ok;
};

/* A heap object's address (not a special constant, not nil). */
static bool heap_value(uint64_t v)
{
	return v && !(v & 7) && v < (1ull << 47);
}

/* A String's bytes, NUL-terminated, malloc'ed; NULL when v is not one. */
static char *read_string(struct rb_resolver *r, uint64_t v)
{
	const struct rb_layout *l = r->rt->layout;
	uint8_t b[40];
	uint64_t flags, len, ptr;
	char *s;

	if (!heap_value(v) || rd(r->mem, &r->reads, v, b, sizeof(b)))
		return NULL;
	flags = u64_at(b, 0);
	if ((flags & T_MASK) != T_STRING)
		return NULL;
	if (!(flags & l->str_noembed)) {
		len = (flags >> l->str_embed_len_shift) & l->str_embed_len_mask;
		if (l->str_embed_ary + len > sizeof(b))
			return NULL;
		s = malloc(len + 1);
		if (s) {
			memcpy(s, b + l->str_embed_ary, len);
			s[len] = '\0';
		}
		return s;
	}
	len = u64_at(b, l->str_heap_len);
	ptr = u64_at(b, l->str_heap_ptr);
	if (len > RB_MAX_STR || !ptr || !(s = malloc(len + 1)))
		return NULL;
	if (rd(r->mem, &r->reads, ptr, s, len)) {
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}

/* An iseq's path: pathobj is the path String, or an Array [path,
 * realpath]. */
static char *read_path(struct rb_resolver *r, uint64_t v)
{
	const struct rb_layout *l = r->rt->layout;
	uint8_t b[40];
	uint64_t flags, first;

	if (!heap_value(v) || rd(r->mem, &r->reads, v, b, sizeof(b)))
		return NULL;
	flags = u64_at(b, 0);
	if ((flags & T_MASK) == T_STRING)
		return read_string(r, v);
	if ((flags & T_MASK) != T_ARRAY)
		return NULL;
	if (flags & l->ary_embed)
		first = u64_at(b, l->ary_embed_ary);
	else if (rd(r->mem, &r->reads, u64_at(b, l->ary_heap_ptr), &first, 8))
		return NULL;
	return read_string(r, first);
}

static void *read_bytes(struct rb_resolver *r, uint64_t addr, size_t len)
{
	void *p;

	if (!addr || !len || !(p = malloc(len)))
		return NULL;
	if (rd(r->mem, &r->reads, addr, p, len)) {
		free(p);
		return NULL;
	}
	return p;
}

/* The bytes of a succinct index table covering positions [0, iseq_size):
 * 6 immediate words, then an 80-byte block per 512 positions after 54. */
static size_t succ_bytes(unsigned iseq_size)
{
	size_t blocks = iseq_size > 54 ? (iseq_size - 54 + 511) / 512 : 0;

	return 48 + blocks * 80;
}

static void read_iseq(struct rb_resolver *r, struct rb_iseq_names *in)
{
	const struct rb_layout *l = r->rt->layout;
	uint8_t body[160];
	uint64_t bp, fl, size;

	if (rd(r->mem, &r->reads, in->iseq + l->iseq_body, &bp, 8) ||
	    !heap_value(bp) || rd(r->mem, &r->reads, bp, body, sizeof(body)))
		return;
	in->body = bp;
	in->label = read_string(r, u64_at(body, l->body_label));
	in->path = read_path(r, u64_at(body, l->body_pathobj));
	if (!in->label)
		return;
	in->ok = true;
	fl = u64_at(body, l->body_first_lineno);
	in->first_line = (fl & 1) && (fl >> 1) < (1u << 30) ? (unsigned)(fl >> 1) : 0;
	memcpy(&in->iseq_size, body + l->body_iseq_size, 4);
	in->encoded = u64_at(body, l->body_iseq_encoded);
	memcpy(&size, body + l->body_insns_size, 8);
	size &= 0xffffffff;
	if (in->iseq_size > RB_MAX_ISEQ || !size || size > RB_MAX_INSNS)
		return;
	in->entries = read_bytes(r, u64_at(body, l->body_insns_body),
				 size * l->insn_entry_size);
	if (!in->entries)
		return;
	in->nentries = size;
	in->positions = read_bytes(r, u64_at(body, l->body_insns_positions), size * 4);
	if (!in->positions && size > 1) {
		in->succ_len = succ_bytes(in->iseq_size);
		in->succ = read_bytes(r, u64_at(body, l->body_insns_succ), in->succ_len);
		if (!in->succ)
			in->succ_len = 0;
	}
}

/* Element idx of Array ary, or false (not an Array, past its end). */
static bool ary_elt(struct rb_resolver *r, uint64_t ary, uint64_t idx, uint64_t *out)
{
	const struct rb_layout *l = r->rt->layout;
	uint8_t b[40];
	uint64_t flags, len;

	if (!heap_value(ary) || rd(r->mem, &r->reads, ary, b, sizeof(b)))
		return false;
	flags = u64_at(b, 0);
	if ((flags & T_MASK) != T_ARRAY)
		return false;
	if (flags & l->ary_embed) {
		len = (flags >> l->ary_embed_len_shift) & l->ary_embed_len_mask;
		if (idx >= len || l->ary_embed_ary + (idx + 1) * 8 > sizeof(b))
			return false;
		*out = u64_at(b, l->ary_embed_ary + (unsigned)idx * 8);
		return true;
	}
	len = u64_at(b, l->ary_heap_len);
	return idx < len && idx < (1u << 24) &&
	       !rd(r->mem, &r->reads, u64_at(b, l->ary_heap_ptr) + idx * 8, out, 8);
}

/* rb_id2str: an ID's name from ruby_global_symbols (its ids Array of
 * Arrays of [String, Symbol] pairs, by the ID's serial). NULL: unknown. */
static char *id_name(struct rb_resolver *r, uint64_t id)
{
	const struct rb_layout *l = r->rt->layout;
	uint64_t serial, ids, unit, str;
	uint32_t last;

	if (!r->rt->symbols || !id ||
	    rd(r->mem, &r->reads, r->rt->symbols, &last, 4) ||
	    rd(r->mem, &r->reads, r->rt->symbols + 16, &ids, 8))
		return NULL;
	serial = id > l->id_last_op ? id >> l->id_scope_shift : id;
	if (!serial || serial > last ||
	    !ary_elt(r, ids, serial / l->id_entry_unit, &unit) ||
	    !ary_elt(r, unit, (serial % l->id_entry_unit) * 2, &str) || str == RB_QNIL)
		return NULL;
	return read_string(r, str);
}

/* A C method's name: its method entry (an imemo_ment; or an imemo_svar
 * holding one), the entry's definition, the definition's original_id,
 * as Ruby's backtrace names it. */
static void read_cfunc(struct rb_resolver *r, struct rb_iseq_names *in)
{
	const struct rb_layout *l = r->rt->layout;
	uint64_t me = in->iseq, b[2], def, id;

	for (int hop = 0; hop < 2; hop++) {
		if (!heap_value(me) || rd(r->mem, &r->reads, me, b, sizeof(b)) ||
		    (b[0] & T_MASK) != T_IMEMO)
			return;
		if (((b[0] >> 12) & 0xf) == IMEMO_MENT)
			break;
		if (((b[0] >> 12) & 0xf) != IMEMO_SVAR || hop)
			return;
		me = b[1];		/* vm_svar.cref_or_me */
	}
	if (rd(r->mem, &r->reads, me + l->me_def, &def, 8) || !heap_value(def) ||
	    !(in->body = def) ||
	    rd(r->mem, &r->reads, def + l->def_original_id, &id, 8))
		return;
	in->label = id_name(r, id);
	in->ok = in->label != NULL;
}

static const struct rb_iseq_names *iseq_names(struct rb_resolver *r, uint64_t iseq,
					      bool cfunc)
{
	struct rb_iseq_names *in;

	for (size_t i = 0; i < r->niseqs; i++) {
		uint64_t body;

		if (r->iseqs[i].iseq != iseq || r->iseqs[i].cfunc != cfunc)
			continue;
		/* A running process may have freed the object and made
		   another at its address: its body (definition) tells. */
		if (!r->recheck ||
		    (!rd(r->mem, &r->reads, iseq + (cfunc ? r->rt->layout->me_def
							: r->rt->layout->iseq_body),
			 &body, 8) && body == r->iseqs[i].body))
			return &r->iseqs[i];
		r->iseqs[i].iseq = 0;	/* stale: names handed out stay */
		break;
	}
	if (r->niseqs == r->cap_iseqs) {
		size_t c = r->cap_iseqs ? 2 * r->cap_iseqs : 32;
		void *p = realloc(r->iseqs, c * sizeof(*r->iseqs));

		if (!p)
			return NULL;
		r->iseqs = p;
		r->cap_iseqs = c;
	}
	in = &r->iseqs[r->niseqs++];
	memset(in, 0, sizeof(*in));
	in->iseq = iseq;
	in->cfunc = cfunc;
	if (cfunc)
		read_cfunc(r, in);
	else
		read_iseq(r, in);
	return in;
}

void rb_resolver__init(struct rb_resolver *r, const struct rb_runtime *rt,
		       struct stacksnap_mem *mem)
{
	memset(r, 0, sizeof(*r));
	r->rt = rt;
	r->mem = mem;
}

void rb_resolver__free(struct rb_resolver *r)
{
	for (size_t i = 0; i < r->niseqs; i++) {
		free(r->iseqs[i].label);
		free(r->iseqs[i].path);
		free(r->iseqs[i].entries);
		free(r->iseqs[i].positions);
		free(r->iseqs[i].succ);
	}
	free(r->iseqs);
	memset(r, 0, sizeof(*r));
}

static unsigned entry_line(const uint8_t *entries, size_t i, unsigned entry_size)
{
	int32_t line;

	memcpy(&line, entries + i * entry_size, 4);
	return line > 0 ? (unsigned)line : 0;
}

/* succ_index_lookup of Ruby's iseq.c: how many positions <= x start an
 * insns_info entry. -1 when the table is too short. */
static long succ_rank(const uint8_t *succ, size_t len, unsigned x)
{
	uint64_t w, small, bits;
	uint32_t rank;
	size_t off;
	unsigned bi, si, sr;

	if (x < 54) {
		if (48 > len)
			return -1;
		memcpy(&w, succ + (x / 9) * 8, 8);
		return (long)((w >> ((x % 9) * 7)) & 0x7f);
	}
	off = 48 + (size_t)((x - 54) / 512) * 80;
	if (off + 80 > len)
		return -1;
	bi = (x - 54) % 512;
	si = bi / 64;
	memcpy(&rank, succ + off, 4);
	memcpy(&small, succ + off + 8, 8);
	memcpy(&bits, succ + off + 16 + si * 8, 8);
	sr = si ? (unsigned)((small >> ((si - 1) * 9)) & 0x1ff) : 0;
	return (long)rank + sr + __builtin_popcountll(bits << (63 - bi % 64));
}

unsigned rb_insn_line(const uint8_t *entries, size_t size, unsigned entry_size,
		      const uint32_t *positions, const uint8_t *succ,
		      size_t succ_len, unsigned pos)
{
	if (!entries || !size || entry_size < 4)
		return 0;
	if (size == 1)
		return entry_line(entries, 0, entry_size);
	if (positions) {
		/* The last entry whose position is <= pos. */
		size_t lo = 0, hi = size;

		while (hi - lo > 1) {
			size_t m = lo + (hi - lo) / 2;

			if (positions[m] <= pos)
				lo = m;
			else
				hi = m;
		}
		return entry_line(entries, lo, entry_size);
	}
	if (succ) {
		long k = succ_rank(succ, succ_len, pos);

		if (k >= 1 && (size_t)k <= size)
			return entry_line(entries, (size_t)k - 1, entry_size);
	}
	return 0;
}

int rb_resolve__thread(struct rb_resolver *r, const struct rb_capture *cap,
		       const struct rb_raw_thread *t, struct rb_frame **out,
		       size_t *n)
{
	struct rb_frame *fr;

	*out = NULL;
	*n = 0;
	if (!t->n)
		return 0;
	if (!(fr = calloc(t->n, sizeof(*fr))))
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		const struct rb_raw_frame *rf = &cap->frames[t->first + i];
		const struct rb_iseq_names *in;

		bool cfunc = rf->flags & RB_FRAME_CFUNC;

		fr[i].finish = rf->flags & RB_FRAME_FINISH;
		fr[i].ruby = rf->flags & RB_FRAME_RUBY;
		fr[i].cfunc = cfunc;
		fr[i].function = cfunc ? "<unknown cfunc>" : "<unknown iseq>";
		fr[i].file = "?";
		if (!fr[i].ruby)
			continue;
		if (!(in = iseq_names(r, rf->iseq, cfunc))) {
			free(fr);
			return -ENOMEM;
		}
		if (!in->ok)
			continue;
		fr[i].function = in->label;
		if (cfunc)
			continue;
		fr[i].file = in->path ? in->path : "?";
		/* Ruby's calc_pos: the pc points after the instruction
		   running. */
		if (rf->pc >= in->encoded && (rf->pc - in->encoded) % 8 == 0 &&
		    (rf->pc - in->encoded) / 8 <= in->iseq_size) {
			unsigned pos = (unsigned)((rf->pc - in->encoded) / 8);

			fr[i].line = rb_insn_line(in->entries, in->nentries,
						  r->rt->layout->insn_entry_size,
						  in->positions, in->succ,
						  in->succ_len, pos ? pos - 1 : 0);
		}
	}
	/* A C method is at its caller's place, as Ruby's backtrace puts it:
	   the path and line of the next Ruby frame out. */
	for (size_t i = t->n, outer = SIZE_MAX; i-- > 0;) {
		if (fr[i].ruby && !fr[i].cfunc)
			outer = i;
		else if (fr[i].cfunc && outer != SIZE_MAX) {
			fr[i].file = fr[outer].file;
			fr[i].line = fr[outer].line;
		}
	}
	*out = fr;
	*n = t->n;
	return 0;
}

/* ------------------------------------------------------------------ */

static void put(struct stacksnap_runtime_frame *out, size_t max, size_t *n,
		const struct rb_frame *f, size_t native_index)
{
	if (!f->ruby)
		return;
	if (*n < max) {
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].sz = sizeof(out[*n]);
		out[*n].runtime = STACKSNAP_RUNTIME_RUBY;
		out[*n].native_index = (uint32_t)native_index;
		out[*n].function = f->function;
		out[*n].file = f->file;
		out[*n].line = f->line;
	}
	(*n)++;
}

size_t rb_merge(const struct rb_frame *rf, size_t nrf,
		const struct stacksnap_frame *native, size_t nnative,
		uint64_t exec_start, uint64_t exec_end,
		struct stacksnap_runtime_frame *out, size_t max)
{
	size_t p = 0, n = 0;

	for (size_t k = 0; k < nnative && p < nrf; k++) {
		uint64_t pc = native[k].pc;

		if (!exec_start || pc <= exec_start || pc > exec_end)
			continue;
		do
			put(out, max, &n, &rf[p], k);
		while (!rf[p++].finish && p < nrf);
	}
	for (; p < nrf; p++)
		put(out, max, &n, &rf[p], nnative);
	return n;
}
