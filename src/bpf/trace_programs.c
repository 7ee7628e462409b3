/* trace_programs.c - the loaders of an event trace's BPF programs: the
 * skeletons opened, configured, loaded sharing trace_proc's maps (and,
 * where the kernel is the build's, its minimal BTF),
 * attached to their tracepoints, uprobes, perf events and scheduler
 * hooks, and detached. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/vec.h"
#include "bpf/bpf_env.h"
#include "bpf/trace_programs.h"
#include "ktable/ktable.h"

#include "trace_proc.skel.h"
#include "trace_tp.skel.h"
#include "trace_uprobe.skel.h"
#include "trace_sample.skel.h"
#include "offcpu.skel.h"
#include "trace_min_btf.h"

static int link_add(struct trace_programs *p, struct bpf_link *l)
{
	struct bpf_link **slot = VEC_PUSH(p->links, p->nlinks, p->caplinks);

	if (!slot) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	*slot = l;
	return 0;
}

/* Settings every object shares, set before its load; maps other than
 * proc's own point at proc's (one ring buffer, filter and counters). */
#define CONFIGURE(c, skel)                                                     \
	do {                                                                   \
		(skel)->rodata->stack_size = (c)->stack_size;                  \
		(skel)->rodata->filter_tid = (c)->filter_tid;                  \
		(skel)->rodata->inherit = (c)->inherit;                        \
		(skel)->rodata->all_processes = (c)->all_processes;            \
		(skel)->rodata->self_tgid = (uint32_t)getpid();                \
		(skel)->rodata->unwind_mode = (c)->unwind_mode;                \
		(skel)->rodata->compact = (c)->compact;                        \
		(skel)->rodata->python = (c)->python;                          \
		(skel)->rodata->wake_bytes = (c)->ring_size / 8;               \
		(skel)->rodata->wake_ns = 2000000;                             \
		(skel)->rodata->trace_exp = getenv("SS_TRACE_EXP") ?           \
			(uint32_t)atoi(getenv("SS_TRACE_EXP")) : 0;            \
		bpf_map__set_max_entries((skel)->maps.scratch, (uint32_t)(c)->ncpu); \
	} while (0)
#define SHARE(p, kt, skel)                                                     \
	(((kt) && ktable__reuse_maps((kt), (skel)->obj)) ||                    \
	 bpf_map__reuse_fd((skel)->maps.events, bpf_map__fd((p)->proc->maps.events)) ||   \
	 bpf_map__reuse_fd((skel)->maps.traced, bpf_map__fd((p)->proc->maps.traced)) ||   \
	 bpf_map__reuse_fd((skel)->maps.stats, bpf_map__fd((p)->proc->maps.stats)) ||     \
	 bpf_map__reuse_fd((skel)->maps.exec_ranges, bpf_map__fd((p)->proc->maps.exec_ranges)) || \
	 bpf_map__reuse_fd((skel)->maps.py_procs, bpf_map__fd((p)->proc->maps.py_procs)) ||     \
	 bpf_map__reuse_fd((skel)->maps.py_tstates, bpf_map__fd((p)->proc->maps.py_tstates)) || \
	 bpf_map__reuse_fd((skel)->maps.rb_procs, bpf_map__fd((p)->proc->maps.rb_procs)) || \
	 bpf_map__reuse_fd((skel)->maps.php_procs, bpf_map__fd((p)->proc->maps.php_procs)))

/* Opens, configures, shares proc's maps with, and loads the skeleton
 * NAME_bpf into p->FIELD (returning from the caller on failure): how a
 * program kind joins the trace (a new capture mode is one more). */
