/* saved.h - a capture read back from a file (a stacksnap snapshot file, an
 * events file or an ELF core dump): its threads, the address space rebuilt
 * from the recorded mappings, and the memory beyond each thread's stack
 * copy. Sibling readers fill it (snapshot_reader.c, events_reader.c,
 * core_reader.c; readers.h), each behind its saved_ops. */
#ifndef SS_SAVED_SAVED_H
#define SS_SAVED_SAVED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stacksnap.h"

/* What a saved capture was read from: the reader's name for its source
 * and how the reader's state of it is freed (free NULL: none kept). */
struct saved_ops {
	const char *name;
	void (*free)(void *source);
};

/* Invariant: as is never NULL once a reader returned it; every
 * threads[i].stack points into stacks (a snapshot file's decoded copies)
 * or into image (a core's PT_LOAD bytes), or is NULL. */
struct stacksnap_saved {
	struct stacksnap_ctx *ctx;
	struct stacksnap_saved_info info; /* strings below */
	char *cmdline, *kernel, *version, *path;
	char *boot_id, *hostname;	/* events files; NULL: not recorded */
	struct stacksnap_thread *threads;
	size_t n;
	uint8_t *stacks;	/* decoded stack copies, one buffer */
	struct stacksnap_addrspace *as;
	struct stacksnap_mem *mem; /* memory beyond the copies (cores); may be NULL */
	const uint8_t *image;	/* the file's bytes */
	size_t image_len;
	bool image_mmapped;	/* image is an mmap, else malloc'ed or borrowed */
	bool image_owned;
	/* The reader that filled s (NULL before one did) and its state
	 * (a core's segments, an events file's events and address spaces
	 * by generation), freed through ops->free, never by name. */
	const struct saved_ops *ops;
	void *source;
	/* Events files (stacksnap trace --save): how the trace unwound, and
	 * where a file its writer did not finish was cut (0: whole). */
	unsigned trace_max_frames, trace_unwind;
	size_t cut_at;
	/* A snapshot file's goroutines: frames point into gframes, strings
	 * into gstrings (snapshot_reader.c). */
	struct stacksnap_goroutine *goroutines;
	size_t ngoroutines;
	struct stacksnap_runtime_frame *gframes;
	char *gstrings;
	/* Their labels (key, value, ...): goroutines[i].labels points in. */
	const char **glabels;
	/* A snapshot file's language-runtime frames (runtime_reader.c), or
	 * NULL. */
	struct saved_runtime *runtime;
	/* A snapshot file's frames of a runtime named at capture (a
	 * JVM's, V8's: named_reader.c), or NULL. */
	struct saved_named *named;
	/* A snapshot file's WAITS section (waits_reader.c), or NULL. */
	struct saved_waits *waits;
};

/* Logs an error of a reader of s's file, naming the file and the byte
 * offset in it: "FILE: offset 1234: thread 3: corrupt stack encoding". */
#define SAVED_BAD(s, off, ...)                                                 \
	do {                                                                   \
		char msg_[4400];                                               \
		snprintf(msg_, sizeof(msg_), __VA_ARGS__);                     \
		log_err(&(s)->ctx->log, "%s: offset %zu: %s", (s)->path,       \
			(size_t)(off), msg_);                                  \
	} while (0)

struct stacksnap_saved *saved__new(struct stacksnap_ctx *ctx, const char *path);

/* Maps the whole file at path into s->image (read-only). Errors name the
 * file. */
int saved__map_file(struct stacksnap_saved *s, const char *path);

/* Adds a recorded executable mapping to s->as: the file is looked for at
 * its path when its build-id matches (or none was recorded), else by
 * build-id in the context's debug directories (DIR/.build-id/xx/yyyy),
 * which include the cache, else through debuginfod when the context
 * allows it. What cannot be found is named, with its build-id, and its
 * mapping kept as code without a module (its frames stay addresses).
 * prot_from_file: the recording did not say whether the mapping is code
 * (gcore leaves read-only file mappings out); it is added only when the
 * file's PT_LOAD at its offset is executable. Returns 0 or -ENOMEM. */
int saved__add_mapping(struct stacksnap_saved *s,
		       const struct stacksnap_mapping *mp, bool prot_from_file);

/* Adds an image held in memory (the vDSO) for a mapping. */
int saved__add_image(struct stacksnap_saved *s,
		     const struct stacksnap_mapping *mp, const uint8_t *bytes,
		     size_t len, const char *name);

#endif
