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

#include "bpf/kunwind.h"

/* The template of the per-module inner maps: user space creates each
 * module's maps with its own max_entries (BPF_F_INNER_MAP allows that),
 * so table memory follows the modules actually traced. */
struct ku_rows_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct ku_row)); /* by size: BTF would
						      only hold a forward
						      declaration here */
};

struct ku_blocks_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
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
};

/* Index of the mapping holding addr, or -1. */
static __always_inline int ku_find_map(const struct ku_proc *p, __u64 addr)
{
	__u32 lo = 0, n = p->n;

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

/* The row covering link-time address vaddr of module id, or NULL. */
static __always_inline const struct ku_row *
ku_lookup_row(__u32 id, const struct ku_module *mod, __u64 vaddr)
{
	void *rows, *blocks;
	__u32 rel, b, lo, hi, *bp, n;
	const struct ku_row *r;

	if (vaddr < mod->lo || vaddr >= mod->hi || mod->nrows == 0)
		return NULL;
	rows = bpf_map_lookup_elem(&ku_rows, &id);
	blocks = bpf_map_lookup_elem(&ku_blocks, &id);
	if (!rows || !blocks)
		return NULL;
	rel = (__u32)(vaddr - mod->lo);
	b = rel >> (mod->block_shift & 31);
	bp = bpf_map_lookup_elem(blocks, &b);
	if (!bp)
		return NULL;
	lo = *bp;
	b++;
	bp = bpf_map_lookup_elem(blocks, &b);
	if (!bp)
		return NULL;
	hi = *bp;
	if (hi < lo)
		return NULL;
	/* Last row with start <= rel within [lo, hi], as the user-space
	 * lookup does. */
	n = hi - lo + 1;
	for (int i = 0; i < KU_ROW_SEARCH_STEPS && n > 1; i++) {
		__u32 half = n / 2, mid = lo + half;

		r = bpf_map_lookup_elem(rows, &mid);
		if (!r)
			return NULL;
		if (r->start <= rel)
			lo = mid;
		n -= half;
	}
	if (n > 1)
		return NULL; /* a block wider than the search allows */
	return bpf_map_lookup_elem(rows, &lo);
}

static __always_inline int ku_read(__u64 *val, __u64 addr)
{
	return bpf_probe_read_user(val, sizeof(*val), (const void *)addr);
}

/* A callee-saved register's value in the caller by its row rule (the
 * user-space unwinder's saved_value()): unchanged, or read from its save
 * slot, or unknown. A slot below sp is in an epilogue after its pop: the
 * register already holds the caller's value. */
static __always_inline int ku_saved(__u8 kind, __s16 off, __u64 cfa, __u64 sp,
				    __u64 cur, __u32 cur_valid, __u32 bit,
				    __u64 *val, __u32 *valid)
{
	if (kind == KU_REG_SAME || (kind == KU_REG_CFA_OFF && cfa + off < sp)) {
		*val = cur;
		*valid |= cur_valid & bit;
		return 0;
	}
	if (kind == KU_REG_CFA_OFF) {
		*valid |= bit;
		return ku_read(val, cfa + off);
	}
	*val = 0;
	return 0;
}

/* One frame: emit st->pc, then step to the caller. Returns 1 to stop the
 * loop (st->end says why), 0 to go on. */
static long ku_step(__u32 i, struct ku_walk_state *st)
{
	struct ku_proc *p = st->proc;
	const struct ku_module *mod = 0;
	const struct ku_map *m;
	const struct ku_row *row = 0;
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
			if (k >= mod->nsigreturn || mod->sigreturn[k] != pc - m->bias)
				continue;
			/* rsp points at the ucontext the kernel pushed:
			 * gregs from offset 40; REG_RBP (10), REG_RBX,
			 * REG_RDX, REG_RAX, REG_RCX, REG_RSP (15), REG_RIP. */
			__u64 g[7];

			if (bpf_probe_read_user(g, sizeof(g),
						(const void *)(sp + 40 + 10 * 8))) {
				st->end = KU_END_BAD_MEMORY;
				return 1;
			}
			if (++st->nsignals > KU_MAX_SIGNALS ||
			    (g[5] == sp && g[6] == pc)) {
				st->end = KU_END_LOOP;
				return 1;
			}
			st->rbp = g[0];
			st->rbx = g[1];
			st->sp = g[5];
			st->pc = g[6];
			st->valid = KU_VALID_RBP | KU_VALID_RBX;
			st->exact = 1;
			idx = ku_find_map(p, st->pc);
			if (idx < 0) {
				st->end = KU_END_BAD_PC;
				return 1;
			}
			st->map_idx = idx;
			st->map_ok = 1;
			return 0;
		}
		row = ku_lookup_row(id, mod, lookup - m->bias);
	}
	if (row && row->cfa_kind != KU_CFA_NONE) {
		switch (row->cfa_kind) {
		case KU_CFA_RSP:
			cfa = sp + row->cfa_off;
			break;
		case KU_CFA_RBP:
			if (!(st->valid & KU_VALID_RBP)) {
				st->end = KU_END_BAD_CFI;
				return 1;
			}
			cfa = st->rbp + row->cfa_off;
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
		if (ku_read(&ra, cfa - 8) ||
		    ku_saved(row->reg_kinds & 15, row->rbp_off, cfa, sp, st->rbp,
			     st->valid, KU_VALID_RBP, &rbp, &valid) ||
		    ku_saved(row->reg_kinds >> 4, row->rbx_off, cfa, sp, st->rbx,
			     st->valid, KU_VALID_RBX, &rbx, &valid)) {
			st->end = KU_END_BAD_MEMORY;
			return 1;
		}
	} else {
		/* No CFI here: the frame-pointer chain, [rbp] = caller's
		 * rbp, [rbp + 8] = return address. */
		__u64 pair[2];

		if (!(st->valid & KU_VALID_RBP) || (st->rbp & 7) || st->rbp < sp) {
			st->end = KU_END_NO_CFI;
			return 1;
		}
		if (bpf_probe_read_user(pair, sizeof(pair), (const void *)st->rbp)) {
			st->end = KU_END_BAD_MEMORY;
			return 1;
		}
		cfa = st->rbp + 16;
		rbp = pair[0];
		ra = pair[1];
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
	idx = ku_find_map(p, ra - 1);
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
	if (!st.proc) {
		st.end = KU_END_NO_PROC;
	} else {
		bpf_loop(KU_MAX_FRAMES + 1, ku_step, &st, 0);
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