#define LOAD_SHARING(p, c, kt, field, name, what, log, oo)                     \
	do {                                                                   \
		if (!((p)->field = name##_bpf__open_opts(oo)))                 \
			return load_error(log, what, -errno);                  \
		CONFIGURE(c, (p)->field);                                      \
		if ((err = SHARE(p, kt, (p)->field)) ||                        \
		    (err = name##_bpf__load((p)->field)))                      \
			return load_error(log, what, err);                     \
	} while (0)

static int load_error(const struct log_sink *log, const char *what, int err)
{
	char why[320];

	log_err(log, "cannot load the %s BPF program: %s%s%s%s", what, strerror(-err),
		err == -EPERM ? " (" : "",
		err == -EPERM ? stacksnap_why_not_permitted(STACKSNAP_REFUSED_BPF, 0, why,
							    sizeof(why)) : "",
		err == -EPERM ? ")"
		: err == -EINVAL || err == -ENOTSUP || err == -ESRCH
		? " (this kernel lacks a feature it needs: BTF-enabled tracepoints, "
		  "bpf_task_pt_regs and attach cookies, Linux 5.15 or later; "
		  "-v shows the verifier's words)" : "");
	return err;
}

/* The objects sharing trace_proc's maps. Their programs (tracepoint,
 * uprobe, perf_event) need the kernel's BTF only for CO-RE relocations,
 * which oo's btf_custom_path (the build's minimal BTF) serves when it is
 * set; trace_proc's and offcpu's are tp_btf (BPF_PROG_TYPE_TRACING)
 * programs, for which libbpf parses the kernel's full BTF whatever it is
 * given (their attach targets' type ids). */
static int load_sharing(struct trace_programs *p,
			const struct trace_program_config *c,
			const struct trace_program_needs *needs, struct ktable *kt,
			const struct log_sink *log, const struct bpf_object_open_opts *oo)
{
	int err;

	if (needs->tracepoint)
		LOAD_SHARING(p, c, kt, tp, trace_tp, "tracepoint", log, oo);
	if (needs->uprobe)
		LOAD_SHARING(p, c, kt, uprobe, trace_uprobe, "uprobe", log, oo);
	if (needs->sample)
		LOAD_SHARING(p, c, kt, sample, trace_sample, "sampling", log, oo);
	return 0;
}

int trace_programs__load(struct trace_programs *p,
			 const struct trace_program_config *c,
			 const struct trace_program_needs *needs,
			 struct ktable *kt, const struct log_sink *log)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	char btf_path[64];
	int err, btf_fd;

	p->proc = trace_proc_bpf__open();
	if (!p->proc)
		return load_error(log, "process-following", -errno);
	CONFIGURE(c, p->proc);
	if (!c->compact) {
		/* The executable-mapping hooks only keep --compact's ranges. */
		bpf_program__set_autoload(p->proc->progs.trace_mmap_enter, false);
		bpf_program__set_autoload(p->proc->progs.trace_mmap_exit, false);
		bpf_program__set_autoload(p->proc->progs.trace_mprotect_enter, false);
		bpf_program__set_autoload(p->proc->progs.trace_mprotect_exit, false);
	}
	if (kt && (err = ktable__reuse_maps(kt, p->proc->obj)))
		return load_error(log, "process-following", err);
	bpf_map__set_max_entries(p->proc->maps.events, c->ring_size);
	if ((err = trace_proc_bpf__load(p->proc)))
		return load_error(log, "process-following", err);
	if (needs->tracepoint || needs->uprobe || needs->sample) {
		btf_fd = bpf_env__min_btf(min_core_btf, sizeof(min_core_btf),
					  min_core_btf_kernel, btf_path,
					  sizeof(btf_path), log);
		if (btf_fd >= 0)
			oo.btf_custom_path = btf_path;
		err = load_sharing(p, c, needs, kt, log, &oo);
		if (btf_fd >= 0)
			close(btf_fd);
		if (err)
			return err;
	}
	if (needs->off_event >= 0) {
		if (!(p->offcpu = offcpu_bpf__open()))
			return load_error(log, "off-CPU", -errno);
		CONFIGURE(c, p->offcpu);
		p->offcpu->rodata->off_event = (uint32_t)needs->off_event;
		p->offcpu->rodata->wake_event = (uint32_t)needs->wake_event;
		if ((err = SHARE(p, kt, p->offcpu)) || (err = offcpu_bpf__load(p->offcpu)))
			return load_error(log, "off-CPU", err);
	}
	return 0;
}

int trace_programs__attach_proc(struct trace_programs *p, bool compact,
				const struct log_sink *log)
{
	int err = trace_proc_bpf__attach(p->proc);

	if (err)
		log_err(log, "cannot attach to the sched_process_fork/exec/exit "
			"tracepoints%s: %s", compact ? " (or, for --compact, "
			"sys_enter/exit_mmap/mprotect)" : "", strerror(-err));
	return err;
}

int trace_programs__attach_tracepoint(struct trace_programs *p,
				      const char *target, const char *name,
				      uint64_t cookie, const struct log_sink *log)
{
	char cat[128];
	const char *slash = strchr(target, '/');
	LIBBPF_OPTS(bpf_tracepoint_opts, to, .bpf_cookie = cookie);
	struct bpf_link *l;

	snprintf(cat, sizeof(cat), "%.*s", (int)(slash - target), target);
	l = bpf_program__attach_tracepoint_opts(p->tp->progs.trace_tp, cat, slash + 1, &to);
	if (!l) {
		int err = -errno;

		log_err(log, "cannot attach to tracepoint %s: %s", name, strerror(-err));
		return err;
	}
	return link_add(p, l);
}

int trace_programs__attach_uprobe(struct trace_programs *p, const char *path,
				  uint64_t offset, bool retprobe,
				  const char *name, uint64_t cookie,
				  const struct log_sink *log)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = retprobe);
	struct bpf_link *l;

	l = bpf_program__attach_uprobe_opts(p->uprobe->progs.trace_uprobe, -1,
					    path, offset, &uo);
	if (!l) {
		int err = -errno;

		log_err(log, "cannot attach %s: %s", name, strerror(-err));
		return err;
	}
	return link_add(p, l);
}

int trace_programs__attach_sampling(struct trace_programs *p, unsigned hz,
				    uint64_t cookie, int ncpu,
				    const struct log_sink *log)
{
	LIBBPF_OPTS(bpf_perf_event_opts, po, .bpf_cookie = cookie);

	p->perf_fds = calloc((size_t)ncpu, sizeof(int));
	if (!p->perf_fds)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = hz,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno == ENODEV || errno == ENOENT)
				continue; /* an offline CPU */
			log_err(log, "cannot open a cpu-clock event on CPU %d: %s",
				cpu, strerror(errno));
			return -errno;
		}
		p->perf_fds[p->nperf++] = fd;
		l = bpf_program__attach_perf_event_opts(p->sample->progs.trace_sample, fd, &po);
		if (!l) {
			int err = -errno;

			log_err(log, "cannot attach the sampling program on CPU %d: %s",
				cpu, strerror(-err));
			return err;
		}
		if (link_add(p, l))
			return -ENOMEM;
	}
	return 0;
}

