/* ss_kunwind.c - test and benchmark driver of the in-kernel unwinder: runs
 * a command (or follows a pid) under the kunwind BPF program attached to a
 * syscall or tracepoint, and prints one JSON line per event with the
 * in-kernel frames, the user-space unwinder's frames of a stack copy taken
 * at the same event (both mode) and whether they agree, then a stats line.
 *
 *   ss_kunwind [--mode kernel|both|copy] [--syscall NR | --tp CAT:NAME]
 *              [--max-frames N] [--quiet] (-p PID [-p PID...] | -- CMD [ARGS...])
 * With -p it ends when every pid has exited. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "addrspace/module.h"
#include "bpf/kunwind_session.h"
#include "stacksnap.h"

static volatile sig_atomic_t stop;

struct driver {
	struct kunwind *k;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame frames[KU_MAX_FRAMES];
	struct stacksnap_frame hframes[KU_MAX_FRAMES]; /* the hybrid's */
	int mode;
	bool quiet;
	unsigned agree, prefix, user_prefix, differ, fallback, compared;
	unsigned kernel_complete;
	unsigned hybrid, hybrid_same; /* walks user space went on with, and
					 how many equal the copy's walk */
	uint64_t bytes;		/* event bytes received (frames + copy) */
	uint64_t first_ns;	/* first event's time */
};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void log_cb(enum stacksnap_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= STACKSNAP_LOG_WARN || getenv("SS_KUNWIND_DEBUG"))
		fprintf(stderr, "ss_kunwind: %s\n", msg);
}

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void print_str(const char *s, size_t max)
{
	putchar('"');
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_frame(struct stacksnap_addrspace *as, uint64_t pc, bool exact,
			bool first)
{
	struct stacksnap_sym sym;
	int n = as ? stacksnap_addrspace__symbolize(as, pc, !exact, STACKSNAP_SYM_SYMTAB,
						    &sym, 1)
		   : 0;

	printf("%s{\"pc\":\"%#llx\",\"exact\":%s,\"function\":", first ? "" : ",",
	       (unsigned long long)pc, exact ? "true" : "false");
	if (n > 0 && sym.function)
		print_str(sym.function, SIZE_MAX);
	else
		printf("null");
	printf(",\"module\":");
	if (n > 0 && sym.module)
		print_str(sym.module, SIZE_MAX);
	else
		printf("null");
	printf("}");
}

static int on_event(void *user, const struct ku_event *ev, const uint64_t *pcs,
		    const uint8_t *stack)
{
	struct driver *d = user;
	struct stacksnap_procs *procs = kunwind__procs(d->k);
	struct stacksnap_addrspace *as = stacksnap_procs__addrspace(procs, (pid_t)ev->pid);
	enum stacksnap_end uend = STACKSNAP_END_NONE;
	int un = -1;

	if (!d->first_ns)
		d->first_ns = ev->time_ns;
	d->bytes += sizeof(*ev) + ev->nframes * 8ull + (stack ? ev->stack_len : 0);
	if (ev->end == KU_END_COMPLETE)
		d->kernel_complete++;
	if (stack) {
		struct stacksnap_regs regs = { .valid = 0 };
		STACKSNAP_OPTS(stacksnap_sample, s, .pid = (pid_t)ev->pid,
			       .tid = (pid_t)ev->tid, .regs = &regs, .stack = stack,
			       .stack_len = ev->stack_len,
			       .stack_start = ev->stack_start);

		regs.regs[STACKSNAP_REG_RIP] = ev->regs_ip;
		regs.regs[STACKSNAP_REG_RSP] = ev->regs_sp;
		regs.regs[STACKSNAP_REG_RBP] = ev->regs_bp;
		regs.regs[STACKSNAP_REG_RBX] = ev->regs_bx;
		regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
			     1u << STACKSNAP_REG_RBP | 1u << STACKSNAP_REG_RBX;
		un = stacksnap_procs__unwind_sample(procs, d->uw, &s, d->frames,
						    KU_MAX_FRAMES, &uend);
	}
	/* The hybrid: where the kernel stopped at something user space can
	 * go past, the copy's walk from the stop frame completes it. */
	enum stacksnap_end hend = STACKSNAP_END_NONE;
	int hn = -1;
	if (stack && ev->nframes && ktable__can_continue(ev->end)) {
		struct ku_end_state es = {
			.pc = pcs[ev->nframes - 1], .sp = ev->end_sp,
			.rbp = ev->end_rbp, .rbx = ev->end_rbx,
			.valid = ev->end_valid, .end = ev->end,
		};
		int k = ev->nframes - 1;
		int c = ktable__continue_walk(procs, d->uw, (pid_t)ev->pid, (pid_t)ev->tid,
					      &es, stack, ev->stack_len, ev->stack_start,
					      d->hframes + k, KU_MAX_FRAMES - (size_t)k,
					      &hend);

		if (c > 0) {
			for (int i = 0; i < k; i++)
				d->hframes[i] = (struct stacksnap_frame){
					.pc = pcs[i] & ~KU_PC_EXACT };
			hn = k + c;
			d->hybrid++;
		}
	}
	/* Agreement: same pcs where both have frames. Either walk may stop
	 * earlier for a reason the other goes past: the kernel at rows that
	 * need DWARF, at tables not loaded yet (fallback); user space at the
	 * end of the stack copy. Then the shorter must be a prefix. */
	const char *agreement = "n/a";
	int first_diff = -1;
	if (un >= 0 && (ev->flags & KU_EV_KERNEL)) {
		int n = un < ev->nframes ? un : ev->nframes;

		for (int i = 0; i < n && first_diff < 0; i++)
			if ((pcs[i] & ~KU_PC_EXACT) != d->frames[i].pc)
				first_diff = i;
		d->compared++;
		if (first_diff >= 0) {
			agreement = "differ";
			d->differ++;
		} else if (ev->end == KU_END_NO_PROC || ev->end == KU_END_NO_MAPPING ||
			   ev->end == KU_END_NOT_LOADED) {
			/* The kernel did not know the code yet: this event's
			 * frames come from the copy (the hybrid). */
			agreement = "fallback";
			d->fallback++;
		} else if (un == ev->nframes) {
			agreement = "same";
			d->agree++;
		} else if (ev->nframes < un) {
			agreement = "kernel-prefix";
			d->prefix++;
		} else {
			agreement = "user-prefix";
			d->user_prefix++;
		}
	}
	bool hsame = false;
	if (hn >= 0 && un >= 0) {
		hsame = hn == un;
		for (int i = 0; hsame && i < hn; i++)
			hsame = d->hframes[i].pc == d->frames[i].pc;
		d->hybrid_same += hsame;
	}
	if (d->quiet)
		return 0;
	printf("{\"pid\":%u,\"tid\":%u,\"comm\":", ev->pid, ev->tid);
	print_str(ev->comm, sizeof(ev->comm));
	printf(",\"id\":%u,\"time_ns\":%llu,"
	       "\"kernel\":%s,\"end\":\"%s\",\"bytes\":%llu,\"frames\":[",
	       ev->event_id,
	       (unsigned long long)ev->time_ns,
	       ev->flags & KU_EV_KERNEL ? "true" : "false", kunwind_end__str(ev->end),
	       (unsigned long long)(sizeof(*ev) + ev->nframes * 8ull));
	for (unsigned i = 0; i < ev->nframes; i++)
		print_frame(as, pcs[i] & ~KU_PC_EXACT, pcs[i] & KU_PC_EXACT, i == 0);
	printf("]");
	if (un >= 0) {
		printf(",\"user_end\":\"%s\",\"agreement\":\"%s\",\"first_diff\":%d,"
		       "\"stack_len\":%u,\"user_frames\":[",
		       stacksnap_end__str(uend), agreement, first_diff, ev->stack_len);
		for (int i = 0; i < un; i++)
			print_frame(as, d->frames[i].pc,
				    i == 0 || (d->frames[i].flags & STACKSNAP_FRAME_SIGNAL),
				    i == 0);
		printf("]");
	}
	if (hn >= 0) {
		printf(",\"hybrid_end\":\"%s\",\"hybrid_same\":%s,\"hybrid_frames\":[",
		       stacksnap_end__str(hend), un < 0 ? "null" : hsame ? "true" : "false");
		for (int i = 0; i < hn; i++)
			print_frame(as, d->hframes[i].pc,
				    i < ev->nframes ? (pcs[i] & KU_PC_EXACT) != 0 : false,
				    i == 0);
		printf("]");
	}
	printf("}\n");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ss_kunwind [--mode kernel|both|copy] [--syscall NR | "
			"--tp CAT:NAME] [--max-frames N] [--quiet] (-p PID | -- CMD...)\n");
	return 2;
}

int main(int argc, char **argv)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .log = log_cb,
		       .log_level = STACKSNAP_LOG_DEBUG);
	struct kunwind_opts ko = { .mode = KU_MODE_KERNEL, .syscall = -1 };
	struct driver d = { .mode = KU_MODE_KERNEL };
	struct kunwind_stats ks;
	struct ktable_stats ts;
	struct stacksnap_ctx *ctx;
	pid_t pids[64], pid = 0, child = 0;
	size_t npids = 0;
	int i, gate[2] = { -1, -1 }, status = 0, rc = 0;
	char **cmd = NULL;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			const char *m = argv[++i];

			ko.mode = !strcmp(m, "kernel") ? KU_MODE_KERNEL
				: !strcmp(m, "both")   ? KU_MODE_BOTH
				: !strcmp(m, "copy")   ? KU_MODE_COPY : 0;
			if (!ko.mode)
				return usage();
		} else if (!strcmp(argv[i], "--syscall") && i + 1 < argc) {
			ko.syscall = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--tp") && i + 1 < argc) {
			ko.tracepoint = argv[++i];
		} else if (!strcmp(argv[i], "--max-frames") && i + 1 < argc) {
			ko.max_frames = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--quiet")) {
			d.quiet = true;
		} else if (!strcmp(argv[i], "-p") && i + 1 < argc) {
			if (npids == sizeof(pids) / sizeof(pids[0]))
				return usage();
			pid = pids[npids++] = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--")) {
			cmd = argv + i + 1;
			break;
		} else {
			return usage();
		}
	}
	if ((!pid) == (!cmd || !*cmd))
		return usage();
	d.mode = ko.mode;
	ctx = stacksnap_ctx__new(&co);
	d.uw = stacksnap_unwinder__new(NULL);
	if (!ctx || !d.uw)
		return 1;
	d.k = kunwind__open(ctx, &ko);
	if (!d.k) {
		fprintf(stderr, "ss_kunwind: cannot start the in-kernel unwinder: %s\n",
			strerror(errno));
		return 1;
	}
	if (cmd) {
		/* The child waits until it is followed, then execs: no event
		 * of the command is missed. */
		if (pipe(gate))
			return 1;
		child = fork();
		if (child == 0) {
			char c;

			close(gate[1]);
			if (read(gate[0], &c, 1) != 1)
				_exit(127);
			close(gate[0]);
			execvp(cmd[0], cmd);
			fprintf(stderr, "ss_kunwind: %s: %s\n", cmd[0], strerror(errno));
			_exit(127);
		}
		close(gate[0]);
		pid = pids[npids++] = child;
	}
	for (size_t j = 0; j < npids; j++) {
		if (kunwind__add_pid(d.k, pids[j], child != 0)) {
			fprintf(stderr, "ss_kunwind: pid %d: cannot follow it: %s\n",
				pids[j], strerror(errno));
			if (child)
				kill(child, SIGKILL);
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "ss_kunwind: ready\n");
	if (child) {
		if (write(gate[1], "g", 1) != 1)
			return 1;
		close(gate[1]);
	}
	while (!stop) {
		int err = kunwind__poll(d.k, 50, on_event, &d);

		if (err < 0) {
			fprintf(stderr, "ss_kunwind: %s\n", strerror(-err));
			rc = 1;
			break;
		}
		fflush(stdout);
		if (child && waitpid(child, &status, WNOHANG) == child)
			break;
		if (!child) {
			size_t alive = 0;

			for (size_t j = 0; j < npids; j++)
				alive += !(kill(pids[j], 0) && errno == ESRCH);
			if (!alive)
				break;
		}
	}
	kunwind__poll(d.k, 0, on_event, &d); /* what is left */
	kunwind__stats(d.k, &ks);
	ktable__stats(kunwind__ktable(d.k), &ts);
	printf("{\"stats\":{\"events\":%llu,\"lost\":%llu,\"refreshes\":%llu,"
	       "\"verified_insns\":%u,\"xlated_insns\":%u,\"run_cnt\":%llu,"
	       "\"run_time_ns\":%llu,\"modules\":%u,\"rows\":%zu,\"table_bytes\":%zu,"
	       "\"fixed_bytes\":%zu,\"compile_ns\":%llu,\"load_ns\":%llu,"
	       "\"last_refresh_ns\":%llu,\"bytes\":%llu,\"kernel_complete\":%u,"
	       "\"compared\":%u,\"same\":%u,\"kernel_prefix\":%u,\"user_prefix\":%u,"
	       "\"differ\":%u,\"fallback\":%u,\"cache_hits\":%llu,"
	       "\"cache_misses\":%llu,\"stack_reads\":%llu,\"hybrid\":%u,"
	       "\"hybrid_same\":%u,"
	       "\"exit_status\":%d}}\n",
	       (unsigned long long)ks.events, (unsigned long long)ks.lost,
	       (unsigned long long)ks.refreshes, ks.verified_insns, ks.xlated_insns,
	       (unsigned long long)ks.run_cnt, (unsigned long long)ks.run_time_ns,
	       ts.modules, ts.rows, ts.table_bytes, ts.fixed_bytes,
	       (unsigned long long)ts.compile_ns, (unsigned long long)ts.load_ns,
	       (unsigned long long)ks.last_refresh_ns, (unsigned long long)d.bytes,
	       d.kernel_complete, d.compared, d.agree, d.prefix, d.user_prefix, d.differ,
	       d.fallback, (unsigned long long)ks.cache_hits,
	       (unsigned long long)ks.cache_misses, (unsigned long long)ks.stack_reads,
	       d.hybrid, d.hybrid_same,
	       child ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status))
		     : 0);
	kunwind__close(d.k);
	stacksnap_unwinder__free(d.uw);
	stacksnap_ctx__free(ctx);
	return rc;
}
