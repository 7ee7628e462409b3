/* ctf_writer.h - a small writer of CTF 1.8 traces (a TSDL metadata file
 * and one binary stream file per CPU) for trace events with their user
 * call stacks, readable by babeltrace2 and Trace Compass; docs/ctf.md
 * describes the layout. */
#ifndef SS_CTF_CTF_WRITER_H
#define SS_CTF_CTF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

struct ctf_writer;

struct ctf_writer_opts {
	/* Added to every CLOCK_MONOTONIC timestamp gives nanoseconds since the
	 * epoch (CLOCK_REALTIME - CLOCK_MONOTONIC, as LTTng measures it): the
	 * clock's offset in the metadata, so the trace lines up with other
	 * tools' traces (base/clock_offset.h measures it). */
	int64_t clock_offset_ns;
	/* The offset is real: the clock's origin is the Unix epoch (TSDL
	 * "absolute"), as babeltrace2 takes LTTng's clocks to be; it then
	 * merges this trace with LTTng's. */
	bool clock_absolute;
	/* The clock's uuid: the capturing host's boot id
	 * (/proc/sys/kernel/random/boot_id), as LTTng sets it, so babeltrace2
	 * can merge this trace with LTTng's of the same boot. NULL or not a
	 * uuid: the trace's own uuid. */
	const char *clock_uuid;
	const char *hostname;	/* env.hostname; NULL: not written */
	const char *kernel_release; /* env.kernel_release; NULL: not written */
	size_t packet_bytes;	/* event bytes per packet; 0: 64 KiB */
};

/* One symbolized frame: "function+0xoffset" (or "[unknown]", "<signal
 * handler called>") and the module's path ("" when none). */
struct ctf_frame {
	const char *symbol;
	const char *module;
};

/* One event. Fields of a given event name should keep their names and
 * kinds from event to event; when they change, the event gets a second
 * event class of the same name. */
struct ctf_event {
	const char *name;	/* "syscalls:sys_enter_write" */
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	unsigned cpu;		/* the stream it goes to */
	int32_t pid, tid;
	const char *comm;
	const struct stacksnap_trace_field *fields;
	size_t nfields;
	const uint64_t *ips;	/* the raw user call stack, innermost first */
	size_t nips;
	const struct ctf_frame *frames; /* symbolized, innermost first */
	size_t nframes;
	bool complete;		/* the walk reached the bottom of the stack */
	const char *end;	/* why it ended (stacksnap_end__str) */
};

/* Creates dir (its parents must exist; an existing empty or CTF
 * directory is reused, its files replaced) and starts a trace there.
 * NULL and errno set. */
struct ctf_writer *ctf_writer__open(const char *dir, const struct ctf_writer_opts *o);
/* Appends ev to its CPU's stream. A timestamp earlier than the last of
 * that stream is raised to it (a stream's events must be in time order).
 * Returns 0 or -errno (the first write error sticks). */
int ctf_writer__add(struct ctf_writer *w, const struct ctf_event *ev);
/* Says that total events were lost on cpu since the trace began (a
 * running count): when it grew, cpu's open packet closes here with it as
 * its events_discarded (an empty packet when it has no events). Returns
 * 0 or -errno. */
int ctf_writer__discarded(struct ctf_writer *w, unsigned cpu, uint64_t total);
/* Writes the metadata and each stream's open packet as it is (in place:
 * packets do not close here): what was added so far reads as a complete
 * trace. Returns 0 or -errno. */
int ctf_writer__flush(struct ctf_writer *w);
/* Flushes, closes and frees w (NULL allowed). Returns 0 or the first
 * error of the trace. */
int ctf_writer__close(struct ctf_writer *w);

#endif
