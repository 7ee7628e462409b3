/* java_capture.c - a HotSpot JVM's part of a live capture: found (and its
 * vmStructs tables read) before the freeze; after the thaw, each native
 * frame of a thread whose pc is in the code cache is named as its Java
 * frame (a runtime frame of kind JAVA replacing it 1:1). Nothing is read
 * during the freeze: the frames are in the stack copies already, and what
 * names them (code blobs, Method*, constant pools, Symbols) is metadata
 * read from the live process after the thaw. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/maps_line.h"
#include "capture/capture_internal.h"
#include "mem/mem.h"
#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_frames.h"
#include "runtime/java/hotspot_structs.h"
#include "runtime/java/hotspot_threads.h"

/* Invariant: structs and code were read, or no_layout (a JVM whose
 * tables did not read, or too old: description says so, no frames).
 * frames[i] (thread i of the snapshot) is valid once resolved[i]; its
 * strings point into names[i]. */
struct snap_java {
	char path[4096];	/* libjvm.so as the target names it */
	char description[320];
	bool no_layout;		/* frames not named: description says why */
	struct stacksnap_mem *mem;
	struct hotspot_structs hs;
	struct hotspot_code hc;
	size_t nthreads;
	struct stacksnap_runtime_frame **frames;
	struct hotspot_frame **names;
	size_t *nframes;
	size_t *nnative;	/* the native frames frames[i] was named from */
	bool *resolved;
	/* The code heaps' ranges, read at the stepper's first frame (the
	   walk runs in the freeze: they do not move meanwhile). */
	uint64_t heaps[16][2];
	int nheaps;		/* -1: not read yet */
	/* Classes are unloaded only by a collection: the heap's collection
	   count read in the freeze and again when frames are named says
	   whether the metadata read after the thaw may have changed. */
	uint64_t gc_count_addr;	/* &CollectedHeap::_total_collections, or 0 */
	uint32_t gc_at_capture;
	bool gc_captured, gc_warned;
	pid_t pid;
	const struct log_sink *log; /* the context's, outlives the snapshot */
	/* The rbp of each interpreter frame the stepper stepped, by the
	   frame's sp (sps of different threads' stacks never coincide):
	   the frame's CFA is then its caller's saved sp, not rbp + 16.
	   Sorted by sp once naming starts (fp_sorted). */
	struct { uint64_t sp, fp; } *fps;
	size_t nfps, fps_cap;
	bool fp_sorted;
	/* Every step the stepper took (walks of this capture: the dump's,
	   the writer's), for --save: `show` replays them. At most
	   JAVA_MAX_STEPS; duplicates possible (the writer sorts them). */
	struct stacksnap_runtime_step *steps;
	size_t nsteps, steps_cap;
	/* Deoptimized compiled frames the stepper met (their return
	   address patched to the deopt handler): the original pc each
	   keeps in its frame, read from the stack copy, by the frame's sp. */
	struct { uint64_t sp, pc; } *deopts;
	size_t ndeopts, deopts_cap;
	/* The threads' Java names, read at the first one asked for (after
	   the thaw: a name is the object's, not the stack's). A JVM walked
	   again and again (watch) reads them again when a thread neither
	   named nor in unnamed (tids the last read did not name: GC and
	   other non-Java threads) is asked for, once per capture
	   (names_fresh, cleared by forget). unnamed is emptied every
	   JAVA_UNNAMED_CAPTURES captures: a thread asked for while starting
	   (no java.lang.Thread yet) is named then, and renames are seen. */
	struct hotspot_threads ht;
	bool ht_ok, names_read, names_fresh, names_warned, vthreads_said;
	unsigned captures;
	struct hotspot_thread_name *tnames;
	size_t ntnames;
	pid_t *unnamed;
	size_t nunnamed, unnamed_cap;
	/* The stepper steps while set: an unwinder shared with walks of
	   other processes (profile, trace) turns it off for them, as their
	   pcs mean nothing in this JVM's code cache. */
	bool step_off;
	bool noslots_said;	/* "interpreted frames without a copy" logged */
};

#define JAVA_MAX_STEPS (1u << 20)
#define JAVA_UNNAMED_CAPTURES 64

/* libjvm.so's first mapping: in the address space the caller read, else
 * in /proc/PID/maps. */
