/* trace_internal.h - an event trace (struct stacksnap_trace) and what the
 * files of src/trace/ share: the events as added (event_spec.c), the BPF
 * programs started and the processes followed (session.c), the ring
 * buffer drained (ring_reader.c), each event's stack walked
 * (event_unwind.c), its fields decoded (fields.c), events listed
 * (list.c). */
#ifndef SS_TRACE_INTERNAL_H
#define SS_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "base/log.h"
#include "bpf/trace_programs.h"

/* The BPF side's record, in user-space types. */
#define __u8 uint8_t
#define __u16 uint16_t
#define __s32 int32_t
#define __u32 uint32_t
#define __u64 uint64_t
#include "bpf/trace_record.h"
#include "ktable/kunwind_layout.h"
#include "base/clock.h"
#include "ktable/ktable.h"
#include "bpf/kunwind_session.h"
#undef __u8
#undef __u16
#undef __s32
#undef __u32
#undef __u64

#define MAX_FIELDS 32

/* One field of a tracepoint's format file. */
struct tp_field {
	char name[48];
	unsigned offset, size;
	bool is_signed, is_pointer, is_string, is_data_loc;
};

/* EV_OFF_CPU / EV_WAKEUP: a traced thread leaving a CPU to wait / woken
 * (stacksnap_trace__add_off_cpu; the second carries no stack). */
enum event_kind { EV_TRACEPOINT, EV_UPROBE, EV_URETPROBE, EV_SAMPLE, EV_OFF_CPU,
		  EV_WAKEUP };

/* One event as added. Invariant: raw_len <= TRACE_RAW_MAX; for
 * tracepoints nfields fields, each inside raw_len. */
struct trace_event_spec {
	enum event_kind kind;
	char *name;		/* shown: "syscalls:sys_enter_write" */
	char *target;		/* tracepoint "CAT/NAME"; uprobe file path */
	char *func;		/* uprobe function */
	uint64_t func_off;	/* its file offset */
	unsigned hz;		/* sampling */
	unsigned raw_len;
	struct tp_field fields[MAX_FIELDS];
	unsigned nfields;
};

/* Invariant: after start, bpf.proc is loaded and owns the shared maps
 * (bpf/trace_programs.h); bpf.proc non-NULL means a start was tried: no
 * event may be added any more. */
struct stacksnap_trace {
	struct stacksnap_ctx *ctx;
	struct stacksnap_trace_opts o;
	bool env_ready;		/* bpf_env__prepare succeeded */
	struct trace_event_spec *events;
	size_t nevents, capevents;
	struct trace_programs bpf;
	struct ring_buffer *rb;
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame *frames;
	stacksnap_trace_fn fn;	/* during poll */
	void *fn_user;
	int fn_rc;
	struct stacksnap_trace_stats st;
	char strbuf[MAX_FIELDS][64]; /* strings of fields() */
	/* unwind KERNEL/BOTH: the tables in BPF maps, the frames made from
	 * the kernel's pcs, and the last fallback refresh (pid, time) so a
	 * burst of events of not-yet-loaded code reads /proc once. */
	struct ktable *kt;
	struct stacksnap_frame *kframes;
	struct stacksnap_frame *hframes; /* the hybrid walk's (both mode) */
	pid_t last_refresh_pid;
	uint64_t last_refresh_ns;
	/* Python (trace_python.c): the interpreters found, by process (a
	 * NULL slot is free), and the buffers of one event's frames. */
	struct trace_py **py;
	size_t npy;
	struct trace_py **pydead;	/* forgotten at an exec, freed last */
	size_t npydead;
	struct py_raw_frame *pyframes;
	size_t cap_pyframes;
	struct stacksnap_runtime_frame *rframes;
	size_t cap_rframes;
	/* Processes that ran execve() without an interpreter found yet (a
	 * libpython is mapped by ld.so after the exec): looked at again every
	 * 20 ms, until found or 5 s after the exec. */
	struct trace_py_pending { pid_t pid; uint64_t since_ns, last_ns; } *pypend;
	size_t npypend;
	/* Processes whose runtime was said to be unreadable (trace_python.c:
	 * trace__runtime_said): the exec's retries do not say it again. */
	pid_t *rt_said;
	size_t nrt_said, cap_rt_said;
	/* Ruby VMs (trace_ruby.c), or NULL. */
	struct trace_rubies *rb_vms;
	/* PHP engines (trace_php.c), or NULL. */
	struct trace_phps *php_vms;
	/* A followed JVM or V8 (trace_named.c), or NULL. */
	struct trace_named *named;
	/* The kernel's mmap/comm/fork/exit records (sideband.c); NULL where
	 * perf events cannot be opened: then mappings come from /proc. */
	struct trace_sideband *sb;
};

