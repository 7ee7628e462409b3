/* kunwind_walk.bpf.h - the in-kernel user-stack walk over compiled unwind
 * tables held in BPF maps: the steps of the user-space unwinder's fast
 * path (CFA = rsp|rbp + offset, return address at CFA - 8, rbp and rbx
 * rules), PLT rows, signal trampolines, the bottom of the stack and frame
 * pointers where no CFI covers the pc, one frame per bpf_loop iteration
 * so the verifier sees one step, not the whole walk. A BPF program that
 * includes it (after vmlinux.h and the libbpf headers) gets the maps,
 * which src/ktable fills and shares between programs (bpf_map__reuse_fd),
 * and calls ku_walk(). */
#ifndef SS_BPF_KUNWIND_WALK_BPF_H
#define SS_BPF_KUNWIND_WALK_BPF_H

#include "ktable/kunwind_layout.h"

/* Measurement variants (bench): 4 walks without the row cache, 5 without
 * the stack window. A program may define it to a rodata knob. */
#ifndef KU_WALK_EXP
#define KU_WALK_EXP 0
#endif
#define KU_ROWS(st) (KU_WALK_EXP == 4 ? 0 : (st)->cache) /* the row cache */
#define KU_WIN(st) (KU_WALK_EXP == 5 ? 0 : (st)->cache)	 /* the window */

/* The template of the per-module inner maps: user space creates each
 * module's maps with its own max_entries (BPF_F_INNER_MAP allows that),
 * so table memory follows the modules actually traced. */
struct ku_rows_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct ku_chunk)); /* by size: BTF would
							only hold a forward
							declaration here */
};

struct ku_blocks_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct ku_block));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, KU_MAX_MODULES);
	__type(key, __u32);
	__array(values, struct ku_rows_inner);
} ku_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, KU_MAX_MODULES);
	__type(key, __u32);
	__array(values, struct ku_blocks_inner);
} ku_blocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KU_MAX_MODULES);
	__type(key, __u32);
	__type(value, struct ku_module);
} ku_modules SEC(".maps");

/* build-id -> module id, so that every program and process shares one
 * table per module (and bpftool shows which are loaded). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KU_MAX_MODULES);
	__type(key, __u8[KU_BUILD_ID_MAX]);
	__type(value, __u32);
} ku_module_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KU_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ku_proc);
} ku_procs SEC(".maps");

/* Each program's own row cache (not shared: it is only a cache). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ku_cache);
} ku_row_cache SEC(".maps");

/* The user stack bytes the window holds: [lo, lo + len). */
struct ku_win {
	__u64 lo, len;
};

/* The walk's state, on the calling program's stack (bpf_loop hands the
 * callback a pointer to it). Invariant: pc/sp/rbp/rbx are the registers of
 * the frame about to be emitted; map_idx is the mapping holding its lookup
 * address when map_ok. */
struct ku_walk_state {
	__u64 pc, sp, rbp, rbx;
	__u32 valid;		/* KU_VALID_* */
	__u32 n;		/* frames emitted */
	__u32 max;		/* frame limit (<= KU_MAX_FRAMES) */
	__u32 nsignals;
	__u32 map_idx;
	__u8 exact;		/* pc is exact (frame 0, interrupted frame) */
	__u8 map_ok;
	__u8 end;		/* enum ku_end, KU_END_NONE while walking */
	__u8 pad;
	struct ku_proc *proc;	/* the process's mapping table */
	__u64 *pcs;		/* KU_MAX_FRAMES slots (per-CPU scratch) */
	struct ku_cache *cache;	/* this CPU's row cache, or NULL */
	struct ku_win win;	/* what cache->win holds */
};

/* Index of the mapping holding addr, or -1. A global function: called
 * only when a frame leaves its caller's mapping, and out of the step's
 * paths the verifier walks. */
__noinline int ku_find_map(const struct ku_proc *p, __u64 addr)
{
	__u32 lo = 0, n;

	if (!p)
		return -1;
	n = p->n;
	if (n == 0 || n > KU_MAX_MAPS)
		return -1;
	/* Last mapping with start <= addr. */
	for (int i = 0; i < KU_MAP_SEARCH_STEPS && n > 1; i++) {
		__u32 half = n / 2;
		__u32 mid = (lo + half) & (KU_MAX_MAPS - 1);

		if (p->maps[mid].start <= addr)
			lo = mid;
		n -= half;
	}
	lo &= KU_MAX_MAPS - 1;
	if (addr < p->maps[lo].start || addr >= p->maps[lo].end)
		return -1;
	return lo;
}

