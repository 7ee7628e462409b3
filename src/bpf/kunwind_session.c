/* kunwind_session.c - loads kunwind.bpf.c over the shared table maps,
 * attaches it, keeps the followed processes' mapping tables current and
 * drains its ring buffer. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/log.h"
#include "bpf/bpf_env.h"
#include "bpf/kunwind_session.h"
#include "kunwind.skel.h"

/* Invariant: skel is loaded and attached, kt's maps are the program's. */
struct kunwind {
	struct stacksnap_ctx *ctx;
	struct kunwind_bpf *skel;
	struct ktable *kt;
	struct stacksnap_procs *procs;
	struct ring_buffer *rb;
	struct bpf_link *link;	/* the event's link (tracepoint) */
	kunwind_event_fn fn;	/* during poll */
	void *user;
	int fn_err;
	uint64_t events, refreshes, last_refresh_ns;
	/* Processes whose mappings changed during a poll, refreshed once
	 * after it (ld.so maps a library in several calls), with the time
	 * of the first notification. */
	pid_t dirty[64];
	uint64_t dirty_since[64];
	unsigned ndirty;
};

const char *kunwind_end__str(unsigned end)
{
	static const char *const s[] = {
		[KU_END_NONE] = "none",
		[KU_END_COMPLETE] = "complete",
		[KU_END_NO_PROC] = "process mappings not loaded yet",
		[KU_END_NO_MAPPING] = "pc outside any known mapping",
		[KU_END_NOT_LOADED] = "module table not loaded yet",
		[KU_END_DWARF] = "row needs DWARF evaluation",
		[KU_END_NO_CFI] = "no unwind information",
		[KU_END_BAD_MEMORY] = "stack memory unreadable",
		[KU_END_LOOP] = "stack pointer did not move up (loop)",
		[KU_END_FRAME_LIMIT] = "frame limit reached",
		[KU_END_BAD_CFI] = "unusable unwind information",
		[KU_END_BAD_PC] = "return address is not code",
		[KU_END_NO_REGS] = "no user registers",
	};
	return end < sizeof(s) / sizeof(s[0]) && s[end] ? s[end] : "unknown";
}

