/* kunwind_layout.h - the layouts shared by the in-kernel unwinder (BPF side,
 * kunwind_walk.bpf.h) and its user side (src/ktable): module tables as BPF
 * map images, per-process mapping tables, and the event a walk produces.
 * Included by BPF programs (types from vmlinux.h) and by user space
 * (types from linux/types.h). */
#ifndef SS_KTABLE_KUNWIND_LAYOUT_H
#define SS_KTABLE_KUNWIND_LAYOUT_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define KU_MAX_FRAMES 1024	/* frames one walk may emit (bpf_loop bound) */
#define KU_MAX_MAPS 512		/* executable mappings of one process */
#define KU_MAP_SEARCH_STEPS 10	/* log2(KU_MAX_MAPS) + 1 */
#define KU_ROW_SEARCH_STEPS 20	/* binary search steps in a block's rows */
#define KU_MAX_MODULES 4096	/* module ids (outer map sizes) */
#define KU_MAX_PROCS 4096	/* processes with a mapping table */
#define KU_MAX_SIGRETURN 4	/* rt_sigreturn trampolines per module */
#define KU_MAX_SIGNALS 64	/* nested signal frames crossed in one walk */
#define KU_NO_MODULE 0xffffffffu
#define KU_BUILD_ID_MAX 20	/* the key of the build-id map */

/* Bit 63 of an event's pc: the frame was interrupted (by a signal) or is
 * frame 0, so its pc is exact, not a return address. User addresses never
 * use it. */
#define KU_PC_EXACT (1ull << 63)

/* Row kinds: the values of enum ut_cfa_kind / ut_rbp_kind
 * (src/table/unwind_table.h), which ktable checks at compile time. */
#define KU_CFA_NONE 0
#define KU_CFA_RSP 1
#define KU_CFA_RBP 2
#define KU_CFA_PLT 3
#define KU_CFA_UNDEFINED_RA 4
#define KU_CFA_DWARF 5
#define KU_REG_SAME 0
#define KU_REG_CFA_OFF 1
#define KU_REG_UNDEFINED 2

/* One table row's rules as the kernel reads them: the user-space row
 * (8 bytes), without its start. */
struct ku_row {
	__s16 cfa_off;
	__s16 rbp_off;
	__s16 rbx_off;
	__u8 cfa_kind;
	__u8 reg_kinds;		/* rbp kind in the low nibble, rbx in the high */
};

/* Rows in the map: a module's sorted rows cut into chunks of KU_CHUNK
 * consecutive rows, one array element each, so that one map lookup (a
 * helper call: inner maps are not inlined) brings a whole chunk and the
 * binary search inside it is plain memory access. 12 bytes a row. Rows
 * past the module's last have start KU_CHUNK_PAD. */
#define KU_CHUNK 64
#define KU_CHUNK_SHIFT 6
#define KU_CHUNK_PAD 0xffffffffu
struct ku_chunk {
	__u32 start[KU_CHUNK];	/* offsets from the module's lo */
	struct ku_row row[KU_CHUNK];
};

/* The block index, one element per 2^block_shift bytes of text: the rows
 * that may cover an address of the block are [lo, hi] (the table's
 * block[b] and block[b + 1], in one element to need one lookup). */
struct ku_block {
	__u32 lo, hi;
};

/* One module (ku_modules[id]). Invariant: when loaded is set, the inner
 * maps ku_rows[id] (ceil(nrows / KU_CHUNK) chunks) and ku_blocks[id]
 * (nblocks + 1 entries) hold the module's table; row i covers
 * [lo + start[i], lo + start[i+1]). */
struct ku_module {
	__u64 lo, hi;		/* link-time range the rows cover */
	__u32 nrows;
	__u32 nblocks;
	__u32 block_shift;
	__u32 nsigreturn;
	__u64 sigreturn[KU_MAX_SIGRETURN]; /* link-time trampoline starts */
	__u32 loaded;		/* 1 once the inner maps are in place */
	__u32 pad;
};

/* A per-CPU cache of rows found, direct-mapped by (module, address): a
 * profiler sees the same code again and again, and a hit needs no helper
 * call. Entries never go stale: a module id names one table for the
 * registry's life (ids are not reused). tag 0 is an empty slot. */