/* The last row with start <= rel in rows [lo, hi] of chunk c (indexes
 * relative to the chunk, hi < KU_CHUNK): a binary search in one map
 * value, plain loads. */
static __always_inline __u32 ku_chunk_search(const struct ku_chunk *ch, __u32 lo,
					     __u32 hi, __u32 rel)
{
	__u32 n = hi - lo + 1;

	for (int i = 0; i < KU_CHUNK_SHIFT + 1 && n > 1; i++) {
		__u32 half = n / 2, mid = (lo + half) & (KU_CHUNK - 1);

		if (ch->start[mid] <= rel)
			lo = mid;
		n -= half;
	}
	return lo & (KU_CHUNK - 1);
}

/* Copies into out the row covering link-time address vaddr of module
 * id; 0, or -1 when there is none. Two inner-map lookups: the block index
 * entry, then the chunk holding the block's last candidate row; only a
 * block whose rows span chunks and whose row is in an earlier one costs
 * a binary search over chunks (one lookup a step). A global function:
 * the verifier checks it once, not in every caller's state. */
__noinline int ku_lookup_row(__u32 id, const struct ku_module *mod, __u64 vaddr,
			     struct ku_row *out)
{
	void *chunks, *blocks;
	const struct ku_block *bp;
	const struct ku_chunk *ch;
	__u32 rel, b, lo, hi, c, clo, base;

	if (!mod || !out || vaddr < mod->lo || vaddr >= mod->hi || mod->nrows == 0)
		return -1;
	chunks = bpf_map_lookup_elem(&ku_rows, &id);
	blocks = bpf_map_lookup_elem(&ku_blocks, &id);
	if (!chunks || !blocks)
		return -1;
	rel = (__u32)(vaddr - mod->lo);
	b = rel >> (mod->block_shift & 31);
	bp = bpf_map_lookup_elem(blocks, &b);
	if (!bp)
		return -1;
	lo = bp->lo;
	hi = bp->hi;
	if (hi < lo || hi >= mod->nrows)
		return -1;
	c = hi >> KU_CHUNK_SHIFT;
	ch = bpf_map_lookup_elem(chunks, &c);
	if (!ch)
		return -1;
	clo = lo >> KU_CHUNK_SHIFT;
	if (clo < c && ch->start[0] > rel) {
		/* Last chunk in [clo, c - 1] whose first row starts at or
		 * below rel (chunk clo does: row lo covers the block's
		 * start). */
		__u32 n = c - clo;

		for (int i = 0; i < 26 && n > 1; i++) {
			__u32 half = n / 2, mid = clo + half;

			ch = bpf_map_lookup_elem(chunks, &mid);
			if (!ch)
				return -1;
			if (ch->start[0] <= rel)
				clo = mid;
			n -= half;
		}
		c = clo;
		ch = bpf_map_lookup_elem(chunks, &c);
		if (!ch)
			return -1;
		hi = (c << KU_CHUNK_SHIFT) + KU_CHUNK - 1;
	}
	base = c << KU_CHUNK_SHIFT;
	lo = lo > base ? lo - base : 0;
	hi -= base;
	if (hi >= KU_CHUNK || lo > hi)
		return -1;
	*out = ch->row[ku_chunk_search(ch, lo, hi, rel)];
	return 0;
}

/* ku_lookup_row through this CPU's cache. Inlined into the step: a
 * BPF-to-BPF call's return costs more than the lookup itself where
 * returns go through a mitigation thunk (SRSO's safe RET). */
static __always_inline int ku_cached_row(struct ku_cache *cache, __u32 id,
			     const struct ku_module *mod, __u64 vaddr, struct ku_row *out)
{
	__u64 tag = vaddr ^ ((__u64)(id + 1) << 48);
	struct ku_cache_slot *sl;

	if (!out)
		return -1;
	if (!cache)
		return ku_lookup_row(id, mod, vaddr, out);
	sl = &cache->slot[(vaddr ^ (vaddr >> 11) ^ (id * 0x9e37u)) & (KU_CACHE_SLOTS - 1)];
	if (sl->tag == tag) {
		*out = sl->row;
		/* Checked again: a program nested on this CPU (an NMI) may
		 * have replaced the slot meanwhile. */
		if (sl->tag == tag) {
			cache->hits++;
			return 0;
		}
	}
	cache->misses++;
	if (ku_lookup_row(id, mod, vaddr, out))
		return -1;
	sl->tag = 0;
	sl->row = *out;
	sl->tag = tag;
	return 0;
}

