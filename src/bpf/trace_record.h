/* trace_record.h - the records the trace BPF programs put in their ring
 * buffer for the user side (src/trace/), and the layout of the maps
 * they share; included by both sides (types from vmlinux.h or linux/types.h). */
#ifndef SS_BPF_TRACE_RECORD_H
#define SS_BPF_TRACE_RECORD_H

/* Largest stack copy per event (--stack-size is at most this). */
#define TRACE_STACK_MAX 65536u
/* Largest tracepoint record copied per event (the fields the format file
 * describes; a syscall's sys_enter record is 64 bytes). */
#define TRACE_RAW_MAX 256u

enum trace_rec_kind {
	TRACE_REC_EVENT = 1,	/* an event: capture, stack, raw fields */
	TRACE_REC_FORK,		/* pid/tid created by ppid/ptid */
	TRACE_REC_EXEC,		/* pid ran execve(); comm is the new name */
	TRACE_REC_EXIT,		/* thread tid of pid exited */
};

/* What an attachment's BPF cookie says: which event (index into the
 * loader's table) and how many bytes of the tracepoint record to copy. */
#define TRACE_COOKIE(index, raw) (((__u64)(raw) << 32) | (__u32)(index))
#define TRACE_COOKIE_INDEX(c) ((__u32)(c))
#define TRACE_COOKIE_RAW(c) ((__u32)((c) >> 32))

/* stats map slots (per CPU, summed by the loader). */
enum trace_stat {
	TRACE_STAT_EMITTED = 0,	/* records written to the ring buffer */
	TRACE_STAT_LOST,	/* records dropped: ring buffer full */
	TRACE_STAT_SHORT,	/* stack copies cut by an unreadable page */
	TRACE_STAT_NR,
};

#define TRACE_KEND_STATE 1	/* a struct ku_end_state follows the pcs */

/* One ring buffer record. Invariant: the record is sizeof(struct
 * trace_rec) + round8(cap.data_len) + round8(raw_len) + 8 * kframes bytes:
 * the stack bytes follow the header, then the raw tracepoint record, then
 * the in-kernel walk's pcs (src/ktable/kunwind_layout.h: KU_PC_EXACT marks exact
 * pcs), then, when kflags has TRACE_KEND_STATE (both mode), a struct
 * ku_end_state: where the walk stopped, for user space to go on from
 * there over the copy (the hybrid). For FORK/EXEC/EXIT
 * records cap is not filled and nothing follows. */
struct trace_rec {
	__u32 kind;		/* enum trace_rec_kind */
	__u32 event;		/* TRACE_REC_EVENT: index of the event */
	__u64 time;		/* CLOCK_MONOTONIC ns */
	__u32 pid, tid;		/* tgid and thread id */
	__u32 ppid, ptid;	/* FORK: the creator; EXEC: the old tid */
	__u32 cpu;
	__u32 raw_len;		/* bytes of tracepoint record after the stack */
	__u16 kframes;		/* pcs of the in-kernel walk after the raw
				   record (kernel/both unwind modes) */
	__u8 kend;		/* why that walk ended (enum ku_end) */
	__u8 kflags;		/* TRACE_KEND_* */
	__u32 pad2;
	char comm[16];
	struct stacksnap_capture cap;
};

#endif
