/* v8_capture.c - a V8 (node) process's part of a live capture: the
 * v8dbg_* metadata its binary exports read before the freeze; after the
 * thaw, each native frame whose slots hold a context and a JSFunction is
 * named as its JavaScript frame (a runtime frame of kind JS replacing it
 * 1:1). Nothing is read during the freeze: the frames' slots are in the
 * stack copies, and what names them (functions, scripts, bytecode, line
 * ends) is heap memory read from the live process after the thaw. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "base/maps_line.h"
#include "capture/capture_internal.h"
#include "mem/mem.h"
#include "runtime/v8/v8_frames.h"
#include "runtime/v8/v8_layout.h"

#define V8_MAX_NATIVE_RANGES 512

/* Invariant: layout passed v8_layout__check (a V8 whose metadata did not
 * has no snap_v8). frames[i] (thread i of the snapshot) is valid once
 * resolved[i]; its strings point into names[i]. native[] are the
 * executable file mappings other than V8's own image: a pc there is
 * native code, never a JavaScript frame (no slots read for it). */
struct snap_v8 {
	char path[4096];	/* the image with the metadata, as the
				   target names it */
	char description[160];
	struct stacksnap_mem *mem;	/* the live process */
	/* What names a walk's frames: the walk's stack copy (stack, when
	   given) first, then the live process: frame slots of a thread
	   that ran on since (a sample, a watch round) are the copy's. */
	struct stacksnap_mem *layered;
	struct stacksnap_mem *stack;	/* the current walk's, or NULL */
	struct v8_layout layout;
	uint64_t native[V8_MAX_NATIVE_RANGES][2];
	size_t nnative_ranges;
	size_t nthreads;
	struct stacksnap_runtime_frame **frames;
	struct v8_frame **names;
	size_t *nframes;
	size_t *nnative;	/* the native frames frames[i] came from */
	bool *resolved;
	struct v8_frame scratch[V8_MAX_INLINED + 1]; /* one native frame's */
	pid_t pid;
	const struct log_sink *log; /* the caller's, outlives v */
	bool sizes_tried;	/* the bytecode sizes looked for (at the first
				   compiled frame left without a line) */
};

/* Whether the image at path (in the target's root) carries the metadata;
 * reads it into l. */
static int try_image(pid_t pid, const char *path, const struct log_sink *log,
		     struct v8_layout *l)
{
	char full[4096 + 32];

	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, path);
	v8_layout__init(l);
	return v8_layout__read_elf(full, log, l);
}

/* Whether path may hold V8: node itself ("node", "nodejs", "node20"...)
 * or a libnode. By name: every dump looks, and opening each process's
 * executable to look for the symbols would cost every other process. */
static bool candidate(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libnode.so", 10) || !strncmp(base, "node", 4);
}

/* Finds the image with the metadata and the other executable file
 * mappings, from /proc/PID/maps. */