static int find_libjvm(pid_t pid, const struct stacksnap_addrspace *as,
		       char *path, size_t len, uint64_t *start, uint64_t *offset)
{
	char maps[64], line[4200];
	struct maps_line ml;
	FILE *f;
	int found = -ENOENT;

	if (as) {
		for (size_t i = 0; i < as->n; i++) {
			const char *p = as->maps[i].path, *base;

			if (!p || !(base = strrchr(p, '/')) || strcmp(base, "/libjvm.so"))
				continue;
			snprintf(path, len, "%s", p);
			*start = as->maps[i].start;
			*offset = as->maps[i].offset;
			return 0;
		}
		return -ENOENT;
	}
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r")))
		return -errno;
	while (found && fgets(line, sizeof(line), f)) {
		const char *base;

		if (maps_line__parse(line, &ml) || !ml.path ||
		    !(base = strrchr(ml.path, '/')) || strcmp(base, "/libjvm.so"))
			continue;
		snprintf(path, len, "%s", ml.path);
		*start = ml.start;
		*offset = ml.offset;
		found = 0;
	}
	fclose(f);
	return found;
}

static void *java_detect(pid_t pid, const struct stacksnap_addrspace *as,
			 const struct log_sink *log)
{
	struct snap_java *j;
	char full[4096 + 32];
	uint64_t start = 0, offset = 0;
	int err;

	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	if (find_libjvm(pid, as, j->path, sizeof(j->path), &start, &offset)) {
		free(j);
		return NULL;
	}
	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, j->path);
	if (!(j->mem = stacksnap_mem__new_pid(pid))) {
		free(j);
		return NULL;
	}
	err = hotspot_structs__read(j->mem, full, start, offset, log, &j->hs);
	if (!err) {
		err = hotspot_code__init(&j->hc, &j->hs, j->mem, log);
		if (err)
			hotspot_structs__free(&j->hs);
	}
	/* Layouts tested: JDK 17 and 25 (docs/jit.md); older ones have none
	   here, others in between are read by the tables, said untested.
	   A JVM without a layout stays found: its one line is the
	   runtime's description, printed with the dump (never silence). */
	j->pid = pid;
	j->log = log;
	if (j->hc.vm_major && j->hc.vm_major < HOTSPOT_OLDEST_LAYOUT) {
		snprintf(j->description, sizeof(j->description),
			 "HotSpot JDK %d JVM: no known layout (JDK %d and later), "
			 "native frames only", j->hc.vm_major, HOTSPOT_OLDEST_LAYOUT);
		err = -EPROTO;
	} else if (err) {
		char ver[32] = "", why[160];

		if (j->hc.vm_major)
			snprintf(ver, sizeof(ver), " JDK %d", j->hc.vm_major);
		if (err == -ENOENT)
			snprintf(why, sizeof(why), "are missing");
		else if (j->hc.missing[0])
			snprintf(why, sizeof(why), "lack %s", j->hc.missing);
		else
			snprintf(why, sizeof(why), "do not read (%s)", strerror(-err));
		snprintf(j->description, sizeof(j->description),
			 "HotSpot%s JVM: its vmStructs tables %s: no known layout, "
			 "native frames only", ver, why);
	}
	if (err) {
		log_warn(log, "pid %d: %s (%s)", (int)pid, j->description, j->path);
		hotspot_structs__free(&j->hs);
		memset(&j->hc, 0, sizeof(j->hc));
		j->no_layout = true;
		return j;
	}
	j->nheaps = -1;
	{
		const struct hotspot_field *heap =
			hotspot_structs__field(&j->hs, "Universe", "_collectedHeap");
		const struct hotspot_field *count =
			hotspot_structs__field(&j->hs, "CollectedHeap",
					       "_total_collections");
		uint64_t h = 0;

		if (heap && heap->is_static && count && !count->is_static &&
		    stacksnap_mem__read(j->mem, heap->address, &h, 8) == 0 && h)
			j->gc_count_addr = h + count->offset;
	}
	j->ht_ok = hotspot_threads__init(&j->ht, &j->hs, &j->hc) == 0;
	if (!j->ht_ok)
		log_info(log, "pid %d: the JVM's tables lack what Java thread names "
			 "need: OS thread names only", (int)pid);
	snprintf(j->description, sizeof(j->description),
		 "HotSpot JVM (JDK %d), %zu vmStructs fields%s", j->hc.vm_major,
		 j->hs.nfields, j->hc.vm_major != 17 && j->hc.vm_major != 25 ?
		 "; untested (layouts tested: JDK 17, 25)" : "");
	log_info(log, "pid %d: %s (%s)", (int)pid, j->description, j->path);
	return j;
}

