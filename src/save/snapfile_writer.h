/* snapfile_writer.h - the container writer of snapshot and events files
 * (sections appended to one buffer, the header completed last) and the
 * records both writers put: mappings, the vDSO's image, a compact stack. */
#ifndef SS_SAVE_SNAPFILE_WRITER_H
#define SS_SAVE_SNAPFILE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "snapfile/compact_stack.h"
#include "snapfile/snapshot_file.h"

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

struct as_map;
/* The u32 count and the records of a MAPPINGS payload; returns how many
 * are images (the vDSO) that need an IMAGE section. */
unsigned snapfile__put_mapping_records(struct byte_buf *b, struct stacksnap_addrspace *as);
/* An IMAGE section for mapping m (its module's bytes); flags may ask
 * for SNAPFILE_SEC_CRC. */
void snapfile__put_image(struct snapfile_writer *w, const struct as_map *m,
			 uint16_t flags);
/* Appends the compact stream of thread th's stack copy to out: the words
 * keep marks, each as a delta, or every word as is when keep is NULL
 * (the full encoding). The choice of keep is not the writer's
 * (stack_words.h). Registers are not part of it. */
void snapfile__put_stack(struct byte_buf *out, const struct stacksnap_thread *th,
			 const uint64_t *keep);
/* /proc/PID/cmdline with its NULs as spaces ("" when unreadable). */
void snapfile__read_cmdline(pid_t pid, char *buf, size_t size);

#endif