static inline const struct log_sink *LOG(const struct stacksnap_trace *tr)
{
	return &tr->ctx->log;
}

/* event_spec.c */
/* Calls fn for every tracepoint CAT:NAME matching the globs; returns how
 * many matched (up to the one where fn returned non-zero) or -errno. */
int trace_tracepoints_each(const char *cat_glob, const char *name_glob,
			   int (*fn)(const char *cat, const char *name, void *u),
			   void *u);
/* The file a uprobe names ("libc", or a path), with pid_hint's mappings
 * searched first (pid_hint <= 0: none). */
int trace_resolve_binary(pid_t pid_hint, const char *name, char *out,
			 size_t outlen);
/* Calls fn for every defined function symbol of the ELF file at path
 * with its name, its demangled name without the parameter list and its
 * file offset, until fn returns non-zero (which is returned). */
int trace_elf_functions(const char *path,
			int (*fn)(const char *name, const char *plain,
				  uint64_t off, void *u),
			void *u);

/* session.c */
/* KU_MODE_* of the unwind option. */
uint32_t trace__unwind_mode(const struct stacksnap_trace *tr);
/* Writes pid's mapping table for the in-kernel walk (unwind KERNEL/BOTH). */
void trace__kernel_maps(struct stacksnap_trace *tr, pid_t pid);
/* pid's executable ranges into the map the compaction reads (compact only). */
void trace__exec_ranges_update(struct stacksnap_trace *tr, pid_t pid);

/* ring_reader.c: libbpf's ring buffer callback (ctx: the trace). */
int trace_on_record(void *ctx, void *data, size_t len);

/* trace_python.c: Python frames. */
struct trace_py;
struct py_raw_frame;
/* Looks for a CPython in pid and, when its layout is known, hands the
 * programs what their walk needs (a no-op when already found, or with
 * no_runtime). */
void trace__python_detect(struct stacksnap_trace *tr, pid_t pid);
/* Forgets pid's interpreter (it ran execve) and looks for the new
 * image's, now and, until found, again for a while (trace__python_pending). */
void trace__python_exec(struct stacksnap_trace *tr, pid_t pid);
/* Looks again at the processes still pending (rate-limited; cheap when
 * none is). */
void trace__python_pending(struct stacksnap_trace *tr);
/* Names record r's Python frames (pyf: r->pyframes of them) and merges
 * them into ev's native frames: ev->rframes. */
void trace__python_event(struct stacksnap_trace *tr, const struct trace_rec *r,
			 const uint8_t *pyf, struct stacksnap_trace_event *ev);
void trace__python_free(struct stacksnap_trace *tr);

/* trace_ruby.c: Ruby frames (of processes without a CPython). */
struct trace_rubies;
/* Looks for a Ruby VM in pid and, when its layout is known, hands the
 * programs what their walk needs (a no-op when found already). */
void trace__ruby_detect(struct stacksnap_trace *tr, pid_t pid);
/* Whether pid's runtime was already said to be unreadable; if not, it is
 * now recorded as said (the caller says it). An exec forgets it. */