static int scan_maps(struct snap_v8 *v, pid_t pid, const struct log_sink *log)
{
	char maps[64], line[4200];
	struct maps_line ml;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (maps_line__parse(line, &ml) || !ml.path || ml.path[0] != '/')
			continue;
		if (!found && candidate(ml.path) &&
		    try_image(pid, ml.path, log, &v->layout) == 0) {
			snprintf(v->path, sizeof(v->path), "%s", ml.path);
			found = true;
		}
		if ((ml.prot & PROT_EXEC) && (!found || strcmp(ml.path, v->path)) &&
		    v->nnative_ranges < V8_MAX_NATIVE_RANGES) {
			v->native[v->nnative_ranges][0] = ml.start;
			v->native[v->nnative_ranges++][1] = ml.end;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static int read_layered(void *user, uint64_t addr, void *buf, size_t len)
{
	struct snap_v8 *v = user;

	if (v->stack && stacksnap_mem__read(v->stack, addr, buf, len) == 0)
		return 0;
	return stacksnap_mem__read(v->mem, addr, buf, len);
}

static void v8_free(void *rt);

static void *v8_detect(pid_t pid, const struct stacksnap_addrspace *as,
		       const struct log_sink *log)
{
	struct snap_v8 *v = calloc(1, sizeof(*v));
	const char *missing = NULL;
	int err;

	if (!v)
		return NULL;
	if (scan_maps(v, pid, log)) {
		free(v);
		return NULL;
	}
	err = v8_layout__check(&v->layout, &missing);
	if (err) {
		log_warn(log, "pid %d: V8 in %s, but its v8dbg metadata %s (%s): "
			 "JavaScript frames keep perf-map/[jit] names only",
			 (int)pid, v->path,
			 err == -ENOTSUP ? "describes pointer compression or 31-bit "
					   "Smis, which are not read" :
			 err == -ENOENT ? "lacks a constant" : "is not as expected",
			 missing ? missing : "?");
		free(v);
		return NULL;
	}
	(void)as; /* V8's image is known by name: the maps are read once */
	if (!(v->mem = stacksnap_mem__new_pid(pid)) ||
	    !(v->layered = stacksnap_mem__new_callback(read_layered, v))) {
		v8_free(v);
		return NULL;
	}
	v->pid = pid;
	v->log = log;
	snprintf(v->description, sizeof(v->description),
		 "V8, %zu v8dbg constants", v->layout.nsymbols);
	log_info(log, "pid %d: %s (%s)", (int)pid, v->description, v->path);
	return v;
}

/* The frames named so far, dropped (the arrays sized for the thread
 * count of their capture). */
static void drop_frames(struct snap_v8 *v)
{
	for (size_t i = 0; i < v->nthreads; i++) {
		if (v->frames)
			free(v->frames[i]);
		if (v->names)
			free(v->names[i]);
	}
	free(v->frames);
	free(v->names);
	free(v->nframes);
	free(v->nnative);
	free(v->resolved);
	v->frames = NULL;
	v->names = NULL;
	v->nframes = NULL;
	v->nnative = NULL;
	v->resolved = NULL;
	v->nthreads = 0;
}

static void v8_free(void *rt)
{
	struct snap_v8 *v = rt;

	if (!v)
		return;
	drop_frames(v);
	stacksnap_mem__free(v->layered);
	stacksnap_mem__free(v->mem);
	free(v);
}

/* Frames named again: the heap moves objects at every collection, so
 * the live source's cached pages go with them. */
static void v8_forget(void *rt, unsigned what)
{
	struct snap_v8 *v = rt;

	if (what & NAMED_FORGET_FRAMES) {
		drop_frames(v);
		mem_invalidate(v->mem);
	}
}

static const char *v8_description(const void *rt)
{
	return ((const struct snap_v8 *)rt)->description;
}

static bool in_native(const struct snap_v8 *v, uint64_t pc)
{
	for (size_t i = 0; i < v->nnative_ranges; i++)
		if (pc >= v->native[i][0] && pc < v->native[i][1])
			return true;
	return false;
}

/* Whether a compiled frame (not interpreted) has no line: a baseline
 * frame's needs the bytecode sizes. */
static bool lineless_compiled(const struct v8_frame *names, size_t n)
{
	for (size_t m = 0; m < n; m++)
		if (!names[m].line && !names[m].interpreted)
			return true;
	return false;
}

/* The bytecode sizes from V8's image, once: its symbol table is read only
 * for processes with such a frame. */
static int read_sizes(struct snap_v8 *v)
{
	char full[4096 + 32];
	int err;

	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)v->pid, v->path);
	err = v8_layout__read_bytecode_sizes(full, v->log, &v->layout);
	if (err)
		log_info(v->log, "pid %d: no Bytecodes::kBytecodeSizes in %s (%s): "
			 "baseline JavaScript frames keep no line", (int)v->pid,
			 v->path, strerror(-err));
	return err;
}

/* Thread i's JavaScript frames, named once per walk: per native frame
 * (in V8's image or in anonymous code) whose frame pointer's slots name a
 * function, the functions an optimized frame inlined at its pc
 * (innermost first) and the frame's own. The frame pointer of native frame k is its caller's
 * sp - 16 (V8 frames keep rbp; saved rbp and return address sit just
 * below the caller's sp). */
