/* sample_frames.c - perf-style samples to symbolized frames (kernel frames
 * from the callchain, user frames unwound by the library and named from
 * the ELF symbol tables, as perf names them), cached per address, and
 * handed on to the aggregated stacks. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "perf_script.h"
#include "sample_frames.h"

#define PERF_CONTEXT_MAX ((uint64_t)-4095)
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_USER ((uint64_t)-512)
#define SYM_CACHE (1u << 16)

int sample_frames_init(struct sample_frames *sf, struct stacksnap_procs *procs,
		       struct stacksnap_unwinder *uw, unsigned max_stack,
		       unsigned sym_flags, bool no_cache)
{
	memset(sf, 0, sizeof(*sf));
	sf->procs = procs;
	sf->uw = uw;
	sf->max_stack = max_stack;
	sf->sym_flags = sym_flags;
	sf->no_cache = no_cache;
	sf->frames = calloc(max_stack, sizeof(*sf->frames));
	sf->cache = calloc(SYM_CACHE, sizeof(*sf->cache));
	return sf->frames && sf->cache ? 0 : -ENOMEM;
}

void sample_frames_fini(struct sample_frames *sf)
{
	for (size_t i = 0; sf->cache && i < sf->ninl_slots; i++) {
		free(sf->cache[sf->inl_slots[i]].inl);
		sf->cache[sf->inl_slots[i]].inl = NULL;
	}
	free(sf->inl_slots);
	free(sf->frames);
	free(sf->cache);
	free(sf->agg);
	stacksnap_kallsyms__free(sf->ksyms);
	stacksnap_vm__free(sf->jvm);
	free(sf->rframes);
	memset(sf, 0, sizeof(*sf));
}

/* Allocates slot s's inl for k entries, listed for fini. NULL when out of
 * memory (the frame is then printed without its chain). */
static const char **slot_inl(struct sample_frames *sf, struct sym_slot *s, int k)
{
	if (sf->ninl_slots >= 2 * SYM_CACHE) {
		/* A long profile's evictions: list the live ones anew. */
		sf->ninl_slots = 0;
		for (uint32_t i = 0; i < SYM_CACHE; i++)
			if (sf->cache[i].inl)
				sf->inl_slots[sf->ninl_slots++] = i;
	}
	if (sf->ninl_slots == sf->capinl_slots) {
		size_t cap = sf->capinl_slots ? sf->capinl_slots * 2 : 256;
		uint32_t *v = realloc(sf->inl_slots, cap * sizeof(*v));

		if (!v)
			return NULL;
		sf->inl_slots = v;
		sf->capinl_slots = cap;
	}
	s->inl = malloc((size_t)k * sizeof(*s->inl));
	if (s->inl)
		sf->inl_slots[sf->ninl_slots++] = (uint32_t)(s - sf->cache);
	return s->inl;
}

static const struct sym_slot *symbolize(struct sample_frames *sf,
					struct stacksnap_addrspace *as,
					uint64_t addr)
{
	uint64_t gen = stacksnap_procs__generation(sf->procs);
	uint64_t h = (addr ^ (uint64_t)(uintptr_t)as * 0x9e3779b97f4a7c15ull) *
		     0x9e3779b97f4a7c15ull;
	struct sym_slot *s = &sf->cache[h >> 48 & (SYM_CACHE - 1)];
	struct stacksnap_mapping m;
	struct stacksnap_sym sym, syms[16];
	int k;

	sf->lookups++;
	if (s->as == as && s->addr == addr && s->gen == gen)
		return s;
	sf->misses++;
	free(s->inl);
	memset(s, 0, sizeof(*s));
	s->as = as;
	s->addr = addr;
	s->gen = gen;
	s->rel = addr;
	m.sz = sizeof(m);
	if (stacksnap_addrspace__find_mapping(as, addr, &m) == 0) {
		s->dso = m.path;
		s->rel = addr - m.start + m.offset;
		s->map_start = m.start;
		s->map_end = m.end;
		s->map_offset = m.offset;
		s->build_id = m.build_id;
		s->build_id_len = m.build_id_len;
	}
	k = stacksnap_addrspace__symbolize(as, addr, false, sf->sym_flags, syms,
					   sizeof(syms) / sizeof(syms[0]));
	sym = k > 0 ? syms[k - 1] : (struct stacksnap_sym){ 0 };
	/* A chain without --lines is a Go program's inlined calls (its
	 * pclntab names them at no cost): frames in every output. */
	if (k > 1 && sym.function && slot_inl(sf, s, k)) {
		for (int i = 0; i < k; i++)
			s->inl[i] = syms[i].function ? syms[i].function : "??";
		s->ninl = (uint16_t)k;
		s->inl_done = true;
	}
	if (k > 0 && sym.function) {
		s->name = sym.function;
		s->off = sym.offset;
		/* perf shows JIT code named by a map with the map as dso. */
		if (sym.module && !strcmp(sym.module, STACKSNAP_MODULE_JIT))
			s->dso = stacksnap_addrspace__jit_file(as, addr, false);
		if (!s->dso)
			s->dso = sym.module;
	}
	return s;
}

