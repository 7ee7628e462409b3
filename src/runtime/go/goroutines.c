/* goroutines.c - reads the goroutine list (runtime.allgs) of a stopped Go
 * process and unwinds each goroutine's stack with the pcsp rows, every read
 * bounded and checked (go_runtime.h). */
#include "runtime/go/go_runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *b, uint32_t off)
{
	uint32_t v;

	memcpy(&v, b + off, 4);
	return v;
}

static int read_g(const struct go_runtime *rt, struct stacksnap_mem *mem,
		  uint64_t addr, struct goroutine *g)
{
	const struct go_layout *l = &rt->layout;
	uint8_t buf[4096];
	int err;

	if (l->g_size > sizeof(buf))
		return -EINVAL;
	err = mem_read(mem, addr, buf, l->g_size);
	if (err < 0)
		return err;
	memset(g, 0, sizeof(*g));
	g->g = addr;
	g->goid = (int64_t)u64_at(buf, l->g_goid);
	g->status = u32_at(buf, l->g_atomicstatus);
	g->waitreason = buf[l->g_waitreason];
	g->waitsince = (int64_t)u64_at(buf, l->g_waitsince);
	g->sched_pc = u64_at(buf, l->g_sched_pc);
	g->sched_sp = u64_at(buf, l->g_sched_sp);
	g->sched_bp = u64_at(buf, l->g_sched_bp);
	g->syscallpc = u64_at(buf, l->g_syscallpc);
	g->syscallsp = u64_at(buf, l->g_syscallsp);
	g->stack_lo = u64_at(buf, l->g_stack_lo);
	g->stack_hi = u64_at(buf, l->g_stack_hi);
	g->gopc = u64_at(buf, l->g_gopc);
	g->startpc = u64_at(buf, l->g_startpc);
	g->m = u64_at(buf, l->g_m);
	g->locked = u64_at(buf, l->g_lockedm) != 0;
	g->labels_ptr = u64_at(buf, l->g_labels);
	if (l->waits)
		g->waiting = u64_at(buf, l->g_waiting);
	if (g->m) {
		uint64_t procid;

		if (mem_read(mem, g->m + l->m_procid, &procid, 8) == 0 &&
		    procid < (1u << 31))
			g->tid = (int32_t)procid;
	}
	return 0;
}

int go_goroutines__read(const struct go_runtime *rt, struct stacksnap_mem *mem,
			uint64_t bias, size_t max, struct goroutine **out,
			size_t *n, const struct log_sink *log)
{
	uint64_t slice[3], ptrs[256];
	struct goroutine *v;
	size_t k = 0;
	int err;

	*out = NULL;
	*n = 0;
	if (!rt->allgs || !rt->have_layout)
		return -ENOENT;
	err = mem_read(mem, rt->allgs + bias, slice, sizeof(slice));
	if (err < 0) {
		log_warn(log, "go: cannot read runtime.allgs at %#llx",
			 (unsigned long long)(rt->allgs + bias));
		return -EFAULT;
	}
	if (slice[1] > slice[2] || slice[1] > GO_MAX_GOROUTINES ||
	    (slice[1] && (slice[0] & 7))) {
		log_warn(log, "go: runtime.allgs is not a goroutine list "
			 "(len %llu, cap %llu)", (unsigned long long)slice[1],
			 (unsigned long long)slice[2]);
		return fail(-EINVAL);
	}
	v = calloc(slice[1] ? slice[1] : 1, sizeof(*v));
	if (!v)
		return fail(-ENOMEM);
	for (uint64_t i = 0; i < slice[1] && k < max; i += 256) {
		size_t chunk = slice[1] - i < 256 ? slice[1] - i : 256;

		err = mem_read(mem, slice[0] + i * 8, ptrs, chunk * 8);
		if (err < 0) {
			free(v);
			return -EFAULT;
		}
		for (size_t j = 0; j < chunk && k < max; j++) {
			struct goroutine *g = &v[k];

			if (!ptrs[j] || (ptrs[j] & 7) ||
			    read_g(rt, mem, ptrs[j], g) < 0)
				continue;
			if ((g->status & ~(uint32_t)GO_GSCAN) == GO_GDEAD)
				continue;
			/* No labels is all a bad map costs. */
			go_goroutine__read_labels(rt, mem, g);
			k++;
		}
	}
	*out = v;
	*n = k;
	return 0;
}