/* The frames named so far, dropped (the arrays sized for the thread
 * count of their capture). */
static void drop_frames(struct snap_java *j)
{
	for (size_t i = 0; i < j->nthreads; i++) {
		if (j->frames)
			free(j->frames[i]);
		if (j->names)
			free(j->names[i]);
	}
	free(j->frames);
	free(j->names);
	free(j->nframes);
	free(j->nnative);
	free(j->resolved);
	j->frames = NULL;
	j->names = NULL;
	j->nframes = NULL;
	j->nnative = NULL;
	j->resolved = NULL;
	j->nthreads = 0;
}

static void java_forget(void *rt, unsigned what)
{
	struct snap_java *j = rt;

	if (what & NAMED_FORGET_FRAMES) {
		drop_frames(j);
		/* A new capture: its threads' names may be read again. */
		j->names_fresh = false;
		if (++j->captures % JAVA_UNNAMED_CAPTURES == 0)
			j->nunnamed = 0;
	}
	if (what & NAMED_FORGET_WALKS) {
		j->nfps = 0;
		j->fp_sorted = false;
		j->nsteps = 0;
		j->ndeopts = 0;
		j->gc_captured = false;
		j->gc_warned = false;
	}
	if (what & NAMED_FORGET_CODE) {
		/* The heaps commit more as the JIT compiles; a JVM found
		   while it starts had its code cache's statics read (and
		   cached) before they were set. */
		j->nheaps = -1;
		mem_invalidate(j->mem);
	}
}

static void java_free(void *rt)
{
	struct snap_java *j = rt;

	if (!j)
		return;
	drop_frames(j);
	free(j->tnames);
	free(j->unnamed);
	free(j->deopts);
	free(j->fps);
	free(j->steps);
	hotspot_code__free(&j->hc);
	hotspot_structs__free(&j->hs);
	stacksnap_mem__free(j->mem);
	free(j);
}

/* The collection count, past the source's page cache (a cached page
 * would hide the change it is read to see). */
static int read_gc_count(struct snap_java *j, uint32_t *count)
{
	struct mem_iov iov = { .addr = j->gc_count_addr, .buf = count, .len = 4 };

	return mem_read_many(j->mem, &iov, 1) ? -EFAULT : 0;
}

static void java_take(void *rt)
{
	struct snap_java *j = rt;

	j->gc_captured = j->gc_count_addr &&
		read_gc_count(j, &j->gc_at_capture) == 0;
}

/* Once per snapshot, before frames are named: a collection since the
 * freeze may have unloaded classes whose methods the frames name (a
 * Method* read after the thaw may then be freed, its memory as it was
 * or reused). The loaders alive now are read: a frame whose method's
 * class belongs to none says so instead of a name (hotspot_frames.c). */
static void check_unloading(struct snap_java *j)
{
	uint32_t now;

	if (j->gc_warned || !j->gc_captured || read_gc_count(j, &now))
		return;
	if (now != j->gc_at_capture) {
		int err = hotspot_code__read_live_loaders(&j->hc);

		j->gc_warned = true;
		log_warn(j->log, "pid %d: the JVM collected garbage %u time(s) between "
			 "the capture and the naming of its Java frames: %s", (int)j->pid,
			 now - j->gc_at_capture,
			 err ? "a class unloaded meanwhile may leave a frame misnamed"
			     : "frames of classes unloaded meanwhile are marked");
	}
}

/* JDK 21+ with carrier threads: said once in the description (printed
 * with the dump): mounted virtual threads are shown on their carriers,
 * unmounted ones not. */
