/* readers.h - the sibling readers of a saved capture (saved.h): their
 * ops tables, and what one reader hands another (the snapshot reader
 * meets an events file's sections; the events reader reads mappings as
 * the snapshot reader does). */
#ifndef SS_SAVED_READERS_H
#define SS_SAVED_READERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"
#include "saved/saved.h"

extern const struct saved_ops snapshot_reader_ops; /* snapshot_reader.c */
extern const struct saved_ops events_reader_ops;   /* events_reader.c */
extern const struct saved_ops core_reader_ops;	    /* core_reader.c */

/* Reads a MAPPINGS payload (in c, at file offset base) into s->as;
 * sections are the file's, for the IMAGE sections it names. */
int snapshot_reader__read_mappings(struct stacksnap_saved *s, struct cursor *c,
				   size_t base, const uint8_t *sections,
				   size_t sections_len);

/* Reads one EVENT, ADDRSPACE or EVENT_KIND section (payload in c, at
 * file offset base) into s, checking every field. Returns 0, -EINVAL
 * (logged with the offset) or -ENOMEM. */
int events_reader__read_section(struct stacksnap_saved *s, uint32_t kind,
				struct cursor *c, size_t base,
				const uint8_t *sections, size_t sections_len);
/* Registers with uw a stepper replaying the runtime steps of the event
 * last decoded (stacksnap_saved__event): an events file's JVM frames
 * walked as the trace walked them. Returns 1, 0 (no event has steps: an
 * older file, no JVM) or -errno. */
int events_reader__steppers(const struct stacksnap_saved *s,
			    struct stacksnap_unwinder *uw);

/* A Go program's goroutines from its core dump (core_go.c): the list and
 * every goroutine's stack read from the dumped memory, the program found
 * as the mapping holding entry. Nothing for other programs; failures are
 * logged and leave s without goroutines. */
void core_go__read(struct stacksnap_saved *s, uint64_t entry);
/* runtime_reader.c: the RUNTIME section of version ver (payload in c, at
 * file offset base) into s->runtime. Returns 0, -EINVAL (logged) or -ENOMEM. */
int runtime_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
				 size_t base,
				 uint16_t ver);
void runtime_reader__free(struct saved_runtime *rt);
/* waits_reader.c: the WAITS section (payload in c, at file offset base)
 * into s->waits. Returns 0, -EINVAL (logged) or -ENOMEM. */
int waits_reader__read_section(struct stacksnap_saved *s, struct cursor *c,
			       size_t base);
void waits_reader__free(struct saved_waits *sw);
/* A core's Python frames, read from its memory (s->mem) when the image at
 * path (mapped at start from offset) holds an interpreter. Returns 0 or
 * -ENOMEM. */
int runtime_reader__from_core(struct stacksnap_saved *s, const char *path,
			      uint64_t start, uint64_t offset);
/* A core's PHP frames, read from its memory when the image at path
 * (mapped at start from offset) is a PHP engine's: thread tid's (a non-ZTS
 * engine runs one script, on the main thread). Returns 0 or -ENOMEM. */
int runtime_reader__php_from_core(struct stacksnap_saved *s, const char *path,
				  uint64_t start, uint64_t offset, pid_t tid);
/* The same for a Ruby VM, path libruby's image: the VM's thread list
 * gives each thread's thread pointer, its control frames are read and
 * named from the core's memory. */
int runtime_reader__rb_from_core(struct stacksnap_saved *s, const char *path,
				 uint64_t start, uint64_t offset);

/* A core dump in memory (borrowed, must outlive the result): the fuzz
 * target's entry to the core reader. */
struct stacksnap_saved *core_reader__open_mem(struct stacksnap_ctx *ctx,
					      const void *bytes, size_t len);

/* A string field (u32 length, bytes) as a malloc'ed C string, NULs in it
 * replaced by nul_as; NULL when cut (c->bad set) or out of memory
 * (*nomem set). */
char *readers__take_str(struct cursor *c, char nul_as, bool *nomem);
/* An optional string (written empty when absent): NULL for "", else as
 * readers__take_str with NULs as '?'. */
char *readers__take_opt_str(struct cursor *c, bool *nomem);
/* A string field copied NUL-terminated into arena at *at (which has room:
 * a section's arena is sized from its bytes), NULs in it as spaces; NULL
 * when empty or cut (c->bad set). */
const char *readers__arena_str(struct cursor *c, char *arena, size_t *at);
/* n runtime steps (each five u64s: pc, sp, caller_pc, caller_sp,
 * caller_fp) into steps, as both the NAMED section and an event keep them
 * for runtime_steps__replay. False when cut, or not sorted by
 * runtime_step__cmp and unique. */
bool readers__take_steps(struct cursor *c, struct stacksnap_runtime_step *steps, size_t n);

#endif