bool trace__runtime_said(struct stacksnap_trace *tr, pid_t pid);
void trace__runtime_unsay(struct stacksnap_trace *tr, pid_t pid);
/* Forgets pid's VM (it ran execve). */
void trace__ruby_forget(struct stacksnap_trace *tr, pid_t pid);
/* Names record r's Ruby control frames (pyf: r->pyframes of them) and
 * merges them into ev's native frames; false when pid runs no VM found. */
bool trace__ruby_event(struct stacksnap_trace *tr, const struct trace_rec *r,
		       const uint8_t *pyf, struct stacksnap_trace_event *ev);
/* Whether pid runs a Ruby VM whose layout is known. */
bool trace__ruby_runs(pid_t pid);
void trace__ruby_free(struct stacksnap_trace *tr);

/* trace_php.c: PHP frames (of processes without a CPython or Ruby VM),
 * as trace_ruby.c's. */
struct trace_phps;
void trace__php_detect(struct stacksnap_trace *tr, pid_t pid);
void trace__php_forget(struct stacksnap_trace *tr, pid_t pid);
bool trace__php_event(struct stacksnap_trace *tr, const struct trace_rec *r,
		      const uint8_t *pyf, struct stacksnap_trace_event *ev);
bool trace__php_runs(pid_t pid);
void trace__php_free(struct stacksnap_trace *tr);
/* Room for n runtime frames in tr->rframes: false on -ENOMEM. */
bool trace__grow_rframes(struct stacksnap_trace *tr, size_t n);
/* What a record's pyend says of frames cut short, or NULL. */
const char *trace__py_end_str(unsigned end);

/* trace_named.c: Java or JavaScript frames of one followed process's
 * JVM or V8. */
struct trace_named;
/* The first followed process is the one whose runtime is looked for (now,
 * and at its events for a while: trace__named_before). */
void trace__named_follow(struct stacksnap_trace *tr, pid_t tgid);
/* Before an event of pid is unwound: the runtime looked for, if not found. */
void trace__named_before(struct stacksnap_trace *tr, pid_t pid);
/* Names the runtime frames of ev's user-space walk: ev->rframes. */
void trace__named_event(struct stacksnap_trace *tr, struct stacksnap_trace_event *ev);
void trace__named_free(struct stacksnap_trace *tr);
/* sideband.c: the kernel's records of the followed processes' code
 * mappings, execs, forks and exits, in time order. */
struct trace_sideband;
/* A dummy perf event per CPU; NULL (logged at debug) where they cannot
 * be opened. */
struct trace_sideband *trace_sideband__open(struct stacksnap_trace *tr);
/* Applies to tr->procs every record up to until_ns (CLOCK_MONOTONIC) of
 * the processes it follows, in time order; the others are dropped. */
void trace_sideband__apply(struct stacksnap_trace *tr, uint64_t until_ns);
/* Applies the records old enough that no event still unread can be
 * older (at the end of a poll that drained the ring buffer: the rings do
 * not fill while no event comes). drained_from_ns: when that drain began;
 * every event raised some slack before it was in the ring by then and has
 * been read, while one raised since may still be unread. */
void trace_sideband__settle(struct stacksnap_trace *tr, uint64_t drained_from_ns);
void trace_sideband__free(struct trace_sideband *sb);

/* event_unwind.c: an event's stack. */
/* The in-kernel walk of record r (its pcs after raw_off + the raw record). */
void trace__kernel_event(struct stacksnap_trace *tr, const struct trace_rec *r,
			 size_t raw_off, struct stacksnap_trace_event *ev);
/* The user-space walk of r's copy into tr->frames (and, BOTH mode, its
 * comparison with the kernel's and the hybrid walk); returns the frames. */
int trace__unwind_copy(struct stacksnap_trace *tr, const struct trace_rec *r,
		       size_t raw_off, struct stacksnap_trace_event *ev);
/* The library's end reason for an in-kernel walk's. */
enum stacksnap_end trace_kernel_end(unsigned kend);

#endif