/* Inline frames (perf script's default; --no-inline turns them off): the
 * frame at addr printed as perf prints it, through the chain of functions
 * the debug information has there, innermost first, down to the
 * containing function, all with the address and offset of the ELF symbol.
 * perf (append_inlines) prints such a chain in place of the frame; an
 * entry named as the symbol is the frame itself (dso shown), any other is
 * "(inlined)" - the containing function too when its DWARF name is not
 * the symbol's (a gcc clone foo.constprop.0, glibc's
 * __libc_start_main_impl). perf takes C++ names from binutils' addr2line,
 * unqualified, and names some inner entries (lambdas) by the symbol: such
 * chains differ in names only (tests/perf/compare.py --inline). No chain (no debug information, no symbol):
 * the frame alone. Returns the new count. */
/* The debug information's name dw is the symbol's: equal, or the symbol
 * is dw with a parameter list (C++ symbols are demangled with one, gdb-
 * style DWARF names have none) and perhaps a return type before it
 * (templates: "void std::sort<...>(...)"). */
static bool same_function(const char *dw, const char *sym)
{
	size_t n = strlen(dw);

	for (const char *p = sym; (p = strstr(p, dw)); p++)
		if ((p == sym || p[-1] == ' ') && (p[n] == 0 || p[n] == '('))
			return true;
	return false;
}

static size_t add_frame_inline(struct sample_frames *sf, struct stacksnap_addrspace *as,
			       struct sym_slot *sl, uint64_t addr, struct out_frame *fr,
			       size_t n, size_t maxfr)
{
	if (!sl->inl_done && sl->name) {
		struct stacksnap_sym syms[64];
		int k = stacksnap_addrspace__symbolize(as, addr, false,
						       STACKSNAP_SYM_LINES |
						       (sf->sym_flags & STACKSNAP_SYM_NO_DEMANGLE),
						       syms, 64);

		sl->inl_done = true;
		/* A chain from DWARF ends with a subprogram; a lone entry
		 * without line info is the symbol table's answer. */
		if (k > 0 && (k > 1 || syms[0].file) && slot_inl(sf, sl, k)) {
			for (int i = 0; i < k; i++)
				sl->inl[i] = syms[i].function ? syms[i].function : "??";
			sl->ninl = (uint16_t)k;
		}
	}
	if (!sl->ninl) {
		if (n < maxfr)
			fr[n++] = (struct out_frame){ .addr = sl->rel, .pc = addr,
						      .name = sl->name, .off = sl->off,
						      .dso = sl->dso, .slot = sl };
		return n;
	}
	for (unsigned i = 0; i < sl->ninl && n < maxfr; i++)
		fr[n++] = (struct out_frame){ .addr = sl->rel, .pc = addr, .name = sl->inl[i],
					      .off = sl->off, .dso = sl->dso, .slot = sl,
					      .inlined = !same_function(sl->inl[i], sl->name) };
	return n;
}

/* The JVM or V8 of sf->jvm_pid, looked for at its samples (every 64th,
 * at most 64 times: a command's runtime loads and initializes its tables
 * after the first samples); its stepper joins the unwinder once found. */
static void find_jvm(struct sample_frames *sf, struct stacksnap_addrspace *as)
{
	if (sf->jvm || !sf->jvm_ctx || sf->jvm_tries >= 64 * 64 ||
	    sf->jvm_tries++ % 64)
		return;
	if (!sf->rframes &&
	    !(sf->rframes = calloc(4 * (size_t)sf->max_stack, sizeof(*sf->rframes))))
		return;
	sf->jvm = stacksnap_vm__open(sf->jvm_ctx, sf->jvm_pid, as);
	if (sf->jvm)
		stacksnap_vm__steppers(sf->jvm, sf->uw);
}

/* The sample's user sp (where its stack copy starts), or 0: perf's
 * registers are packed in mask order, sp is perf's x86 register 7. */
static uint64_t sample_sp(const struct stacksnap_perf_event *ev)
{
	const uint64_t sp_bit = 1ull << 7;

	if (!ev->regs || !(ev->regs_mask & sp_bit))
		return 0;
	return ev->regs[__builtin_popcountll(ev->regs_mask & (sp_bit - 1))];
}