static int resolve(struct snap_v8 *v, size_t nthreads, size_t i,
		   const struct stacksnap_frame *native, size_t nnative)
{
	struct stacksnap_runtime_frame *rf;
	struct v8_frame *names = NULL;
	uint32_t *native_of = NULL;
	size_t n = 0, cap = 0;

	if (!v->frames) {
		v->frames = calloc(nthreads, sizeof(*v->frames));
		v->names = calloc(nthreads, sizeof(*v->names));
		v->nframes = calloc(nthreads, sizeof(*v->nframes));
		v->nnative = calloc(nthreads, sizeof(*v->nnative));
		v->resolved = calloc(nthreads, sizeof(*v->resolved));
		if (!v->frames || !v->names || !v->nframes || !v->nnative ||
		    !v->resolved)
			return -ENOMEM;
		v->nthreads = nthreads;
	}
	if (i >= v->nthreads)
		return -EINVAL;
	if (v->resolved[i] && v->nnative[i] == nnative)
		return 0;
	free(v->frames[i]);
	free(v->names[i]);
	v->frames[i] = NULL;
	v->names[i] = NULL;
	v->resolved[i] = false;
again:
	for (size_t k = 0; k + 1 < nnative; k++) {
		uint64_t fp;
		int got;

		if (in_native(v, native[k].pc) || native[k + 1].sp < 16)
			continue;
		fp = native[k].cfa ? native[k].cfa - 16 : native[k + 1].sp - 16;
		/* A return address is past its call: look up the call. */
		got = v8_frame__name(&v->layout, v->layered, fp,
				     k == 0 || (native[k].flags & STACKSNAP_FRAME_SIGNAL) ?
				     native[k].pc : native[k].pc - 1,
				     v->scratch, V8_MAX_INLINED + 1);
		if (got <= 0)
			continue;
		if (n + (size_t)got > cap) {
			size_t c = cap ? 2 * cap : 32;
			struct v8_frame *nn;
			uint32_t *no;

			while (c < n + (size_t)got)
				c *= 2;
			if (!(nn = realloc(names, c * sizeof(*names))))
				goto nomem;
			names = nn;
			if (!(no = realloc(native_of, c * sizeof(*native_of))))
				goto nomem;
			native_of = no;
			cap = c;
		}
		for (int m = 0; m < got; m++) {
			names[n] = v->scratch[m];
			native_of[n++] = (uint32_t)k;
		}
	}
	if (!v->sizes_tried && lineless_compiled(names, n)) {
		v->sizes_tried = true;
		if (read_sizes(v) == 0) {
			n = 0;
			goto again;	/* a baseline frame's line, perhaps */
		}
	}
	rf = calloc(n ? n : 1, sizeof(*rf));
	if (!rf)
		goto nomem;
	for (size_t m = 0; m < n; m++)
		rf[m] = (struct stacksnap_runtime_frame){
			.sz = sizeof(rf[m]),
			.runtime = STACKSNAP_RUNTIME_JS,
			.native_index = native_of[m],
			.flags = names[m].inlined ? STACKSNAP_RFRAME_INLINED : 0,
			.function = names[m].function,
			.file = names[m].file[0] ? names[m].file : NULL,
			.line = names[m].line,
			.pc = names[m].interpreted ? 0 : native[native_of[m]].pc,
		};
	free(native_of);
	v->frames[i] = rf;
	v->names[i] = names;
	v->nframes[i] = n;
	v->nnative[i] = nnative;
	v->resolved[i] = true;
	return 0;
nomem:
	free(names);
	free(native_of);
	return -ENOMEM;
}

static int v8_frames(void *rt, size_t nthreads, size_t i,
		     struct stacksnap_mem *stack,
		     const struct stacksnap_frame *native, size_t nnative,
		     struct stacksnap_runtime_frame *out, size_t max)
{
	struct snap_v8 *v = rt;
	int err;

	v->stack = stack;
	err = resolve(v, nthreads, i, native, nnative);
	v->stack = NULL;

	if (err)
		return err;
	for (size_t k = 0; k < v->nframes[i] && k < max; k++)
		out[k] = v->frames[i][k];
	return (int)v->nframes[i];
}

/* V8's frames keep rbp: no stepper, no steps, and no thread names (a
 * worker's name is not in the heap as a thread's). */
const struct named_runtime_ops capture__v8_ops = {
	.kind = STACKSNAP_RUNTIME_JS,
	.detect = v8_detect,
	.free = v8_free,
	.description = v8_description,
	.frames = v8_frames,
	.forget = v8_forget,
};
