/* events_file.h - the record layout of trace events in the snapshot
 * container (stacksnap trace --save): the flags and limits the streaming
 * writer (src/save/events_writer.c) and the reader
 * (src/saved/events_reader.c) share; the layout is in
 * docs/snapshot-format.md ("Events files"). */
#ifndef SS_SNAPFILE_EVENTS_FILE_H
#define SS_SNAPFILE_EVENTS_FILE_H

/* Event record flags. */
#define EVENTS_HAS_STACK 0x1	/* a compact stack copy is stored */
#define EVENTS_POISON 0x2	/* words not stored read as the kernel's
				   poison (compacted in the kernel), not 0 */
#define EVENTS_HAS_FRAMES 0x4	/* the printed frames are stored (no copy) */
#define EVENTS_HAS_RFRAMES 0x8	/* named runtime (Python) frames follow the
				   fields */
#define EVENTS_HAS_MORE 0x10	/* the thread's other stacks follow (those
				   of flag 8 or the fields) */
#define EVENTS_HAS_RSTEPS 0x20	/* a runtime stepper's steps follow (those
				   of flag 16, 8 or the fields) */

/* Field flags. */
#define EVENTS_FIELD_SIGNED 0x1
#define EVENTS_FIELD_POINTER 0x2
#define EVENTS_FIELD_STRING 0x4

#define EVENTS_MAX_FIELDS 64
#define EVENTS_MAX_KFRAMES 4096
#define EVENTS_MAX_RFRAMES 1024
#define EVENTS_MAX_RSTEPS 4096	/* steps of one event (a walk's frames) */
#define EVENTS_NO_FILE 0xffff	/* a runtime frame's file length: none */
/* In a runtime frame's u8 runtime: the runtime's own code (a JVM's stub,
 * STACKSNAP_RFRAME_VM); the runtime is the other bits. */
#define EVENTS_RFRAME_VM 0x40
/* ... and inlined into the frame after it (STACKSNAP_RFRAME_INLINED). */
#define EVENTS_RFRAME_INLINED 0x80

#endif
