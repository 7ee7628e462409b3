/* snapshot_file.h - constants of the stacksnap snapshot file container
 * (docs/snapshot-format.md): header, section kinds, limits. Shared by the
 * writer, the reader, the tests that build hostile files by hand, and
 * future writers of other section kinds (trace events). */
#ifndef SS_FORMAT_SNAPSHOT_FILE_H
#define SS_FORMAT_SNAPSHOT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "format/compact_stack.h"

#define SNAPFILE_MAGIC "STKSNAP\0"	/* 8 bytes */
#define SNAPFILE_MAJOR 1		/* readers refuse a newer major */
#define SNAPFILE_MINOR 0		/* newer minors add sections/fields */
#define SNAPFILE_HEADER_SIZE 32
#define SNAPFILE_SECTION_HEADER_SIZE 16

/* Header field offsets. */
#define SNAPFILE_OFF_MAJOR 8
#define SNAPFILE_OFF_MINOR 10
#define SNAPFILE_OFF_HEADER_SIZE 12
#define SNAPFILE_OFF_FILE_LEN 16
#define SNAPFILE_OFF_CRC 24
#define SNAPFILE_OFF_NSECTIONS 28

/* Section kinds. A reader skips kinds it does not know unless the
 * section's REQUIRED flag is set. */
enum snapfile_section {
	SNAPFILE_SEC_PROCESS = 1,  /* pid, time, command line, kernel, version */
	SNAPFILE_SEC_MAPPINGS = 2, /* executable mappings, build-ids */
	SNAPFILE_SEC_IMAGE = 3,	   /* an image held in the file (the vDSO) */
	SNAPFILE_SEC_THREADS = 4,  /* registers + compact stacks */
	SNAPFILE_SEC_EVENT = 5,	   /* one trace event (stacksnap trace --save) */
	SNAPFILE_SEC_ADDRSPACE = 6, /* a generation of a traced process's mappings */
	SNAPFILE_SEC_EVENT_KIND = 7, /* an event's index and name */
};
#define SNAPFILE_SEC_REQUIRED 0x1 /* section flag: refuse if unknown */
#define SNAPFILE_SEC_CRC 0x2	  /* section flag: the payload's last 4 bytes
				     are the CRC-32 of the rest of it */
/* Minor version of files with trace events (streamed, sections checked
 * one by one). */
#define SNAPFILE_MINOR_EVENTS 1
/* Largest stack of one event a reader accepts. */
#define SNAPFILE_MAX_EVENT_STACK (1u << 20)

/* Mapping record kinds. */
enum snapfile_map_kind {
	SNAPFILE_MAP_FILE = 0,	/* a file, found by path or build-id */
	SNAPFILE_MAP_IMAGE = 1, /* its image is in an IMAGE section */
	SNAPFILE_MAP_ANON = 2,	/* code without a file (JIT) */
};

/* Hard limits on what a file may make the reader allocate. */
#define SNAPFILE_MAX_STACK (64u << 20)	      /* per thread */
#define SNAPFILE_MAX_STACKS (256u << 20)      /* all threads together */

/* A file being written: sections appended to one buffer, then the header
 * is completed (length, CRC) and the buffer written at once.
 * Invariant: open_section is 0 or the offset of the header of the
 * section being appended to. */
struct snapfile_writer {
	struct byte_buf buf;
	uint32_t nsections;
	size_t open_section;
};

void snapfile_writer__init(struct snapfile_writer *w);
/* Starts a section; its payload is what is appended to w->buf until
 * snapfile_writer__end_section. */
void snapfile_writer__begin_section(struct snapfile_writer *w, uint32_t kind,
				    uint16_t version, uint16_t flags);
void snapfile_writer__end_section(struct snapfile_writer *w);
/* The same for a section flagged SNAPFILE_SEC_CRC: appends the CRC-32 of
 * its payload first. */
void snapfile_writer__end_section_crc(struct snapfile_writer *w);
/* Completes the header and writes the file atomically (temporary name,
 * rename). Returns 0 or -errno (logged, naming path). Frees the buffer. */
int snapfile_writer__finish(struct snapfile_writer *w, const char *path,
			    const struct log_sink *log);

/* Appends the compact stream of thread th's stack under encoding enc
 * (not DEFAULT) to out. EXACT unwinds th with uw into frames[0..max)
 * (both unused otherwise, may be NULL). Returns 0 or -ENOMEM. Registers
 * are not part of it. */
int snapfile__encode_stack(struct stacksnap_addrspace *as,
			   const struct stacksnap_thread *th,
			   enum stacksnap_stack_encoding enc,
			   struct stacksnap_unwinder *uw,
			   struct stacksnap_frame *frames, size_t max_frames,
			   struct byte_buf *out);

/* Shared with the events writer and reader (events_file.c). */
struct as_map;
struct stacksnap_saved;
/* The u32 count and the records of a MAPPINGS payload; returns how many
 * are images (the vDSO) that need an IMAGE section. */
unsigned snapfile__put_mapping_records(struct byte_buf *b, struct stacksnap_addrspace *as);
/* An IMAGE section for mapping m (its module's bytes); flags may ask
 * for SNAPFILE_SEC_CRC. */
void snapfile__put_image(struct snapfile_writer *w, const struct as_map *m,
			 uint16_t flags);
/* th's registers as a compact encoding keeps them: rip, rsp, and the
 * others only when they point into code or th's stack. */
void snapfile__filter_regs(struct stacksnap_addrspace *as, const struct stacksnap_thread *th,
			   struct stacksnap_regs *r);
/* /proc/PID/cmdline with its NULs as spaces ("" when unreadable). */
void snapfile__read_cmdline(pid_t pid, char *buf, size_t size);
/* Reads a MAPPINGS payload into s->as. */
int snapfile__read_mappings(struct stacksnap_saved *s, struct cursor *c, size_t base,
			    const uint8_t *sections, size_t sections_len);

#endif