/* Whether a register rule reads a save slot: CFA + off at or above sp (a
 * slot below sp is in an epilogue after its pop: the register already
 * holds the caller's value). */
static __always_inline bool ku_slot_read(__u8 kind, __s16 off, __u64 cfa, __u64 sp)
{
	return kind == KU_REG_CFA_OFF && cfa + off >= sp;
}

/* The user stack word at addr: from the window (c->win holding
 * [w->lo, w->lo + w->len)) when it holds it, else through a new window
 * from addr to at most KU_STACK_WIN bytes, never past addr's page (a page
 * readable at addr is readable to its end, the next may not be).
 * Unaligned words and walks without a window are read alone. Non-zero
 * when it cannot be read. A global function: a window miss is rare. */
__noinline int ku_word(struct ku_cache *c, struct ku_win *w, __u64 addr, __u64 *val)
{
	__u64 off, len;

	if (!val)
		return -1;
	if (!c || !w || (addr & 7))
		return bpf_probe_read_user(val, sizeof(*val), (const void *)addr);
	off = addr - w->lo;
	if (addr < w->lo || off + 8 > w->len) {
		len = 4096 - (addr & 4095);
		if (len > KU_STACK_WIN)
			len = KU_STACK_WIN;
		c->win_reads++;
		if (bpf_probe_read_user(c->win, len, (const void *)addr)) {
			w->len = 0;
			return bpf_probe_read_user(val, sizeof(*val), (const void *)addr);
		}
		w->lo = addr;
		w->len = len;
		off = 0;
	}
	*val = *(__u64 *)(c->win + (off & (KU_STACK_WIN - 8)));
	return 0;
}

/* ku_word with its common case inlined: a word the window holds is a
 * load, no call (a call's return is dear behind SRSO's safe RET). */
static __always_inline int ku_read(struct ku_walk_state *st, __u64 addr, __u64 *val)
{
	struct ku_cache *c = KU_WIN(st);
	__u64 off = addr - st->win.lo;

	if (c && !(addr & 7) && addr >= st->win.lo && off + 8 <= st->win.len) {
		*val = *(__u64 *)(c->win + (off & (KU_STACK_WIN - 8)));
		return 0;
	}
	return ku_word(c, &st->win, addr, val);
}

/* A callee-saved register's value in the caller by its row rule (the
 * user-space unwinder's saved_value()): unchanged, or read from its save
 * slot, or unknown. Non-zero when the slot cannot be read. */
static __always_inline int ku_saved(struct ku_walk_state *st, __u8 kind, __s16 off,
				    __u64 cfa, __u64 sp, __u64 cur, __u32 cur_valid,
				    __u32 bit, __u64 *val, __u32 *valid)
{
	if (ku_slot_read(kind, off, cfa, sp)) {
		*valid |= bit;
		return ku_read(st, cfa + off, val);
	}
	if (kind == KU_REG_SAME || kind == KU_REG_CFA_OFF) {
		*val = cur;
		*valid |= cur_valid & bit;
	} else {
		*val = 0;
	}
	return 0;
}

/* The mapping holding addr: hint (the current frame's) when it does,
 * else a binary search; -1 when none. */
static __always_inline int ku_find_map_hint(const struct ku_proc *p, __u64 addr,
					    int hint)
{
	const struct ku_map *m = &p->maps[hint & (KU_MAX_MAPS - 1)];

	if (hint >= 0 && addr >= m->start && addr < m->end)
		return hint;
	return ku_find_map(p, addr);
}

/* The registers of the frame a signal interrupted (ku_sigreturn). */
struct ku_sig {
	__u64 pc, sp, rbp, rbx;
	__s32 idx;		/* its mapping */
	__u32 end;		/* enum ku_end; KU_END_NONE: go on */
};