static void vthreads_line(struct snap_java *j)
{
	size_t carriers = 0, mounted = 0, len = strlen(j->description);

	for (size_t k = 0; k < j->ntnames; k++) {
		carriers += j->tnames[k].carrier;
		mounted += j->tnames[k].mounted;
	}
	if (j->vthreads_said || (!carriers && !mounted))
		return;
	j->vthreads_said = true;
	snprintf(j->description + len, sizeof(j->description) - len,
		 "; virtual threads: %zu mounted, shown on their carrier threads "
		 "(as jstack); unmounted ones are not shown", mounted);
}

/* Reads every Java thread's name now (the old ones kept if this read
 * fails), past the source's page cache (names change as threads start). */
static void read_thread_names(struct snap_java *j)
{
	struct hotspot_thread_name *names;
	size_t n;
	int err;

	j->names_read = j->names_fresh = true;
	if (!j->ht_ok)
		return;
	mem_invalidate(j->mem);
	err = hotspot_threads__names(&j->ht, &names, &n);
	if (err) {
		if (!j->names_warned)
			log_info(j->log, "pid %d: Java thread names did not read (%s)",
				 (int)j->pid, strerror(-err));
		j->names_warned = true;
		return;
	}
	free(j->tnames);
	j->tnames = names;
	j->ntnames = n;
	vthreads_line(j);
	j->nunnamed = 0;
}

static const char *find_thread_name(const struct snap_java *j, pid_t tid)
{
	for (size_t k = 0; k < j->ntnames; k++)
		if (j->tnames[k].tid == tid)
			return j->tnames[k].name;
	return NULL;
}

static const char *java_thread_name(void *rt, pid_t tid)
{
	struct snap_java *j = rt;
	const char *name;

	if (!j->names_read)
		read_thread_names(j);
	if ((name = find_thread_name(j, tid)) || !j->ht_ok)
		return name;
	for (size_t k = 0; k < j->nunnamed; k++)
		if (j->unnamed[k] == tid)
			return NULL;
	if (!j->names_fresh) { /* a thread started since the last read */
		read_thread_names(j);
		if ((name = find_thread_name(j, tid)))
			return name;
	}
	if (j->nunnamed == j->unnamed_cap) {
		size_t cap = j->unnamed_cap ? 2 * j->unnamed_cap : 32;
		pid_t *v = cap <= 65536 ? realloc(j->unnamed, cap * sizeof(*v)) : NULL;

		if (!v)
			return NULL; /* asked again, read again: slower, not wrong */
		j->unnamed = v;
		j->unnamed_cap = cap;
	}
	j->unnamed[j->nunnamed++] = tid;
	return NULL;
}

static const char *java_description(const void *rt)
{
	/* Asked after the capture: JDK 21+'s threads are read then (once)
	   to say whether virtual threads are mounted. */
	struct snap_java *j = (struct snap_java *)rt;

	if (!j->no_layout && j->ht_ok && j->hc.vm_major >= 21 && !j->names_read)
		read_thread_names(j);
	return j->description;
}

static bool java_has_frames(const void *rt)
{
	return !((const struct snap_java *)rt)->no_layout;
}

/* The frame pointer (rbp) of native frame k: its CFA - 16 (the saved rbp
 * and the return address sit just below the caller's sp, as every
 * HotSpot frame, interpreter frames included, lays them out), with the
 * caller's sp standing in for a CFA the stepper did not compute. */
static int fp_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t frame_fp(struct snap_java *j, const struct stacksnap_frame *native,
			 size_t n, size_t k)
{
	uint64_t cfa = native[k].cfa;

	if (j->nfps) {
		size_t lo = 0, hi = j->nfps;

		if (!j->fp_sorted) {
			qsort(j->fps, j->nfps, sizeof(*j->fps), fp_cmp);
			j->fp_sorted = true;
		}
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (j->fps[mid].sp == native[k].sp)
				return j->fps[mid].fp;
			if (j->fps[mid].sp < native[k].sp)
				lo = mid + 1;
			else
				hi = mid;
		}
	}

	if (!cfa && k + 1 < n)
		cfa = native[k + 1].sp;
	return cfa > 16 ? cfa - 16 : 0;
}

/* Whether pc is in one of the code heaps: no read for the many frames
 * that are not (native code, other threads), once the ranges are known.
 * Heaps that could not be read let every pc through (the blob lookup
 * then decides). */
