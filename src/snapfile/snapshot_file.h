/* snapshot_file.h - the record layout of the stacksnap snapshot file
 * container (docs/snapshot-format.md): magic, versions, header offsets,
 * section kinds, mapping record kinds, limits. Shared by the writers
 * (src/save/), the readers (src/saved/) and the tests that build hostile
 * files by hand. */
#ifndef SS_SNAPFILE_SNAPSHOT_FILE_H
#define SS_SNAPFILE_SNAPSHOT_FILE_H

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
	SNAPFILE_SEC_LOST = 8,	   /* events lost on a CPU so far (ring buffer
				      full): u32 cpu, u64 running count */
	SNAPFILE_SEC_RUNTIME = 9,  /* language-runtime frames, named */
	SNAPFILE_SEC_GOROUTINES = 10, /* a Go program's goroutines (optional) */
	SNAPFILE_SEC_JIT_SYMBOLS = 11, /* names of JIT code on the stacks */
	SNAPFILE_SEC_JAVA = 12,	   /* older files' NAMED: Java frames only,
				      no runtime kind (read, not written) */
	SNAPFILE_SEC_NAMED = 13,   /* a runtime's frames named at capture (a
				      JVM's, V8's), its kind, and the steps
				      that walked its frames */
	SNAPFILE_SEC_WAITS = 14,   /* what each thread waited for, and the
				      deadlocks (a dump's --save; optional) */
};
#define SNAPFILE_SEC_REQUIRED 0x1 /* section flag: refuse if unknown */
#define SNAPFILE_SEC_CRC 0x2	  /* section flag: the payload's last 4 bytes
				     are the CRC-32 of the rest of it */
/* Minor version of files with trace events (streamed, sections checked
 * one by one). */
#define SNAPFILE_MINOR_EVENTS 1
/* Largest stack of one event a reader accepts. */
#define SNAPFILE_MAX_EVENT_STACK (1u << 20)

/* RUNTIME section: runtime kinds (enum stacksnap_runtime), frame flags,
 * and limits a reader holds a file to. */
#define SNAPFILE_RFRAME_ENTRY 0x1 /* outermost frame of one eval-loop call */
#define SNAPFILE_RFRAME_HIDDEN 0x2 /* a Ruby control frame its backtrace
				      does not show (kept for its flag 1) */
#define SNAPFILE_RFRAME_CFUNC 0x4 /* a Ruby C method (file and line: its
				     caller's) */
/* The RUNTIME section's version that appends, after all the threads, what
 * the capture said of the runtime (frames read, interpreters, the time
 * and reads of the capture, state, end); version 1 has none. */
#define SNAPFILE_RUNTIME_COUNTS 2
#define SNAPFILE_MAX_RFRAMES 65536 /* per thread */

/* NAMED (and JAVA) section: frame flags and limits. */
#define SNAPFILE_NFRAME_INLINED 0x1 /* inlined into the frame after it */
#define SNAPFILE_NFRAME_VM 0x2 /* the runtime's own code (STACKSNAP_RFRAME_VM) */
#define SNAPFILE_MAX_NAMED_STEPS (1u << 20)

/* Mapping record kinds. */
enum snapfile_map_kind {
	SNAPFILE_MAP_FILE = 0,	/* a file, found by path or build-id */
	SNAPFILE_MAP_IMAGE = 1, /* its image is in an IMAGE section */
	SNAPFILE_MAP_ANON = 2,	/* code without a file (JIT) */
};

/* Longest JIT symbol name a writer stores (longer ones are cut). */
#define SNAPFILE_MAX_JIT_NAME 4095

/* Hard limits on what a file may make the reader allocate. */
#define SNAPFILE_MAX_STACK (64u << 20)	      /* per thread */
#define SNAPFILE_MAX_STACKS (256u << 20)      /* all threads together */
#define SNAPFILE_MAX_GOROUTINES (1u << 20)
#define SNAPFILE_MAX_GFRAMES 4096	      /* per goroutine */
#define SNAPFILE_MAX_GLABELS 64		      /* key-value pairs per goroutine */

/* WAITS section (docs/snapshot-format.md): version 1; each thread's
 * record is length-prefixed, so a newer version appends fields to it and
 * older readers skip them. Limits a reader holds a file to. */
#define SNAPFILE_WAITS_VERSION 1
#define SNAPFILE_MAX_WAITS (1u << 20)	      /* threads */
#define SNAPFILE_MAX_WAIT_OWNERS 65536	      /* per thread */
#define SNAPFILE_MAX_WAIT_KFRAMES 1024	      /* kernel frames per thread */
#define SNAPFILE_MAX_WAIT_HELD 4096	      /* Java monitors held per thread */

/* The GOROUTINES section's version that appends each goroutine's
 * profiler labels after all the goroutines (docs/go.md); version 1 has
 * none. */
#define SNAPFILE_GOROUTINES_LABELS 2

#endif
