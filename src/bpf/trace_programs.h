/* trace_programs.h - the loaders of an event trace's BPF programs
 * (trace_proc, trace_tp, trace_uprobe, trace_sample, offcpu): each
 * skeleton opened, configured, loaded sharing trace_proc's maps (one ring
 * buffer, filter, counters and executable ranges), attached and
 * detached. What to trace and what to do with the records is src/trace/. */
#ifndef SS_BPF_TRACE_PROGRAMS_H
#define SS_BPF_TRACE_PROGRAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

struct bpf_link;
struct ktable;
struct trace_proc_bpf;
struct trace_tp_bpf;
struct trace_uprobe_bpf;
struct trace_sample_bpf;
struct offcpu_bpf;

/* The settings every program shares, set before its load. */
struct trace_program_config {
	uint32_t stack_size;	/* bytes copied per event */
	bool filter_tid;	/* the filter holds tids, not tgids */
	bool inherit;		/* follow new processes */
	bool all_processes;	/* every process but ours (-a) */
	uint32_t unwind_mode;	/* KU_MODE_* */
	bool compact;		/* compact stacks in the kernel */
	bool python;		/* walk Python frames (processes in py_procs) */
	uint32_t ring_size;	/* bytes of the ring buffer */
	int ncpu;		/* possible CPUs (the scratch maps) */
};

/* The programs an event trace needs besides trace_proc. */
struct trace_program_needs {
	bool tracepoint, uprobe, sample;
	int off_event, wake_event; /* off-CPU events' indices; -1: none */
};

/* Invariant: proc is opened first (non-NULL: a start was tried) and, once
 * loaded, owns the shared maps; tp, uprobe, sample and offcpu are loaded
 * only when an event needs them; links and perf_fds are what
 * trace_programs__detach() closes. */
struct trace_programs {
	struct trace_proc_bpf *proc;
	struct trace_tp_bpf *tp;
	struct trace_uprobe_bpf *uprobe;
	struct trace_sample_bpf *sample;
	struct offcpu_bpf *offcpu;
	struct bpf_link **links;
	size_t nlinks, caplinks;
	int *perf_fds;
	size_t nperf;
};

/* Opens, configures and loads trace_proc, then every program needs asks
 * for, sharing its maps (and kt's table maps, kt may be NULL). -errno,
 * logged, on failure; p->proc is set as soon as it is opened. */
int trace_programs__load(struct trace_programs *p,
			 const struct trace_program_config *c,
			 const struct trace_program_needs *needs,
			 struct ktable *kt, const struct log_sink *log);
/* trace_proc's fork/exec/exit hooks (and, compact, the mmap ones). */
int trace_programs__attach_proc(struct trace_programs *p, bool compact,
				const struct log_sink *log);
/* One event; name is the event's as shown, for the messages. */
int trace_programs__attach_tracepoint(struct trace_programs *p,
				      const char *target, const char *name,
				      uint64_t cookie, const struct log_sink *log);
int trace_programs__attach_uprobe(struct trace_programs *p, const char *path,
				  uint64_t offset, bool retprobe,
				  const char *name, uint64_t cookie,
				  const struct log_sink *log);
int trace_programs__attach_sampling(struct trace_programs *p, unsigned hz,
				    uint64_t cookie, int ncpu,
				    const struct log_sink *log);
int trace_programs__attach_offcpu(struct trace_programs *p,
				  const struct log_sink *log);
/* Detaches every program (they stay loaded). */
void trace_programs__detach(struct trace_programs *p);
/* Destroys the programs and frees what p holds (after detach). */
void trace_programs__destroy(struct trace_programs *p);

/* trace_proc's maps, shared by every program. */
int trace_programs__events_fd(const struct trace_programs *p);
int trace_programs__traced_fd(const struct trace_programs *p);
int trace_programs__stats_fd(const struct trace_programs *p);
int trace_programs__exec_ranges_fd(const struct trace_programs *p);
/* The interpreters the Python walk reads (key tgid, struct trace_py_proc). */
int trace_programs__py_procs_fd(const struct trace_programs *p);
/* The map of the Ruby VMs the walk reads (key tgid, struct trace_rb_proc). */
int trace_programs__rb_procs_fd(const struct trace_programs *p);

#endif