static bool in_code_cache(struct snap_java *j, uint64_t pc)
{
	if (j->nheaps < 0) {
		j->nheaps = hotspot_code__heap_ranges(&j->hc, j->heaps, 16);
		if (j->nheaps <= 0)
			j->nheaps = 0;
	}
	if (!j->nheaps)
		return true;
	for (int i = 0; i < j->nheaps; i++)
		if (pc >= j->heaps[i][0] && pc < j->heaps[i][1])
			return true;
	return false;
}

/* The pc of a caller frame: its return address, or, for a deoptimized
 * frame (its return address patched to the deopt handler), the original
 * one the stepper read from its frame. */
static uint64_t deopt_original_pc(const struct snap_java *j,
				  const struct stacksnap_frame *fr)
{
	for (size_t i = 0; i < j->ndeopts; i++)
		if (j->deopts[i].sp == fr->sp)
			return j->deopts[i].pc;
	return fr->pc;
}

/* Methods inlined at one call, at most. */
#define JAVA_MAX_SCOPES 64

/* Appends a name to *names (growing it); returns it, or NULL. */
static struct hotspot_frame *push_name(struct hotspot_frame **names,
				       uint32_t **native_of, size_t *n,
				       size_t *cap, uint32_t k)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		struct hotspot_frame *nn = realloc(*names, c * sizeof(**names));
		uint32_t *no;

		if (!nn)
			return NULL;
		*names = nn;
		no = realloc(*native_of, c * sizeof(**native_of));
		if (!no)
			return NULL;
		*native_of = no;
		*cap = c;
	}
	(*native_of)[*n] = k;
	return &(*names)[(*n)++];
}

/* Thread i's Java frames, named once: one per native frame whose pc is
 * in the code cache, or, for a compiled frame stopped at a call, one per
 * method of its scopes (the methods inlined there, innermost first, then
 * the method compiled), each with the line of its bci. */
