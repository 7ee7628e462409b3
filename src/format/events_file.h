/* events_file.h - trace events in the snapshot container (stacksnap trace
 * --save): the streaming writer's and the reader's shared part; the
 * layout is in docs/snapshot-format.md ("Events files"). */
#ifndef SS_FORMAT_EVENTS_FILE_H
#define SS_FORMAT_EVENTS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"

struct stacksnap_saved;
struct saved_events;

/* Event record flags. */
#define EVENTS_HAS_STACK 0x1	/* a compact stack copy is stored */
#define EVENTS_POISON 0x2	/* words not stored read as the kernel's
				   poison (compacted in the kernel), not 0 */
#define EVENTS_HAS_FRAMES 0x4	/* the printed frames are stored (no copy) */

/* Field flags. */
#define EVENTS_FIELD_SIGNED 0x1
#define EVENTS_FIELD_POINTER 0x2
#define EVENTS_FIELD_STRING 0x4

#define EVENTS_MAX_FIELDS 64
#define EVENTS_MAX_KFRAMES 4096

/* Reads one EVENT, ADDRSPACE or EVENT_KIND section (payload in c, at
 * file offset base) into s, checking every field. Returns 0, -EINVAL
 * (logged with the offset) or -ENOMEM. */
int events__read_section(struct stacksnap_saved *s, uint32_t kind, struct cursor *c,
			 size_t base, const uint8_t *sections, size_t sections_len);
void events__free(struct saved_events *e);

#endif