int64_t go_goroutine__goid_at(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, uint64_t r14,
			      uint64_t rsp)
{
	struct goroutine g;
	uint32_t st;

	if (!rt->have_layout || !r14 || (r14 & 7))
		return -1;
	mem_invalidate(mem);
	if (read_g(rt, mem, r14, &g) < 0)
		return -1;
	st = g.status & ~(uint32_t)GO_GSCAN;
	if (g.goid <= 0 || st == GO_GDEAD || st == GO_GIDLE ||
	    g.stack_lo >= g.stack_hi || rsp < g.stack_lo || rsp >= g.stack_hi)
		return -1;
	return g.goid;
}

uint64_t go_goroutines__list_len(const struct go_runtime *rt,
				 struct stacksnap_mem *mem, uint64_t bias)
{
	uint64_t slice[3];

	if (!rt->allgs)
		return 0;
	mem_invalidate(mem);
	if (mem_read(mem, rt->allgs + bias, slice, sizeof(slice)) < 0 ||
	    slice[1] > GO_MAX_GOROUTINES)
		return 0;
	return slice[1];
}

/* Whether goroutine g reads the same now (id, status, saved context,
 * system-call state). */
static bool g_unchanged(const struct go_runtime *rt, struct stacksnap_mem *mem,
			const struct goroutine *g)
{
	struct goroutine now;

	return read_g(rt, mem, g->g, &now) == 0 && now.goid == g->goid &&
	       now.status == g->status && now.sched_pc == g->sched_pc &&
	       now.sched_sp == g->sched_sp && now.syscallpc == g->syscallpc &&
	       now.syscallsp == g->syscallsp;
}

size_t go_goroutines__recheck_objects(const struct go_runtime *rt,
				      struct stacksnap_mem *mem,
				      struct goroutine *gs, size_t n)
{
	size_t changed = 0;

	mem_invalidate(mem);
	for (size_t i = 0; i < n; i++) {
		struct goroutine *g = &gs[i];

		if (!(g->nobjs || g->obj_unknown) || g_unchanged(rt, mem, g))
			continue;
		g->nobjs = 0;
		g->obj_unknown = "object not known: the goroutine ran after "
				 "the capture, before its object was read";
		changed++;
	}
	return changed;
}

size_t go_goroutines__recheck(const struct go_runtime *rt,
			      struct stacksnap_mem *mem,
			      struct goroutine *gs, size_t n)
{
	size_t changed = 0;

	mem_invalidate(mem);
	for (size_t i = 0; i < n; i++) {
		struct goroutine *g = &gs[i];

		if (g_unchanged(rt, mem, g))
			continue;
		free(g->frames);
		g->frames = NULL;
		g->nframes = 0;
		g->end = GO_END_CHANGED;
		if (g->nobjs || g->obj_unknown) {
			g->nobjs = 0;
			g->obj_unknown = "object not known: the goroutine changed "
					 "during the non-stop read";
		}
		changed++;
	}
	return changed;
}

/* Functions at which a goroutine's stack starts (nothing calls them). */
static bool is_stack_top(const char *name)
{
	static const char *const tops[] = { "runtime.goexit", "runtime.mstart",
		"runtime.rt0_go", "runtime.mcall", "runtime.morestack",
		"runtime.systemstack", "runtime.asmcgocall" };

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if (strcmp(name, tops[i]) == 0)
			return true;
	return false;
}

static int push_frames(const struct go_runtime *rt, struct goroutine *g,
		       size_t *cap, uint64_t pc, uint64_t sp, uint64_t bias,
		       bool backup, const char **func_name)
{
	struct go_frame fr[32];
	struct go_func f;
	uint64_t link = pc - bias, tracepc;
	int n;

	if (gopclntab__find_func(&rt->pcln, link, &f) < 0)
		return -ENOENT;
	/* A return address names the call before it (Go's tracepc). */
	tracepc = backup && link > f.entry ? link - 1 : link;
	n = gopclntab__frames(&rt->pcln, tracepc, fr, 32);
	if (n <= 0)
		return -ENOENT;
	for (int i = 0; i < n; i++) {
		struct go_gframe *o;

		if (g->nframes == *cap) {
			size_t nc = *cap ? *cap * 2 : 16;
			struct go_gframe *p = realloc(g->frames,
						      nc * sizeof(*p));

			if (!p)
				return -ENOMEM;
			g->frames = p;
			*cap = nc;
		}
		o = &g->frames[g->nframes++];
		o->pc = pc;
		o->sp = sp;
		o->function = fr[i].function;
		o->file = fr[i].file;
		o->line = fr[i].line;
		o->inlined = fr[i].inlined;
		o->entry = fr[i].entry + bias;
		o->funcid = fr[i].funcid;
	}
	*func_name = fr[n - 1].function;
	return 0;
}