static int resolve(struct snap_java *j, size_t nthreads, size_t i,
		   struct stacksnap_mem *stack,
		   const struct stacksnap_frame *native, size_t nnative)
{
	struct stacksnap_runtime_frame *rf;
	struct hotspot_frame *names = NULL;
	uint32_t *native_of = NULL;
	size_t n = 0, cap = 0;

	if (!j->frames) {
		j->frames = calloc(nthreads, sizeof(*j->frames));
		j->names = calloc(nthreads, sizeof(*j->names));
		j->nframes = calloc(nthreads, sizeof(*j->nframes));
		j->nnative = calloc(nthreads, sizeof(*j->nnative));
		j->resolved = calloc(nthreads, sizeof(*j->resolved));
		if (!j->frames || !j->names || !j->nframes || !j->nnative ||
		    !j->resolved)
			return -ENOMEM;
		j->nthreads = nthreads;
	}
	/* Named once per walk: the caller asks for the count, then the
	   frames, of the same native frames. */
	if (j->resolved[i] && j->nnative[i] == nnative)
		return 0;
	free(j->frames[i]);
	free(j->names[i]);
	j->frames[i] = NULL;
	j->names[i] = NULL;
	j->resolved[i] = false;
	for (size_t k = 0; k < nnative; k++) {
		const struct stacksnap_frame *fr = &native[k];
		bool exact = k == 0 || (fr->flags & STACKSNAP_FRAME_SIGNAL);
		/* A return address is past its call: look up the call. */
		uint64_t pc = exact ? fr->pc : fr->pc - 1;
		uint64_t methods[JAVA_MAX_SCOPES];
		int bcis[JAVA_MAX_SCOPES], ns;
		struct hotspot_frame one, *out;

		/* An interpreter frame's Method* and bcp are its slots as
		   captured: the live stack holds other frames by now. No
		   copy (a sample without one): the frame is not named. */
		if (!in_code_cache(j, pc) ||
		    hotspot_frame__name(&j->hc, stack, pc,
					stack ? frame_fp(j, native, nnative, k) : 0,
					&one))
			continue;
		if (!stack && one.kind == HOTSPOT_FRAME_STUB &&
		    !strcmp(one.function, "Interpreter") && !j->noslots_said) {
			j->noslots_said = true;
			log_info(j->log, "pid %d: interpreted Java frames of a sample "
				 "without a stack copy are not named (their method is "
				 "in the frame's slots, not captured): \"Interpreter\"",
				 (int)j->pid);
		}
		/* A frame stopped at a call: the scopes of its PcDesc; a
		   running one (an exact pc): those of the next debug point
		   (the methods inlined where it runs, as jstack and
		   AsyncGetCallTrace name them). */
		ns = one.kind == HOTSPOT_FRAME_COMPILED ?
			hotspot_code__scopes(&j->hc, one.blob,
					     exact ? fr->pc : deopt_original_pc(j, fr),
					     exact, methods, bcis,
					     JAVA_MAX_SCOPES) : 0;
		if (ns <= 0) {
			if (!(out = push_name(&names, &native_of, &n, &cap, (uint32_t)k)))
				goto nomem;
			*out = one;
			continue;
		}
		for (int m = 0; m < ns; m++) {
			struct hotspot_frame scope = { .kind = one.kind, .blob = one.blob };

			/* A scope whose method does not read: the frame's
			   own name stands for the rest. */
			if (hotspot_frame__method(&j->hc, methods[m], bcis[m], &scope)) {
				if (!(out = push_name(&names, &native_of, &n, &cap,
						      (uint32_t)k)))
					goto nomem;
				*out = one;
				break;
			}
			if (!(out = push_name(&names, &native_of, &n, &cap, (uint32_t)k)))
				goto nomem;
			*out = scope;
		}
	}
	rf = calloc(n ? n : 1, sizeof(*rf));
	if (!rf)
		goto nomem;
	for (size_t m = 0; m < n; m++) {
		const struct stacksnap_frame *fr = &native[native_of[m]];

		rf[m] = (struct stacksnap_runtime_frame){
			.sz = sizeof(rf[m]),
			.runtime = STACKSNAP_RUNTIME_JAVA,
			.native_index = native_of[m],
			/* All but the last of a native frame's are inlined
			   into the one after them. */
			.flags = (m + 1 < n && native_of[m + 1] == native_of[m] ?
				  STACKSNAP_RFRAME_INLINED : 0) |
				 /* A stub or adapter: the VM's, not a method. */
				 (names[m].kind == HOTSPOT_FRAME_STUB ? STACKSNAP_RFRAME_VM : 0),
			.function = names[m].function,
			.file = names[m].file[0] ? names[m].file : NULL,
			.line = names[m].line,
			.pc = names[m].kind == HOTSPOT_FRAME_INTERPRETED ? 0 : fr->pc,
		};
	}
	free(native_of);
	j->frames[i] = rf;
	j->names[i] = names;
	j->nframes[i] = n;
	j->nnative[i] = nnative;
	j->resolved[i] = true;
	return 0;
nomem:
	free(names);
	free(native_of);
	return -ENOMEM;
}

/* Compiled frames' slots are not read (their names come from the code
 * cache); interpreter frames' Method* and bcp are read from stack, the
 * copy the walk stepped (never the live stack: it holds other frames by
 * the time they are named). */
static int java_frames(void *rt, size_t nthreads, size_t i,
		       struct stacksnap_mem *stack,
		       const struct stacksnap_frame *native, size_t nnative,
		       struct stacksnap_runtime_frame *out, size_t max)
{
	struct snap_java *j = rt;
	int err;

	if (j->no_layout)
		return 0;
	check_unloading(j);
	if ((err = resolve(j, nthreads, i, stack, native, nnative)))
		return err;
	for (size_t k = 0; k < j->nframes[i] && k < max; k++)
		out[k] = j->frames[i][k];
	return (int)j->nframes[i];
}

/* A deoptimized frame at sp: its original pc (in the frame, at
 * orig_pc_offset), kept when it is inside the nmethod. */
static void note_deopt(struct snap_java *j, uint64_t sp, struct stacksnap_mem *mem,
		       const struct hotspot_blob *blob)
{
	uint64_t orig;

	if (stacksnap_mem__read(mem, sp + (uint64_t)blob->orig_pc_offset, &orig, 8) ||
	    orig <= blob->start || orig - blob->start >= blob->size)
		return;
	if (j->ndeopts == j->deopts_cap) {
		size_t c = j->deopts_cap ? 2 * j->deopts_cap : 16;
		void *nd;

		if (c > JAVA_MAX_STEPS || !(nd = realloc(j->deopts, c * sizeof(*j->deopts))))
			return;
		j->deopts = nd;
		j->deopts_cap = c;
	}
	j->deopts[j->ndeopts].sp = sp;
	j->deopts[j->ndeopts++].pc = orig;
}