/* A frame at a signal trampoline: the interrupted frame's registers from
 * the ucontext the kernel pushed (rsp points at it: gregs from offset 40;
 * REG_RBP (10), REG_RBX, REG_RDX, REG_RAX, REG_RCX, REG_RSP (15),
 * REG_RIP) into out. A global function (rare; out of the step's paths):
 * its memory arguments are not the walk state, whose pointers the
 * verifier would forget after the call. */
__noinline int ku_sigreturn(const struct ku_proc *p, __u64 pc, __u64 sp,
			    struct ku_sig *out)
{
	__u64 g[7];

	if (!out)
		return 0;
	out->end = KU_END_NONE;
	if (bpf_probe_read_user(g, sizeof(g), (const void *)(sp + 40 + 10 * 8))) {
		out->end = KU_END_BAD_MEMORY;
		return 0;
	}
	if (g[5] == sp && g[6] == pc) {
		out->end = KU_END_LOOP;
		return 0;
	}
	out->rbp = g[0];
	out->rbx = g[1];
	out->sp = g[5];
	out->pc = g[6];
	out->idx = ku_find_map(p, out->pc);
	if (out->idx < 0)
		out->end = KU_END_BAD_PC;
	return 0;
}

/* One frame: emit st->pc, then step to the caller. Returns 1 to stop the
 * loop (st->end says why), 0 to go on. */
static __always_inline long ku_step1(struct ku_walk_state *st)
{
	struct ku_proc *p = st->proc;
	const struct ku_module *mod = 0;
	const struct ku_map *m;
	struct ku_row row = {};
	__u64 pc = st->pc, sp = st->sp, lookup, cfa, ra, rbp, rbx;
	__u32 valid = 0, id;
	int idx;

	if (!p || !st->pcs)
		return 1;
	if (st->n >= st->max || st->n >= KU_MAX_FRAMES) {
		st->end = KU_END_FRAME_LIMIT;
		return 1;
	}
	st->pcs[st->n & (KU_MAX_FRAMES - 1)] = pc | (st->exact ? KU_PC_EXACT : 0);
	st->n++;
	lookup = st->exact ? pc : pc - 1;
	idx = st->map_ok ? (int)st->map_idx : ku_find_map(p, lookup);
	if (idx < 0) {
		st->end = KU_END_NO_MAPPING;
		return 1;
	}
	m = &p->maps[idx & (KU_MAX_MAPS - 1)];
	id = m->module;
	if (id != KU_NO_MODULE) {
		mod = bpf_map_lookup_elem(&ku_modules, &id);
		if (!mod || !mod->loaded) {
			st->end = KU_END_NOT_LOADED;
			return 1;
		}
		for (int k = 0; k < KU_MAX_SIGRETURN; k++) {
			if (k >= mod->nsigreturn)
				break;
			if (mod->sigreturn[k] != pc - m->bias)
				continue;
			struct ku_sig sig;

			if (++st->nsignals > KU_MAX_SIGNALS) {
				st->end = KU_END_LOOP;
				return 1;
			}
			ku_sigreturn(p, pc, sp, &sig);
			if (sig.end != KU_END_NONE) {
				st->end = sig.end;
				return 1;
			}
			st->rbp = sig.rbp;
			st->rbx = sig.rbx;
			st->sp = sig.sp;
			st->pc = sig.pc;
			st->valid = KU_VALID_RBP | KU_VALID_RBX;
			st->exact = 1;
			st->map_idx = (__u32)sig.idx;
			st->map_ok = 1;
			return 0;
		}
		if (ku_cached_row(KU_ROWS(st), id, mod, lookup - m->bias, &row))
			row.cfa_kind = KU_CFA_NONE;
	}
	if (row.cfa_kind != KU_CFA_NONE) {
		__u8 rk = row.reg_kinds & 15, xk = row.reg_kinds >> 4;
		__u64 low;

		switch (row.cfa_kind) {
		case KU_CFA_RSP:
			cfa = sp + row.cfa_off;
			break;
		case KU_CFA_RBP:
			if (!(st->valid & KU_VALID_RBP)) {
				st->end = KU_END_BAD_CFI;
				return 1;
			}
			cfa = st->rbp + row.cfa_off;
			break;
		case KU_CFA_PLT:
			cfa = sp + 8 + ((pc & 15) >= 11 ? 8 : 0);
			break;
		case KU_CFA_UNDEFINED_RA:
			st->end = KU_END_COMPLETE;
			return 1;
		default: /* DWARF: user space evaluates it (both mode) */
			st->end = KU_END_DWARF;
			return 1;
		}
		/* The lowest word first: a new window then covers the
		 * others. */
		low = cfa - 8;
		if (ku_slot_read(rk, row.rbp_off, cfa, sp) && cfa + row.rbp_off < low)
			low = cfa + row.rbp_off;
		if (ku_slot_read(xk, row.rbx_off, cfa, sp) && cfa + row.rbx_off < low)
			low = cfa + row.rbx_off;
		if ((low != cfa - 8 && ku_read(st, low, &ra)) ||
		    ku_read(st, cfa - 8, &ra) ||
		    ku_saved(st, rk, row.rbp_off, cfa, sp, st->rbp, st->valid,
			     KU_VALID_RBP, &rbp, &valid) ||
		    ku_saved(st, xk, row.rbx_off, cfa, sp, st->rbx, st->valid,
			     KU_VALID_RBX, &rbx, &valid)) {
			st->end = KU_END_BAD_MEMORY;
			return 1;
		}
	} else {
		/* No CFI here: the frame-pointer chain, [rbp] = caller's
		 * rbp, [rbp + 8] = return address. */
		if (!(st->valid & KU_VALID_RBP) || (st->rbp & 7) || st->rbp < sp) {
			st->end = KU_END_NO_CFI;
			return 1;
		}
		if (ku_read(st, st->rbp, &rbp) ||
		    ku_read(st, st->rbp + 8, &ra)) {
			st->end = KU_END_BAD_MEMORY;
			return 1;
		}
		cfa = st->rbp + 16;
		rbx = 0;
		valid = KU_VALID_RBP;
	}
	if (ra == 0) {
		st->end = KU_END_COMPLETE; /* the outermost frame's marker */
		return 1;
	}
	if (cfa <= sp) {
		st->end = KU_END_LOOP;
		return 1;
	}
	idx = ku_find_map_hint(p, ra - 1, idx);
	if (idx < 0) {
		st->end = KU_END_BAD_PC;
		return 1;
	}
	st->pc = ra;
	st->sp = cfa;
	st->rbp = rbp;
	st->rbx = rbx;
	st->valid = valid;
	st->exact = 0;
	st->map_idx = idx;
	st->map_ok = 1;
	return 0;
}