#define KU_CACHE_SLOTS 1024	/* a per-CPU value is at most 32 KiB */
struct ku_cache_slot {
	__u64 tag;		/* ku_cache_tag(id, vaddr) */
	struct ku_row row;
};
#define KU_STACK_WIN 2048	/* bytes of user stack one read brings (up
				   to the page end): 512 took 4 reads a
				   40-frame walk, 2048 two, at ~130 ns each */
struct ku_cache {
	__u64 hits, misses;	/* row lookups answered here, and not */
	__u64 win_reads;	/* stack reads (windows) */
	__u32 busy;		/* a walk on this CPU uses the cache: a
				   program nested in it (an NMI) must not */
	__u32 pad;
	struct ku_cache_slot slot[KU_CACHE_SLOTS];
	/* The walk's window on the user stack: a frame's return address
	 * and save slots are mostly within the bytes read for the frame
	 * below, so a walk costs a read per window, not per frame. */
	__u8 win[KU_STACK_WIN];
};

/* One executable mapping of a process. module is KU_NO_MODULE for code
 * without a module (anonymous, JIT): frame pointers there. */
struct ku_map {
	__u64 start, end;
	__u64 bias;		/* run-time = link-time + bias */
	__u32 module;
	__u32 pad;
};

/* ku_procs[tgid]. Invariant: maps[0..n) sorted by start, not overlapping. */
struct ku_proc {
	__u32 n;
	__u32 generation;	/* bumped by user space at every rewrite */
	struct ku_map maps[KU_MAX_MAPS];
};

/* Why an in-kernel walk ended. */
enum ku_end {
	KU_END_NONE = 0,
	KU_END_COMPLETE,	/* bottom of the stack */
	KU_END_NO_PROC,		/* the process has no mapping table yet */
	KU_END_NO_MAPPING,	/* pc outside every known executable mapping */
	KU_END_NOT_LOADED,	/* the module's table is not loaded yet */
	KU_END_DWARF,		/* the row needs DWARF evaluation */
	KU_END_NO_CFI,		/* no row and no usable frame pointer */
	KU_END_BAD_MEMORY,	/* a read of the user stack failed */
	KU_END_LOOP,		/* the stack pointer did not move up */
	KU_END_FRAME_LIMIT,	/* max frames reached */
	KU_END_BAD_CFI,		/* CFA = rbp + off with rbp unknown */
	KU_END_BAD_PC,		/* return address is not in executable code */
	KU_END_NO_REGS,		/* no user registers at the event */
	KU_END_COUNT,
};

/* Where an in-kernel walk stopped: the registers of the frame of its last
 * pc (pc carries KU_PC_EXACT as that pc does) and why. User space
 * continues the walk from here over a stack copy (the hybrid). */
struct ku_end_state {
	__u64 pc, sp, rbp, rbx;
	__u32 valid;		/* KU_VALID_* */
	__u32 end;		/* enum ku_end */
};

/* Valid bits of the end registers. */
#define KU_VALID_RBP 1
#define KU_VALID_RBX 2

/* The event a walk produces, followed by pcs[nframes] (u64 each), then, in
 * copy/both modes, stack_len bytes of user stack from stack_start. No
 * stack contents otherwise. The end registers are the state of the frame
 * the walk stopped at (its pc is the last pc), so that user space can go
 * on from there with a stack copy (both mode). */
struct ku_event {
	__u64 time_ns;
	__u32 pid, tid;
	__u32 event_id;		/* which traced event (caller's cookie) */
	__u16 nframes;
	__u8 end;		/* enum ku_end */
	__u8 flags;		/* KU_EV_* */
	__u64 end_pc, end_sp, end_rbp, end_rbx;
	__u32 end_valid;	/* KU_VALID_* */
	__u32 stack_len;	/* bytes of stack copy following the pcs */
	__u64 stack_start;
	__u64 regs_ip, regs_sp, regs_bp, regs_bx; /* frame 0's registers */
	char comm[16];
};

#define KU_EV_KERNEL 1		/* the in-kernel walk ran */
#define KU_EV_COPY 2		/* a stack copy follows the pcs */
#define KU_EV_MAPS_CHANGED 4	/* a notification, not an event: the
				   process's code mappings changed */

/* Walk modes, ku_config.mode. */
#define KU_MODE_KERNEL 1
#define KU_MODE_COPY 2
#define KU_MODE_BOTH 3

#define KU_MAX_STACK 16384	/* bytes of stack copy per event (both/copy) */

#endif
