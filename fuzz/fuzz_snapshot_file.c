/* fuzz_snapshot_file.c - libFuzzer target for the snapshot file reader:
 * open the bytes as they are (header checks), then again with the length
 * and checksum fields made right (the sections' own checksums too, so
 * mutations reach events files' records), and unwind every thread and
 * every event read, as `stacksnap show` does (with the Python frames of a
 * RUNTIME section merged in, a JAVA section's frames merged and its steps
 * replayed, an event's own Python frames read, and the waits and
 * deadlocks a WAITS section kept read through). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_image.h"
#include "snapfile/snapshot_file.h"
#include "stacksnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fresh context per input, no cache carried over; a sysroot and debug
 * directories that do not exist keep module lookups off the filesystem
 * (the engine's ELF and CFI readers have their own fuzz targets). */
static struct stacksnap_ctx *fuzz_ctx(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .debug_dirs = "/nonexistent",
		       .sysroot = "/nonexistent");

	return stacksnap_ctx__new(&co);
}

static void open_and_unwind(struct stacksnap_ctx *ctx, const uint8_t *data,
			    size_t size, struct stacksnap_unwinder *uw)
{
	struct stacksnap_saved *s = stacksnap_saved__open_mem(ctx, data, size, NULL);
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(NULL, 0, 0);
	struct stacksnap_frame frames[64];
	enum stacksnap_end end;
	struct stacksnap_unwinder *juw = NULL;

	/* A JAVA section's steps: replayed by a stepper of an unwinder of
	   this file's own (it points into s). */
	if (s) {
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 64);
		juw = stacksnap_unwinder__new(&uo);
		if (juw && stacksnap_saved__runtime_steppers(s, juw) > 0)
			uw = juw;
	}

	for (size_t i = 0; s && mem && i < stacksnap_saved__thread_count(s); i++) {
		const struct stacksnap_thread *th = stacksnap_saved__thread(s, i);

		struct stacksnap_runtime_frame rf[64];
		const char *rend;
		int nf;

		stacksnap_mem__set_copy(mem, th->stack, th->stack_len, th->stack_base);
		nf = stacksnap_unwind(uw, stacksnap_saved__addrspace(s), &th->regs, mem,
				      frames, 64, &end);
		/* The RUNTIME section's frames merged into them, as show does. */
		nf = stacksnap_saved__runtime_frames(s, i, frames, nf > 0 ? (size_t)nf : 0,
						     rf, 64, &rend);
		/* Every string read through (a JAVA section's frames). */
		for (int k = 0; k < nf && k < 64; k++)
			if (strlen(rf[k].function) + (rf[k].file ? strlen(rf[k].file) : 0)
			    == SIZE_MAX)
				abort();
	}
	for (size_t i = 0; s && mem && i < stacksnap_saved__event_count(s); i++) {
		STACKSNAP_OPTS(stacksnap_saved_event, ev);

		size_t sum = 0;

		if (stacksnap_saved__event(s, i, &ev))
			continue;
		/* An event's Python frames: every string read through. */
		for (size_t k = 0; k < ev.nrframes; k++)
			sum += strlen(ev.rframes[k].function) +
			       (ev.rframes[k].file ? strlen(ev.rframes[k].file) : 0);
		if (sum == (size_t)-1)
			abort();
		if (!ev.stack || !ev.as)
			continue;
		stacksnap_mem__set_copy(mem, ev.stack, ev.stack_len, ev.stack_base);
		stacksnap_mem__set_more(mem, ev.more_stacks, ev.nmore_stacks);
		stacksnap_unwind(uw, ev.as, &ev.regs, mem, frames, 64, &end);
	}
	/* A Go program's goroutines: every string and frame read through. */
	for (size_t i = 0; s && i < stacksnap_saved__goroutine_count(s); i++) {
		const struct stacksnap_goroutine *g = stacksnap_saved__goroutine(s, i);
		size_t sum = strlen(g->status);

		for (size_t k = 0; k < g->nframes; k++)
			sum += strlen(g->frames[k].function) +
			       (g->frames[k].file ? strlen(g->frames[k].file) : 0);
		if (sum == SIZE_MAX)
			abort();
	}
	/* The WAITS section: every thread's wait and the deadlocks, each
	   string, owner and member read through. */
	const struct stacksnap_wait_owner *members;
	const size_t *start;
	size_t ncycles, sum = 0;

	for (size_t i = 0; s && i < stacksnap_saved__thread_count(s); i++) {
		const struct stacksnap_wait *w =
			stacksnap_saved__wait(s, stacksnap_saved__thread(s, i)->tid);

		if (!w)
			continue;
		sum += (w->object_name ? strlen(w->object_name) : 0) +
		       (w->file ? strlen(w->file) : 0) + (w->detail ? strlen(w->detail) : 0) +
		       (w->no_owner ? strlen(w->no_owner) : 0);
		for (size_t k = 0; k < w->nowners; k++)
			sum += (size_t)w->owners[k].pid + (size_t)w->owners[k].tid;
		for (size_t k = 0; k < w->nkernel_frames; k++)
			sum += strlen(w->kernel_frames[k]);
	}
	if (s && !stacksnap_saved__deadlocks(s, &members, &start, &ncycles))
		for (size_t i = 0; i < ncycles; i++)
			for (size_t k = start[i]; k < start[i + 1]; k++)
				sum += (size_t)members[k].tid;
	if (sum == SIZE_MAX)
		abort();
	stacksnap_mem__free(mem);
	stacksnap_unwinder__free(juw);
	stacksnap_saved__free(s);
}

/* Makes every checksummed section's CRC right, as far as the section
 * headers make sense. */
static void fix_section_crcs(uint8_t *b, size_t size)
{
	size_t at = SNAPFILE_HEADER_SIZE;

	while (size - at >= SNAPFILE_SECTION_HEADER_SIZE) {
		uint16_t flags;
		uint64_t plen;
		uint32_t crc;

		memcpy(&flags, b + at + 6, 2);
		memcpy(&plen, b + at + 8, 8);
		at += SNAPFILE_SECTION_HEADER_SIZE;
		if (plen > size - at)
			return;
		if ((flags & SNAPFILE_SEC_CRC) && plen >= 4) {
			crc = elf_crc32(0, b + at, plen - 4);
			memcpy(b + at + plen - 4, &crc, 4);
		}
		at += plen;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stacksnap_unwinder *uw;
	struct stacksnap_ctx *ctx;
	uint8_t *fixed;

	if (!uw) {
		STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = 64);
		uw = stacksnap_unwinder__new(&uo);
	}
	ctx = fuzz_ctx();
	if (!ctx)
		return 0;
	open_and_unwind(ctx, data, size, uw);
	if (size >= SNAPFILE_HEADER_SIZE && (fixed = malloc(size))) {
		uint32_t crc;
		uint64_t len = size;

		memcpy(fixed, data, size);
		fix_section_crcs(fixed, size);
		memcpy(fixed + SNAPFILE_OFF_FILE_LEN, &len, 8);
		crc = elf_crc32(0, fixed + SNAPFILE_HEADER_SIZE, size - SNAPFILE_HEADER_SIZE);
		memcpy(fixed + SNAPFILE_OFF_CRC, &crc, 4);
		open_and_unwind(ctx, fixed, size, uw);
		free(fixed);
	}
	stacksnap_ctx__free(ctx);
	return 0;
}