struct kunwind *kunwind__open(struct stacksnap_ctx *ctx,
			      const struct kunwind_opts *opts)
{
	struct bpf_env env;
	struct kunwind *k;
	int err;

	err = bpf_env__prepare(&env, &ctx->log);
	if (err) {
		errno = -err;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	k->ctx = ctx;
	k->procs = stacksnap_procs__new(ctx, NULL);
	k->kt = k->procs ? ktable__new(ctx) : NULL;
	if (!k->kt) {
		err = -errno;
		goto fail;
	}
	k->skel = kunwind_bpf__open();
	if (!k->skel) {
		err = -errno;
		log_err(&ctx->log, "cannot open the kunwind BPF program: %s",
			strerror(errno));
		goto fail;
	}
	k->skel->rodata->ku_mode = opts->mode ? (unsigned)opts->mode : KU_MODE_KERNEL;
	k->skel->rodata->ku_max_frames = opts->max_frames ? opts->max_frames
							  : KU_MAX_FRAMES;
	k->skel->rodata->ku_stack_size = opts->stack_size ? opts->stack_size
							  : KU_MAX_STACK;
	/* -2: sys_enter only watches executable mmaps, the event is a
	 * tracepoint of its own. */
	k->skel->rodata->ku_syscall_nr = opts->tracepoint ? -2 : opts->syscall;
	k->skel->rodata->ku_follow_forks = !opts->no_follow_forks;
	if (getenv("SS_KUNWIND_EXP"))
		k->skel->rodata->ku_exp = (unsigned)atoi(getenv("SS_KUNWIND_EXP"));
	if (!opts->tracepoint)
		bpf_program__set_autoattach(k->skel->progs.ku_tracepoint, false);
	err = ktable__reuse_maps(k->kt, k->skel->obj);
	if (err)
		goto fail;
	/* The verifier's last words name what it refused. */
	static char vlog[1 << 20];
	vlog[0] = '\0';
	bpf_program__set_log_buf(k->skel->progs.ku_sys_enter, vlog, sizeof(vlog));
	bpf_program__set_log_buf(k->skel->progs.ku_tracepoint, vlog, sizeof(vlog));
	err = kunwind_bpf__load(k->skel);
	if (err) {
		size_t len = strlen(vlog);
		const char *keep = getenv("STACKSNAP_VERIFIER_LOG");
		FILE *f = keep ? fopen(keep, "w") : NULL;

		if (f) { /* the whole log, for whoever debugs the program */
			fputs(vlog, f);
			fclose(f);
		}

		log_err(&ctx->log,
			"the kernel refused the kunwind BPF program: %s; the "
			"verifier's log ends: %s", strerror(-err),
			len > 3000 ? vlog + len - 3000 : vlog);
		goto fail;
	}
	err = kunwind_bpf__attach(k->skel);
	if (err) {
		log_err(&ctx->log, "cannot attach the kunwind BPF program: %s",
			strerror(-err));
		goto fail;
	}
	if (opts->tracepoint) {
		char cat[128];
		const char *colon = strchr(opts->tracepoint, ':');

		if (!colon || (size_t)(colon - opts->tracepoint) >= sizeof(cat)) {
			log_err(&ctx->log, "%s: a tracepoint is CATEGORY:NAME",
				opts->tracepoint);
			err = -EINVAL;
			goto fail;
		}
		memcpy(cat, opts->tracepoint, (size_t)(colon - opts->tracepoint));
		cat[colon - opts->tracepoint] = '\0';
		k->link = bpf_program__attach_tracepoint(k->skel->progs.ku_tracepoint,
							 cat, colon + 1);
		if (!k->link) {
			err = -errno;
			log_err(&ctx->log, "tracepoint %s: cannot attach: %s",
				opts->tracepoint, strerror(errno));
			goto fail;
		}
	}
	return k;
fail:
	kunwind__close(k);
	errno = -err;
	return NULL;
}

void kunwind__close(struct kunwind *k)
{
	if (!k)
		return;
	ring_buffer__free(k->rb);
	bpf_link__destroy(k->link);
	kunwind_bpf__destroy(k->skel);
	ktable__free(k->kt);
	stacksnap_procs__free(k->procs);
	free(k);
}

/* Rewrites pid's mapping table from /proc (after exec, an executable
 * mmap, or a walk that found a pc in no known mapping). */
static int refresh(struct kunwind *k, pid_t pid)
{
	int err = stacksnap_procs__attach_pid(k->procs, pid);

	if (!err)
		err = ktable__set_process(k->kt, pid,
					  stacksnap_procs__addrspace(k->procs, pid));
	if (err == -E2BIG)
		err = 0; /* logged; the table holds the first mappings */
	k->refreshes++;
	return err;
}

int kunwind__add_pid(struct kunwind *k, pid_t pid, bool before_exec)
{
	uint32_t key = (uint32_t)pid, one = 1;
	int err;

	err = before_exec ? 0 : refresh(k, pid);
	if (err)
		return err;
	if (bpf_map__update_elem(k->skel->maps.ku_pids, &key, sizeof(key), &one,
				 sizeof(one), BPF_ANY))
		return fail(-errno);
	return 0;
}

static void mark_dirty(struct kunwind *k, pid_t pid, uint64_t since)
{
	for (unsigned i = 0; i < k->ndirty; i++)
		if (k->dirty[i] == pid)
			return;
	if (k->ndirty == sizeof(k->dirty) / sizeof(k->dirty[0])) {
		refresh(k, pid); /* no room: at once */
		return;
	}
	k->dirty_since[k->ndirty] = since;
	k->dirty[k->ndirty++] = pid;
}

/* The process may have gone already: nothing to unwind then. */
static void refresh_dirty(struct kunwind *k)
{
	for (unsigned i = 0; i < k->ndirty; i++)
		if (!refresh(k, k->dirty[i]))
			k->last_refresh_ns = clock_monotonic_ns() - k->dirty_since[i];
	k->ndirty = 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct kunwind *k = ctx;
	const struct ku_event *ev = data;
	const uint64_t *pcs = (const uint64_t *)(ev + 1);
	const uint8_t *stack;

	if (size < sizeof(*ev) || size < sizeof(*ev) + ev->nframes * 8ull +
						  (ev->flags & KU_EV_COPY ? ev->stack_len : 0))
		return 0;
	if (ev->flags & KU_EV_MAPS_CHANGED) {
		mark_dirty(k, (pid_t)ev->pid, ev->time_ns);
		return 0;
	}
	/* A walk that met code the table does not know: load it for the
	 * events to come (this one is reported as it is). */
	if (ev->end == KU_END_NO_PROC || ev->end == KU_END_NO_MAPPING ||
	    ev->end == KU_END_BAD_PC)
		mark_dirty(k, (pid_t)ev->pid, ev->time_ns);
	stack = ev->flags & KU_EV_COPY ? (const uint8_t *)(pcs + ev->nframes) : NULL;
	k->events++;
	if (k->fn) {
		int err = k->fn(k->user, ev, pcs, stack);

		if (err) {
			k->fn_err = err;
			return err;
		}
	}
	return 0;
}

int kunwind__poll(struct kunwind *k, int timeout_ms, kunwind_event_fn fn,
		  void *user)
{
	uint64_t before = k->events;
	int err;

	if (!k->rb) {
		k->rb = ring_buffer__new(bpf_map__fd(k->skel->maps.ku_events),
					 on_record, k, NULL);
		if (!k->rb)
			return fail(-errno);
	}
	k->fn = fn;
	k->user = user;
	k->fn_err = 0;
	err = ring_buffer__poll(k->rb, timeout_ms);
	/* Events are sent without a wakeup (kunwind.bpf.c, ku_rb_flags): a
	 * poll that timed out still drains what is waiting. */
	if (err >= 0)
		err = ring_buffer__consume(k->rb);
	k->fn = NULL;
	refresh_dirty(k);
	if (k->fn_err)
		return fail(k->fn_err < 0 ? k->fn_err : -EINVAL);
	if (err < 0 && err != -EINTR)
		return fail(err);
	return (int)(k->events - before);
}

struct stacksnap_procs *kunwind__procs(struct kunwind *k)
{
	return k->procs;
}

struct ktable *kunwind__ktable(struct kunwind *k)
{
	return k->kt;
}

void kunwind__stats(struct kunwind *k, struct kunwind_stats *st)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	uint64_t lost[256];
	uint32_t zero = 0;
	int ncpu = libbpf_num_possible_cpus();

	memset(st, 0, sizeof(*st));
	st->events = k->events;
	st->refreshes = k->refreshes;
	st->last_refresh_ns = k->last_refresh_ns;
	if (ncpu > 0 && ncpu <= 256 &&
	    !bpf_map__lookup_elem(k->skel->maps.ku_lost, &zero, sizeof(zero), lost,
				  sizeof(lost[0]) * (size_t)ncpu, 0))
		for (int i = 0; i < ncpu; i++)
			st->lost += lost[i];
	if (ncpu > 0 && ncpu <= 256) {
		struct ku_cache *c = calloc((size_t)ncpu, sizeof(*c));

		if (c && !bpf_map__lookup_elem(k->skel->maps.ku_row_cache, &zero,
					       sizeof(zero), c, sizeof(*c) * (size_t)ncpu, 0))
			for (int i = 0; i < ncpu; i++) {
				st->cache_hits += c[i].hits;
				st->cache_misses += c[i].misses;
				st->stack_reads += c[i].win_reads;
			}
		free(c);
	}
	/* The event program: the sys_enter one, or the tracepoint's. */
	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(k->link ? k->skel->progs.ku_tracepoint
							     : k->skel->progs.ku_sys_enter),
				     &info, &len)) {
		st->verified_insns = info.verified_insns;
		st->xlated_insns = info.xlated_prog_len / 8;
		st->run_cnt = info.run_cnt;
		st->run_time_ns = info.run_time_ns;
	}
}