/* Remembers a step taken (a full log is left as it is: `show` then
 * walks those frames as it can). */
static void log_step(struct snap_java *j, const struct stacksnap_regs *regs,
		     const struct stacksnap_regs *caller)
{
	if (j->nsteps == j->steps_cap) {
		size_t c = j->steps_cap ? 2 * j->steps_cap : 256;
		void *ns;

		if (c > JAVA_MAX_STEPS || !(ns = realloc(j->steps, c * sizeof(*j->steps))))
			return;
		j->steps = ns;
		j->steps_cap = c;
	}
	j->steps[j->nsteps++] = (struct stacksnap_runtime_step){
		.pc = regs->regs[STACKSNAP_REG_RIP],
		.sp = regs->regs[STACKSNAP_REG_RSP],
		.caller_pc = caller->regs[STACKSNAP_REG_RIP],
		.caller_sp = caller->regs[STACKSNAP_REG_RSP],
		.caller_fp = caller->regs[STACKSNAP_REG_RBP],
	};
}

static size_t java_steps(const void *rt, const struct stacksnap_runtime_step **steps)
{
	const struct snap_java *j = rt;

	*steps = j->steps;
	return j->nsteps;
}

/* An interpreter frame: its caller's sp is the one the frame saved
 * (frame::interpreter_frame_sender_sp), not rbp + 16: a compiled caller
 * reaches the interpreter through an adapter that pushes the arguments
 * below the caller's frame, and the caller's frame size counts from its
 * own sp (frame::sender_for_interpreter_frame's unextended sp). A saved
 * sp that is not just above the frame leaves it to the frame-pointer
 * stepper. */
static int interpreter_step(struct snap_java *j, const struct stacksnap_regs *regs,
			    struct stacksnap_mem *mem, struct stacksnap_regs *caller)
{
	uint64_t fp = regs->regs[STACKSNAP_REG_RBP], saved_fp, ret, sender_sp;

	if (!(regs->valid & 1u << STACKSNAP_REG_RBP) || !fp ||
	    fp < regs->regs[STACKSNAP_REG_RSP])
		return STACKSNAP_STEPPER_NOT_MINE;
	if (stacksnap_mem__read(mem, fp, &saved_fp, 8) ||
	    stacksnap_mem__read(mem, fp + 8, &ret, 8) ||
	    stacksnap_mem__read(mem, fp + 8 * (uint64_t)j->hc.interp_sender_sp_slot,
				&sender_sp, 8))
		return STACKSNAP_STEPPER_NOT_MINE;
	if (sender_sp < fp + 16 || sender_sp - (fp + 16) > (1u << 20))
		return STACKSNAP_STEPPER_NOT_MINE;
	/* Remembered for naming the frame: its Method* is below rbp. */
	if (j->nfps == j->fps_cap) {
		size_t c = j->fps_cap ? 2 * j->fps_cap : 64;
		void *nf = realloc(j->fps, c * sizeof(*j->fps));

		if (!nf)
			return STACKSNAP_STEPPER_NOT_MINE;
		j->fps = nf;
		j->fps_cap = c;
	}
	j->fps[j->nfps].sp = regs->regs[STACKSNAP_REG_RSP];
	j->fps[j->nfps++].fp = fp;
	j->fp_sorted = false;
	memset(caller, 0, sizeof(*caller));
	caller->regs[STACKSNAP_REG_RIP] = ret;
	caller->regs[STACKSNAP_REG_RSP] = sender_sp;
	caller->regs[STACKSNAP_REG_RBP] = saved_fp;
	caller->valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
			1u << STACKSNAP_REG_RBP;
	log_step(j, regs, caller);
	return STACKSNAP_STEPPER_CALLER;
}