/* bpf_loop's callback: one frame. (Two frames an iteration saved ~5% of
 * the walk and doubled the verifier's work.) */
static long ku_step(__u32 i, struct ku_walk_state *st)
{
	return ku_step1(st);
}

/* Walks the user stack of the current task from regs into pcs (per-CPU
 * scratch of KU_MAX_FRAMES slots), filling the event's frame count, end
 * reason and end registers. */
static __always_inline void ku_walk(struct ku_event *ev, __u64 *pcs,
				    __u64 ip, __u64 sp, __u64 bp, __u64 bx,
				    __u32 max_frames)
{
	struct ku_walk_state st = {};
	__u32 tgid = ev->pid;

	st.pc = ip;
	st.sp = sp;
	st.rbp = bp;
	st.rbx = bx;
	st.valid = KU_VALID_RBP | KU_VALID_RBX;
	st.exact = 1;
	st.max = max_frames > KU_MAX_FRAMES || !max_frames ? KU_MAX_FRAMES : max_frames;
	st.pcs = pcs;
	st.proc = bpf_map_lookup_elem(&ku_procs, &tgid);
	st.cache = bpf_map_lookup_elem(&ku_row_cache, &(__u32){ 0 });
	if (st.cache && st.cache->busy)
		st.cache = 0; /* nested in a walk on this CPU: without */
	if (!st.proc) {
		st.end = KU_END_NO_PROC;
	} else {
		if (st.cache)
			st.cache->busy = 1;
		bpf_loop(KU_MAX_FRAMES + 1, ku_step, &st, 0);
		if (st.cache)
			st.cache->busy = 0;
		if (st.end == KU_END_NONE)
			st.end = KU_END_FRAME_LIMIT;
	}
	ev->nframes = st.n;
	ev->end = st.end;
	ev->end_pc = st.pc;
	ev->end_sp = st.sp;
	ev->end_rbp = st.rbp;
	ev->end_rbx = st.rbx;
	ev->end_valid = st.valid;
	ev->flags |= KU_EV_KERNEL;
}

#endif