/* Where g's walk starts: g.sched for a parked goroutine (its pc a return
 * address: backup), syscallpc/sp in a system call, its thread's
 * registers when running (exact pc). bounded: the walk stays inside g's
 * stack. false (g->end set) when there is nothing to start from. */
static bool start_state(struct goroutine *g, const struct go_thread_regs *threads,
			size_t nthreads, uint64_t *pc, uint64_t *sp,
			uint64_t *bp, bool *backup, bool *bounded)
{
	uint32_t st = g->status & ~(uint32_t)GO_GSCAN;

	*pc = g->sched_pc;
	*sp = g->sched_sp;
	*bp = g->sched_bp;
	*backup = true;
	*bounded = g->stack_lo && g->stack_hi > g->stack_lo;
	g->end = NULL;
	if (st == GO_GRUNNING) {
		const struct go_thread_regs *r = NULL;

		for (size_t i = 0; i < nthreads; i++)
			if (threads[i].tid == g->tid)
				r = &threads[i];
		if (!r) {
			g->end = "running on a thread without registers";
			return false;
		}
		*pc = r->rip;
		*sp = r->rsp;
		*bp = r->rbp;
		*backup = false;
		/* On the system stack (g0, a signal stack) the registers do
		 * not describe this goroutine's stack: walk them unbounded
		 * by it, until the code is not Go's. */
		if (*sp < g->stack_lo || *sp >= g->stack_hi)
			*bounded = false;
	} else if (g->syscallsp) {
		*pc = g->syscallpc;
		*sp = g->syscallsp;
	}
	return true;
}