/* Both programs with the first of the two events: the wakeups first (a
 * wait begun is then always ended). */
int trace_programs__attach_offcpu(struct trace_programs *p,
				  const struct log_sink *log)
{
	struct bpf_program *progs[2] = { p->offcpu->progs.trace_wakeup,
					 p->offcpu->progs.trace_offcpu };

	for (int i = 0; i < 2; i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);
		int err;

		if (!l) {
			err = -errno;
			log_err(log, "cannot attach to %s: %s",
				i ? "sched_switch" : "sched_wakeup", strerror(-err));
			return err;
		}
		if ((err = link_add(p, l)))
			return err;
	}
	return 0;
}

void trace_programs__detach(struct trace_programs *p)
{
	for (size_t i = 0; i < p->nlinks; i++)
		bpf_link__destroy(p->links[i]);
	p->nlinks = 0;
	for (size_t i = 0; i < p->nperf; i++)
		close(p->perf_fds[i]);
	p->nperf = 0;
}

void trace_programs__destroy(struct trace_programs *p)
{
	trace_sample_bpf__destroy(p->sample);
	offcpu_bpf__destroy(p->offcpu);
	trace_uprobe_bpf__destroy(p->uprobe);
	trace_tp_bpf__destroy(p->tp);
	trace_proc_bpf__destroy(p->proc);
	free(p->perf_fds);
	free(p->links);
	memset(p, 0, sizeof(*p));
}

int trace_programs__events_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.events);
}

int trace_programs__traced_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.traced);
}

int trace_programs__stats_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.stats);
}

int trace_programs__exec_ranges_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.exec_ranges);
}

int trace_programs__py_procs_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.py_procs);
}

int trace_programs__rb_procs_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.rb_procs);
}

int trace_programs__php_procs_fd(const struct trace_programs *p)
{
	return bpf_map__fd(p->proc->maps.php_procs);
}
