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

/* Python frames per event (the bounded walk of trace_common.bpf.h) and
 * thread states looked at to find the current thread's. */
#define TRACE_PY_MAX_FRAMES 64
#define TRACE_PY_MAX_THREADS 64

/* Why a record's Python walk ended (trace_rec.pyend). */
enum trace_py_end {
	TRACE_PY_NONE = 0,	/* no interpreter known in the process */
	TRACE_PY_COMPLETE,	/* the chain's end (previous == NULL) */
	TRACE_PY_NO_THREAD,	/* no thread state of this thread (not a
				   Python thread, or past TRACE_PY_MAX_THREADS) */
	TRACE_PY_FRAME_LIMIT,	/* TRACE_PY_MAX_FRAMES frames sent */
	TRACE_PY_BAD_MEMORY,	/* a read of the chain failed */
};

/* What the walk needs of one traced process's interpreter (key: tgid),
 * written by the user side from the layout table (src/runtime/python/
 * py_layout.c) when it recognised a CPython. Offsets in bytes; -1: the
 * build has no such field (3.11 reads the frame through ts_cframe, 3.12+
 * through ts_current_frame). */
struct trace_py_proc {
	__u64 interp_head;	/* address of _PyRuntime.interpreters.head */
	__s32 interp_threads_head;
	__s32 ts_next, ts_native_thread_id;
	__s32 ts_cframe, cframe_current_frame, ts_current_frame;
	__s32 frame_previous, frame_code, frame_instr;
	__s32 frame_is_entry, frame_owner;
	__u32 frame_span;	/* bytes read per frame: past the last field
				   used, at most TRACE_PY_FRAME_SPAN */
	/* Before 3.11 (ts_native_thread_id -1): the thread state's
	 * pthread_t at ts_thread_id, the kernel tid an int at pthread_tid in
	 * that struct pthread; the frame's int f_lasti at frame_lasti (then
	 * frame_instr is -1, and every frame is an entry frame). */
	__s32 ts_thread_id, pthread_tid;
	__s32 frame_lasti;
	__u32 pad;
};
#define TRACE_PY_FRAME_SPAN 128

/* What the walk needs of one traced process's Ruby VM (key: tgid),
 * written by the user side (src/trace/trace_ruby.c) from the layout of
 * src/runtime/ruby/: the thread's execution context is ruby_current_ec
 * in libruby's TLS block (the thread pointer's DTV, entry tls_modid,
 * at ec_tls_off), its control frames from ec->cfp up to the end of the
 * VM stack. Offsets in bytes. */
struct trace_rb_proc {
	__u64 tls_modid, ec_tls_off;
	__u32 ec_vm_stack, ec_vm_stack_size, ec_cfp;
	__u32 cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	__u32 ep_me_cref;	/* ep[-2] is at ep - ep_me_cref */
};
/* A Ruby VM's control frames go in the records' trace_py_frame slots
 * (one process runs one runtime): code the iseq (or a C method's method
 * entry) with its RB_FRAME_* flags (src/runtime/ruby/ruby.h) in bits
 * 0-2, instr the frame's pc. pyend TRACE_PY_COMPLETE: the walk reached
 * the VM stack's end. */
#define TRACE_RB_FINISH 1ull	/* RB_FRAME_FINISH */
#define TRACE_RB_SHOWN 2ull	/* RB_FRAME_RUBY */
#define TRACE_RB_CFUNC 4ull	/* RB_FRAME_CFUNC */
#define TRACE_RB_SPAN 64	/* bytes read of a control frame */

/* One Python frame of a record: the code object's address with the
 * frame's entry flag in bit 0 and its owner (FRAME_OWNED_BY_*, 0-3) in
 * bits 1-2 (code objects are 8-aligned), and its instruction pointer
 * (prev_instr in 3.11, instr_ptr in 3.12+; before 3.11 f_lasti, sign
 * extended). */
struct trace_py_frame {
	__u64 code;
	__u64 instr;
};
#define TRACE_PY_ENTRY 1ull
#define TRACE_PY_OWNER(code) (((code) >> 1) & 3)
#define TRACE_PY_CODE(code) ((code) & ~7ull)

/* One ring buffer record. Invariant: the record is sizeof(struct
 * trace_rec) + round8(cap.data_len) + round8(more_len) + round8(raw_len) +
 * 8 * kframes bytes (+ the end state) + 16 * pyframes:
 * the stack bytes follow the header, then the normal stack's copy of a
 * thread on its alternate signal stack, then the raw tracepoint record, then
 * the in-kernel walk's pcs (src/ktable/kunwind_layout.h: KU_PC_EXACT marks exact
 * pcs), then, when kflags has TRACE_KEND_STATE (both mode), a struct
 * ku_end_state: where the walk stopped, for user space to go on from
 * there over the copy (the hybrid), then pyframes struct trace_py_frame,
 * innermost first (the traced thread's Python frames, when its process
 * runs a known CPython; pyend says why they end). For FORK/EXEC/EXIT
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
	__u16 pyframes;		/* struct trace_py_frame at the end */
	__u8 pyend;		/* enum trace_py_end */
	__u8 pad2;
	char comm[16];
	struct stacksnap_capture cap;
	/* A thread in a signal handler on its alternate stack: the copy of
	 * its normal stack from the interrupted sp (more_len bytes at
	 * more_start, after the copy from sp), for the walk past the
	 * signal frame; more_len 0 when none. */
	__u64 more_start;
	__u32 more_len;
	__u32 pad3;
};

#endif