/* Compiled Java code keeps no frame pointer (unless
 * -XX:+PreserveFramePointer): its frame is stepped the way HotSpot's
 * frame::sender does, by the nmethod's fixed frame size: the caller's sp
 * is sp + frame_size words, the return address and the saved rbp are the
 * two words below it. A return address: its frame is fully built (a
 * frame stopped at a call). An exact pc (a running thread's frame 0):
 * only past the nmethod's frame_complete point (not in its prologue),
 * and only when what the step finds is a return address into Java code
 * (every compiled frame's caller is: an epilogue's pc, its frame half
 * popped, would find another word). */
static int java_step(void *user, const struct stacksnap_regs *regs,
		     bool exact_pc, struct stacksnap_mem *mem,
		     struct stacksnap_regs *caller)
{
	struct snap_java *j = user;
	const uint32_t need = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP;
	struct hotspot_blob blob;
	uint64_t pc, sp, csp, ret, fp;
	bool in = false;

	if (j->step_off || (regs->valid & need) != need)
		return STACKSNAP_STEPPER_NOT_MINE;
	pc = regs->regs[STACKSNAP_REG_RIP] - !exact_pc;
	sp = regs->regs[STACKSNAP_REG_RSP];
	in = in_code_cache(j, pc);
	if (!in || hotspot_code__blob(&j->hc, pc, &blob))
		return STACKSNAP_STEPPER_NOT_MINE;
	if (blob.is_interpreter && !exact_pc)
		return interpreter_step(j, regs, mem, caller);
	if (strcmp(blob.name, "nmethod") || blob.frame_size < 2 ||
	    blob.frame_size > (1 << 16) ||
	    (exact_pc && (!blob.frame_complete || pc < blob.frame_complete)))
		return STACKSNAP_STEPPER_NOT_MINE;
	csp = sp + 8 * (uint64_t)blob.frame_size;
	if (stacksnap_mem__read(mem, csp - 8, &ret, 8) ||
	    stacksnap_mem__read(mem, csp - 16, &fp, 8))
		return exact_pc ? STACKSNAP_STEPPER_NOT_MINE : -EFAULT;
	if (exact_pc) {
		struct hotspot_blob cb;

		if (!ret || !in_code_cache(j, ret - 1) ||
		    hotspot_code__blob(&j->hc, ret - 1, &cb))
			return STACKSNAP_STEPPER_NOT_MINE;
	}
	if (!exact_pc && blob.orig_pc_offset >= 0 &&
	    blob.orig_pc_offset < 8 * blob.frame_size &&
	    (regs->regs[STACKSNAP_REG_RIP] == blob.deopt_handler ||
	     regs->regs[STACKSNAP_REG_RIP] == blob.deopt_mh_handler))
		note_deopt(j, sp, mem, &blob);
	/* What compiled Java code saves of a native caller's registers is
	   not known here: rip, rsp and rbp only. */
	memset(caller, 0, sizeof(*caller));
	caller->regs[STACKSNAP_REG_RIP] = ret;
	caller->regs[STACKSNAP_REG_RSP] = csp;
	caller->regs[STACKSNAP_REG_RBP] = fp;
	caller->valid = need | 1u << STACKSNAP_REG_RBP;
	log_step(j, regs, caller);
	return STACKSNAP_STEPPER_CALLER;
}

static int java_steppers(void *rt, struct stacksnap_unwinder *uw)
{
	struct snap_java *j = rt;
	STACKSNAP_OPTS(stacksnap_stepper_opts, o, .name = "hotspot",
		       .step = java_step, .user = j,
		       /* After CFI (JIT code has none), before the analysis
			  and frame-pointer steppers. */
		       .priority = STACKSNAP_PRIO_ANALYSIS + 30,
		       .trust = STACKSNAP_TRUST_CFI);
	int id;

	if (j->no_layout || !j->hc.blob_frame_size)
		return 0;
	id = stacksnap_unwinder__add_stepper(uw, &o);
	return id < 0 ? id : 1;
}

static void java_enable(void *rt, bool on)
{
	((struct snap_java *)rt)->step_off = !on;
}

const struct named_runtime_ops capture__java_ops = {
	.kind = STACKSNAP_RUNTIME_JAVA,
	.detect = java_detect,
	.free = java_free,
	.description = java_description,
	.has_frames = java_has_frames,
	.take = java_take,
	.steppers = java_steppers,
	.frames = java_frames,
	.forget = java_forget,
	.thread_name = java_thread_name,
	.steps = java_steps,
	.enable = java_enable,
};