/* Native frame i's Java or JavaScript frames (from *k on, in native_index order). */
static size_t add_java_frames(struct sample_frames *sf, int nr, int *k, int i,
			      uint64_t pc, struct out_frame *fr, size_t n,
			      size_t maxfr)
{
	for (; *k < nr && sf->rframes[*k].native_index == (uint32_t)i && n < maxfr;
	     (*k)++)
		fr[n++] = (struct out_frame){ .addr = pc, .pc = pc,
					      .name = sf->rframes[*k].function,
					      .dso = sf->rframes[*k].runtime ==
						     STACKSNAP_RUNTIME_JS ? "[js]" : "[java]",
					      .inlined = sf->rframes[*k].flags &
							 STACKSNAP_RFRAME_INLINED };
	return n;
}

const char *sample_comm(struct sample_frames *sf, pid_t tid, char buf[24])
{
	const char *comm = stacksnap_procs__comm_of(sf->procs, tid);

	if (comm)
		return comm;
	snprintf(buf, 24, ":%d", (int)tid);
	return buf;
}

/* A recording without user registers and stack (`perf record -g`, frame
 * pointers): its user frames are those of the callchain, after
 * PERF_CONTEXT_USER, as perf script prints them: the address recorded
 * (the first exact, the others return addresses), named by the call
 * before a return address (pc - 1: a call that ends a function, e.g. to
 * a noreturn one, returns past its end), with the offset of the address
 * printed. Returns the new count. */
static size_t add_callchain_user(struct sample_frames *sf,
				 const struct stacksnap_perf_event *ev,
				 struct out_frame *fr, size_t n, size_t maxfr)
{
	struct stacksnap_addrspace *as = stacksnap_procs__addrspace(sf->procs, ev->pid);
	bool in_user = false, first = true;
	unsigned taken = 0;

	if (!as)
		return n;
	for (uint64_t i = 0; i < ev->callchain_nr && n < maxfr && taken < sf->max_stack; i++) {
		uint64_t ip = ev->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			in_user = ip == PERF_CONTEXT_USER;
			continue;
		}
		if (!in_user)
			continue;
		bool exact = first;
		uint64_t addr = ip - !exact;
		struct sym_slot *sl = (struct sym_slot *)symbolize(sf, as, addr);
		size_t k = n;

		first = false;
		taken++;
		if (sf->inline_frames || sl->ninl)
			n = add_frame_inline(sf, as, sl, addr, fr, n, maxfr);
		else
			fr[n++] = (struct out_frame){ .addr = sl->rel, .pc = addr,
						      .name = sl->name, .off = sl->off,
						      .dso = sl->dso, .slot = sl };
		/* Printed as recorded; pc stays the call's, as the unwound
		 * frames' (a profile's location is the call's line). */
		for (; k < n && !exact; k++) {
			fr[k].addr++;
			fr[k].off += fr[k].name != NULL;
		}
	}
	sf->frames_total += taken;
	return n;
}

size_t sample_frames_resolve(struct sample_frames *sf,
			     const struct stacksnap_perf_event *ev,
			     struct out_frame *fr, size_t maxfr)
{
	size_t n = 0;
	bool in_kernel = false, add_marker = false;

