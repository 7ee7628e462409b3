/* sample_frames.h - one perf-style sample (user registers + stack copy +
 * kernel callchain) turned into symbolized frames, shared by perf-script
 * and profile, and those frames handed to the aggregated stacks every
 * profile format is written from. */
#ifndef STACKSNAP_TOOL_SAMPLE_FRAMES_H
#define STACKSNAP_TOOL_SAMPLE_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "stacksnap.h"

/* A symbolized address, cached: valid while the process table's
 * generation is gen (strings belong to the context and address spaces,
 * which keep them at least that long). */
struct sym_slot {
	const struct stacksnap_addrspace *as;
	uint64_t addr, gen;
	const char *name;	/* NULL: [unknown] */
	const char *dso;	/* NULL: [unknown] */
	uint64_t off, rel;
	uint64_t map_start, map_end, map_offset;
	const uint8_t *build_id;
	size_t build_id_len;
	/* With inline frames, perf's way: the debug information's chain at
	 * addr, innermost first, down to the containing function (looked up
	 * once, on first use; inl is malloc'd, ninl entries). When ninl > 0
	 * the chain replaces the frame: an entry named as the symbol (name)
	 * prints as the frame itself, any other as "(inlined)". */
	bool inl_done;
	uint16_t ninl;
	const char **inl;
};

/* A resolved frame of a sample, innermost first. addr is what perf
 * prints (module-relative), pc the address in the process. */
struct out_frame {
	uint64_t addr, pc;
	const char *name, *dso;
	uint64_t off;
	bool kernel;
	bool inlined;		/* an inline frame: printed "(inlined)" */
	const struct sym_slot *slot; /* user frames: their mapping */
};

/* What resolving samples needs, kept across samples. */
struct sample_frames {
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame *frames;	/* max_stack */
	struct sym_slot *cache;
	/* Slots whose inl was allocated (some freed since, or listed
	 * twice): what fini frees, without a walk over every slot of the
	 * cache, which would touch all its pages. */
	uint32_t *inl_slots;
	size_t ninl_slots, capinl_slots;
	struct stacksnap_kallsyms *ksyms;
	bool ksyms_tried, no_cache;
	bool inline_frames;	/* inlined functions as frames (--inline) */
	char kernel_build_id[64]; /* hex, from the recording; "" unknown */
	unsigned max_stack, sym_flags;
	struct stacksnap_stack_frame *agg; /* for sample_frames_add */
	size_t aggcap;
	uint64_t samples, frames_total, truncated, lookups, misses;
	/* Java or JavaScript frames (profile -p PID / -- CMD): set jvm_ctx
	 * and jvm_pid after init; the JVM or V8 is looked for at that
	 * process's samples (a command loads its runtime after it starts)
	 * until found. */
	struct stacksnap_ctx *jvm_ctx;
	pid_t jvm_pid;
	struct stacksnap_vm *jvm;	/* a JVM or V8 */
	unsigned jvm_tries;
	struct stacksnap_runtime_frame *rframes; /* 4 * max_stack */
};

/* procs and uw are the caller's; max_stack user frames per sample. */
int sample_frames_init(struct sample_frames *sf, struct stacksnap_procs *procs,
		       struct stacksnap_unwinder *uw, unsigned max_stack,
		       unsigned sym_flags, bool no_cache);
void sample_frames_fini(struct sample_frames *sf);
/* Resolves a SAMPLE event into fr[0..maxfr): kernel frames from its
 * callchain, then the unwound user frames, then perf's -1 [unknown]
 * frame when the walk ran out of copied stack. Returns the count. */
size_t sample_frames_resolve(struct sample_frames *sf,
			     const struct stacksnap_perf_event *ev,
			     struct out_frame *fr, size_t maxfr);
/* The thread's name as perf script shows it (":TID" when unknown);
 * buf holds it in that case. */
const char *sample_comm(struct sample_frames *sf, pid_t tid, char buf[24]);
/* Adds resolved frames, with comm as the outermost (root) frame, to st. */
int sample_frames_add(struct sample_frames *sf, struct stacksnap_stacks *st,
		      const char *comm, const struct out_frame *fr, size_t n);

#endif