int go_goroutine__unwind_with(const struct go_runtime *rt,
			      struct stacksnap_unwinder *uw,
			      struct stacksnap_addrspace *as,
			      struct stacksnap_mem *mem, uint64_t bias,
			      struct goroutine *g,
			      const struct go_thread_regs *threads,
			      size_t nthreads)
{
	struct stacksnap_frame *fr;
	struct stacksnap_regs regs = { 0 };
	enum stacksnap_end end;
	uint64_t pc, sp, bp;
	bool backup, bounded;
	size_t cap = 0;
	int n;

	if (!start_state(g, threads, nthreads, &pc, &sp, &bp, &backup, &bounded))
		return 0;
	regs.regs[STACKSNAP_REG_RIP] = pc;
	regs.regs[STACKSNAP_REG_RSP] = sp;
	regs.regs[STACKSNAP_REG_RBP] = bp;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     1u << STACKSNAP_REG_RBP;
	fr = malloc(GO_MAX_FRAMES * sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	n = stacksnap_unwind(uw, as, &regs, mem, fr, GO_MAX_FRAMES, &end);
	if (n < 0) {
		free(fr);
		g->end = "unwind failed";
		return 0;
	}
	for (int k = 0; k < n; k++) {
		const char *name = NULL;
		int err;

		if (bounded && (fr[k].sp < g->stack_lo || fr[k].sp >= g->stack_hi)) {
			g->end = "stack pointer outside the goroutine's stack";
			break;
		}
		err = push_frames(rt, g, &cap, fr[k].pc, fr[k].sp, bias,
				  k ? true : backup, &name);
		if (err == -ENOMEM) {
			free(fr);
			return err;
		}
		if (err < 0) {
			g->end = "pc outside Go code";
			break;
		}
		if (is_stack_top(name))
			break;
		if (k + 1 == n)
			g->end = end == STACKSNAP_END_COMPLETE
					 ? "stack ends before the goroutine's start"
					 : stacksnap_end__str(end);
	}
	if (n == 0)
		g->end = stacksnap_end__str(end);
	free(fr);
	return 0;
}

int go_goroutine__unwind(const struct go_runtime *rt, struct stacksnap_mem *mem,
			 uint64_t bias, struct goroutine *g,
			 const struct go_thread_regs *threads, size_t nthreads)
{
	uint64_t pc, sp, bp;
	bool backup, bounded;
	size_t cap = 0;
	bool bp_known = false;

	if (!start_state(g, threads, nthreads, &pc, &sp, &bp, &backup, &bounded))
		return 0;
	for (unsigned depth = 0; depth < GO_MAX_FRAMES; depth++) {
		const struct unwind_row *row;
		const char *name = NULL;
		uint64_t cfa, ra;
		int err;

		if (bounded && (sp < g->stack_lo || sp >= g->stack_hi)) {
			g->end = "stack pointer outside the goroutine's stack";
			return 0;
		}
		err = push_frames(rt, g, &cap, pc, sp, bias, backup, &name);
		if (err == -ENOMEM)
			return err;
		if (err < 0) {
			g->end = "pc outside Go code";
			return 0;
		}
		if (is_stack_top(name))
			return 0;
		row = go_pcsp__lookup(&rt->rows, pc - bias);
		if (!row || row->cfa_kind != UT_CFA_RSP) {
			g->end = "no pcsp row";
			return 0;
		}
		cfa = sp + (uint64_t)(int64_t)row->cfa_off;
		/* A frame past its BP store holds BP = its CFA - 16: check
		 * the value the callee's slot gave us. */
		if (bp_known && row->rbp_kind == UT_RBP_CFA_OFF) {
			g->fp_checked++;
			g->fp_mismatch += bp != cfa - 16;
		}
		bp_known = false;
		if (bounded && cfa > g->stack_hi) {
			g->end = "frame outside the goroutine's stack";
			return 0;
		}
		if (mem_read(mem, cfa - 8, &ra, 8) < 0) {
			g->end = "stack read failed";
			return 0;
		}
		if (row->rbp_kind == UT_RBP_CFA_OFF)
			bp_known = mem_read(mem, cfa + (uint64_t)(int64_t)
					    row->rbp_off, &bp, 8) == 0;
		if (ra == 0) {
			g->end = "return address 0";
			return 0;
		}
		pc = ra;
		sp = cfa;
		backup = true;
	}
	g->end = "too many frames";
	return 0;
}

bool go_goroutine__created_by(const struct go_runtime *rt,
			      const struct goroutine *g, uint64_t bias,
			      struct go_gframe *out)
{
	struct go_func f;
	uint64_t link = g->gopc - bias, tracepc;

	if (!g->gopc || gopclntab__find_func(&rt->pcln, link, &f) < 0)
		return false;
	memset(out, 0, sizeof(*out));
	out->function = gopclntab__func_name(&rt->pcln, &f);
	if (!out->function)
		return false;
	tracepc = link > f.entry ? link - 1 : link;
	gopclntab__file_line(&rt->pcln, &f, tracepc, &out->file, &out->line);
	out->pc = g->gopc;
	out->entry = f.entry + bias;
	return true;
}

void go_goroutines__free(struct goroutine *g, size_t n)
{
	for (size_t i = 0; g && i < n; i++) {
		free(g[i].frames);
		free(g[i].objs);
		go_goroutine__free_labels(&g[i]);
	}
	free(g);
}

/* Whether frame j of g is a wrapper Go's profiles leave out: as the
 * runtime's traceback, funcID_wrapper unless its callee (the frame
 * inside it) is a panic (elideWrapperCalling). */
static bool is_wrapper(const struct go_runtime *rt, const struct goroutine *g,
		       size_t j)
{
	const char *callee = j ? g->frames[j - 1].function : NULL;

	if (!rt->funcid_wrapper || g->frames[j].funcid != rt->funcid_wrapper)
		return false;
	return !callee || (strcmp(callee, "runtime.gopanic") != 0 &&
			   strcmp(callee, "runtime.sigpanic") != 0 &&
			   strcmp(callee, "runtime.panicwrap") != 0);
}

int go_goroutines__publish(const struct go_runtime *rt,
			   const struct goroutine *gs, size_t n, uint64_t bias,
			   int64_t now, struct stacksnap_goroutine **pubp,
			   struct stacksnap_runtime_frame **framesp)
{
	struct stacksnap_goroutine *pub;
	struct stacksnap_runtime_frame *frames;
	size_t total = 0, k = 0, nlabels = 0, label_bytes = 0, nobjs = 0;
	struct stacksnap_go_object *objs;
	const char **label_ptrs;
	char *label_text;

	for (size_t i = 0; i < n; i++) {
		total += gs[i].nframes;
		nobjs += gs[i].nobjs;
		for (size_t j = 0; j < gs[i].nobjs; j++)
			label_bytes += strlen(gs[i].objs[j].elem_type) + 1;
		nlabels += 2 * gs[i].nlabels;
		for (size_t j = 0; j < 2 * gs[i].nlabels; j++)
			label_bytes += strlen(gs[i].labels[j]) + 1;
	}
	pub = calloc(n ? n : 1, sizeof(*pub));
	/* The wait objects, the labels' pointers and text (and the
	 * objects' element types) after the frames, in the one block (*framesp) the caller frees: they
	 * outlive gs (a core's). */
	frames = calloc(1, (total ? total : 1) * sizeof(*frames) +
			   nobjs * sizeof(*objs) +
			   nlabels * sizeof(char *) + label_bytes);
	if (!pub || !frames) {
		free(pub);
		free(frames);
		return fail(-ENOMEM);
	}
	objs = (struct stacksnap_go_object *)(frames + (total ? total : 1));
	label_ptrs = (const char **)(objs + nobjs);
	label_text = (char *)(label_ptrs + nlabels);
	for (size_t i = 0; i < n; i++) {
		const struct goroutine *gr = &gs[i];
		struct stacksnap_goroutine *p = &pub[i];

		p->object_unknown = gr->obj_unknown;
		if (gr->nobjs)
			p->objects = objs;
		p->nobjects = gr->nobjs;
		for (size_t j = 0; j < gr->nobjs; j++, objs++) {
			const struct go_wait_object *o = &gr->objs[j];

			objs->addr = o->addr;
			objs->type = o->type;
			objs->capacity = o->capacity;
			objs->queued = o->queued;
			objs->closed = o->closed;
			objs->receivers = o->receivers;
			objs->senders = o->senders;
			objs->counts_cut = o->counts_cut;
			if (o->elem_type[0]) {
				size_t len = strlen(o->elem_type) + 1;

				memcpy(label_text, o->elem_type, len);
				objs->elem_type = label_text;
				label_text += len;
			}
		}
		if (gr->nlabels) {
			p->labels = label_ptrs;
			p->nlabels = gr->nlabels;
		}
		for (size_t j = 0; j < 2 * gr->nlabels; j++) {
			size_t len = strlen(gr->labels[j]) + 1;

			memcpy(label_text, gr->labels[j], len);
			*label_ptrs++ = label_text;
			label_text += len;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct goroutine *gr = &gs[i];
		struct stacksnap_goroutine *p = &pub[i];
		uint32_t st = gr->status & ~(uint32_t)GO_GSCAN;
		struct go_gframe cb;
		uint32_t physical = 0;

		p->sz = sizeof(*p);
		p->goid = gr->goid;
		p->status = go_status_name(gr->status, gr->waitreason);
		p->wait_reason = st == GO_GWAITING && gr->waitreason
					 ? go_wait_reason(gr->waitreason) : NULL;
		p->wait_ns = now && gr->waitsince > 0 && gr->waitsince <= now
				     ? now - gr->waitsince : -1;
		p->thread = gr->m ? gr->tid : 0;
		/* The runtime names no creator for the main goroutine. */
		if (gr->goid != 1 && go_goroutine__created_by(rt, gr, bias, &cb)) {
			p->created_by = cb.function;
			p->created_file = cb.file;
			p->created_line = cb.line > 0 ? (unsigned)cb.line : 0;
		}
		p->frames = &frames[k];
		p->nframes = gr->nframes;
		p->end = gr->end;
		for (size_t j = 0; j < gr->nframes; j++) {
			const struct go_gframe *f = &gr->frames[j];
			struct stacksnap_runtime_frame *o = &frames[k++];

			o->sz = sizeof(*o);
			o->runtime = STACKSNAP_RUNTIME_GO;
			o->native_index = physical;
			o->flags = f->inlined ? STACKSNAP_RFRAME_INLINED : 0;
			if (is_wrapper(rt, gr, j))
				o->flags |= STACKSNAP_RFRAME_WRAPPER;
			o->function = f->function;
			o->file = f->file;
			o->line = f->line > 0 ? (unsigned)f->line : 0;
			o->pc = f->pc;
			physical += !f->inlined;
		}
	}
	*pubp = pub;
	*framesp = frames;
	return 0;
}