	/* Kernel frames come from the sample's own callchain. */
	for (uint64_t i = 0; i < ev->callchain_nr && n < maxfr; i++) {
		uint64_t ip = ev->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			in_kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!in_kernel)
			continue;
		if (!sf->ksyms_tried) {
			sf->ksyms_tried = true;
			sf->ksyms = stacksnap_kallsyms__load(sf->no_cache ? NULL : default_cache_dir(),
						  sf->kernel_build_id, cli_log, NULL);
		}
		fr[n] = (struct out_frame){ .addr = ip, .pc = ip, .kernel = true,
					    .dso = "[kernel.kallsyms]" };
		fr[n].name = stacksnap_kallsyms__lookup(sf->ksyms, ip, &fr[n].off);
		n++;
	}
	if (ev->regs_abi && ev->regs) {
		STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev->pid, .tid = ev->tid,
			       .perf_regs_mask = ev->regs_mask, .perf_regs = ev->regs,
			       .stack = ev->stack, .stack_len = ev->stack_len);
		enum stacksnap_end end = STACKSNAP_END_NONE;
		int nf = 0;
		struct stacksnap_addrspace *as =
			stacksnap_procs__addrspace(sf->procs, ev->pid);
		bool java = ev->pid == sf->jvm_pid && sf->jvm_ctx;
		int nr = 0, k = 0;

		/* Looked for before the walk: its stepper walks this one. */
		if (java && as)
			find_jvm(sf, as);
		java = java && sf->jvm;
		/* The runtime's stepper is for its own process's walks. */
		stacksnap_vm__enable(sf->jvm, java);
		nf = stacksnap_procs__unwind_sample(sf->procs, sf->uw, &s, sf->frames,
						    sf->max_stack, &end);

		if (nf < 0 || !as)
			nf = 0;
		if (java && nf)
			nr = stacksnap_vm__frames(sf->jvm, ev->stack,
						  sample_sp(ev) ? ev->stack_len : 0,
						  sample_sp(ev), sf->frames,
						  (size_t)nf, sf->rframes,
						  4 * (size_t)sf->max_stack);
		/* perf ends a walk that ran out of copied stack with a
		 * frame at -1, [unknown]; print it the same (a consumer
		 * of perf script's output sees a truncated stack as it
		 * would from perf). */
		if (end == STACKSNAP_END_STACK_COPY && nf > 0 &&
		    (unsigned)nf < sf->max_stack && n + (unsigned)nf < maxfr)
			add_marker = true;
		if (end != STACKSNAP_END_COMPLETE) {
			sf->truncated++;
			if (cli_verbose)
				fprintf(stderr, "stacksnap: sample at offset %#" PRIx64
					" (tid %d): walk ended after %d frames: %s\n",
					ev->offset, (int)ev->tid, nf,
					stacksnap_end__str(end));
		}
		sf->frames_total += (unsigned)nf;
		for (int i = 0; i < nf && n < maxfr; i++) {
			const struct stacksnap_frame *f = &sf->frames[i];
			/* perf names a return address by the call before it
			 * and prints that address; exact are frame 0 and the
			 * frame a signal interrupted, the one after the
			 * trampoline (dwfl_frame_pc's activations; perf does
			 * the same through libunwind): its pc is the next
			 * instruction to run, pc - 1 may be another
			 * function's. The trampoline's own pc, where the
			 * handler returns, is taken as a return address. */
			bool exact = i == 0 || (f->flags & STACKSNAP_FRAME_SIGNAL);
			uint64_t addr = f->pc - !exact;
			const struct sym_slot *sl;

			/* A Java frame (or the methods inlined there) names
			   the native frame it is. */
			if (k < nr && sf->rframes[k].native_index == (uint32_t)i) {
				n = add_java_frames(sf, nr, &k, i, addr, fr, n, maxfr);
				continue;
			}
			sl = symbolize(sf, as, addr);

			if (sf->inline_frames || sl->ninl)
				n = add_frame_inline(sf, as, (struct sym_slot *)sl, addr,
						     fr, n, maxfr);
			else if (n < maxfr)
				fr[n++] = (struct out_frame){ .addr = sl->rel, .pc = addr,
							      .name = sl->name, .off = sl->off,
							      .dso = sl->dso, .slot = sl };
		}
	} else {
		n = add_callchain_user(sf, ev, fr, n, maxfr);
	}
	if (add_marker)
		fr[n++] = (struct out_frame){ .addr = UINT64_MAX, .pc = UINT64_MAX };
	sf->samples++;
	return n;
}

int sample_frames_add(struct sample_frames *sf, struct stacksnap_stacks *st,
		      const char *comm, const struct out_frame *fr, size_t n)
{
	if (n + 1 > sf->aggcap) {
		size_t cap = (n + 1) * 2;
		struct stacksnap_stack_frame *a = realloc(sf->agg, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		sf->agg = a;
		sf->aggcap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sym_slot *sl = fr[i].slot;

		sf->agg[i] = (struct stacksnap_stack_frame){
			.name = fr[i].name, .module = fr[i].dso, .addr = fr[i].pc,
			.kind = fr[i].kernel ? STACKSNAP_KIND_KERNEL
				: fr[i].name || fr[i].dso ? STACKSNAP_KIND_USER
				: STACKSNAP_KIND_UNKNOWN,
		};
		if (sl) {
			sf->agg[i].map_start = sl->map_start;
			sf->agg[i].map_end = sl->map_end;
			sf->agg[i].map_offset = sl->map_offset;
			sf->agg[i].build_id = sl->build_id;
			sf->agg[i].build_id_len = sl->build_id_len;
		}
	}
	sf->agg[n] = (struct stacksnap_stack_frame){ .name = comm,
						     .kind = STACKSNAP_KIND_ROOT };
	return stacksnap_stacks__add(st, sf->agg, n + 1, 1);
}
