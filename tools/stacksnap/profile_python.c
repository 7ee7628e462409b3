/* profile_python.c - `stacksnap profile` of a Python process: the trace's
 * eBPF sampling program (a cpu-clock event per CPU) copies each sample's
 * user stack and walks the thread's Python frame chain in the kernel; the
 * trace unwinds the copy, names the Python frames and merges them into the
 * native ones; each sample then counts in the aggregated stacks, Python
 * frames as functions with file:line. The perf-event path of
 * cmd_profile.c cannot read the chain at the sample's instant. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "print.h"
#include "profile_empty.h"
#include "profile_out.h"
#include "profile_python.h"
#include "child_cmd.h"
#include "monotonic.h"
#include "stop_signal.h"

struct sampler {
	const struct sampled_args *a;
	struct options print;		/* what symbolize_thread reads */
	struct stacksnap_stacks *stacks;
	uint64_t samples, python_samples;	/* (or Ruby's) */
	bool ruby;			/* the runtime frames are Ruby's */
	int error;
};

static int on_sample(const struct stacksnap_trace_event *ev, void *user)
{
	struct sampler *s = user;
	struct thread_result r = {
		.frames = (struct stacksnap_frame *)ev->frames, .nframes = ev->nframes,
		.end = ev->end,
		.rframes = (struct stacksnap_runtime_frame *)ev->rframes,
		.nrframes = ev->nrframes,
	};
	int err;

	s->samples++;
	s->python_samples += ev->nrframes > 0;
	if (ev->nrframes)
		s->ruby = ev->rframes[0].runtime == STACKSNAP_RUNTIME_RUBY;
	if (symbolize_thread(&s->print, ev->as, &r))
		goto nomem;
	if (s->a->runtime == RUNTIME_ONLY && r.nrframes) {
		/* The Python frames alone, as py-spy shows them. */
		r.nout = 0;
		r.end = ev->runtime_end ? STACKSNAP_END_FRAME_LIMIT : STACKSNAP_END_COMPLETE;
	}
	err = profile_out_add_thread(s->stacks, ev->as, ev->comm && *ev->comm ? ev->comm : "?",
				     &r, 1);
	free(r.out);
	if (!err)
		return 0;
nomem:
	s->error = ENOMEM;
	return -ENOMEM;
}

static int exit_for(int err)
{
	switch (err) {
	case -EPERM: case -EACCES: return EXIT_NOT_PERMITTED;
	case -ESRCH: case -ENOENT: return EXIT_NO_PROCESS;
	}
	return EXIT_ERROR;
}

int profile_python_run(const struct sampled_args *a)
{
	struct sampler s = { .a = a };
	struct stacksnap_trace *tr = NULL;
	struct stacksnap_trace_stats st;
	struct timespec cpu0, cpu1;
	FILE *out = NULL;
	pid_t child = -1, leader = -1, target = a->pid;
	int go_fd = -1, err_fd = -1;
	int rc = EXIT_ERROR, r, child_status = 0;
	uint64_t t0;
	struct cpu_use cpu = { 0 };	/* -p's CPU time at the start: why no samples */

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
	s.print.no_demangle = a->no_demangle;
	s.print.runtime = a->runtime;
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts,
		       .period_ns = 1000000000ull / a->freq,
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	s.stacks = stacksnap_stacks__new(&sopts);
	if (!s.stacks) {
		fprintf(stderr, "stacksnap: out of memory\n");
		goto out;
	}
	if (!(out = profile_out_open(a->out, "stacksnap profile")))
		goto out;
	STACKSNAP_OPTS(stacksnap_trace_opts, topts, .stack_size = a->stack_size,
		       .max_frames = a->max_stack, .pid_hint = a->pid,
		       .no_runtime = a->runtime == RUNTIME_OFF);
	tr = stacksnap_trace__new(a->ctx, &topts);
	if (!tr)
		goto out; /* the log said why */
	if ((r = stacksnap_trace__add_sampling(tr, a->freq)) < 0) {
		rc = exit_for(r);
		goto out;
	}
	if (a->cmd) {
		child = leader = child_cmd_spawn(a->cmd, &go_fd, &err_fd);
		if (child < 0) {
			fprintf(stderr, "stacksnap profile: cannot start '%s': %s\n",
				a->cmd[0], strerror(errno));
			rc = EXIT_CANNOT_RUN;
			goto out;
		}
		target = child;
	}
	stop_signal_catch();
	if ((r = stacksnap_trace__start(tr)) || (r = stacksnap_trace__follow(tr, target))) {
		rc = exit_for(r); /* the log said why */
		goto out;
	}
	/* Let CMD exec, followed from its first instruction. */
	if (go_fd >= 0 &&
	    (rc = child_cmd_release("stacksnap profile", a->cmd, &go_fd, err_fd)))
		goto out;
	t0 = monotonic_ns();
	cpu_use_begin(&cpu, a->pid);
	rc = EXIT_OK;
	while (!stop_signal && !s.error) {
		r = stacksnap_trace__poll(tr, 100, on_sample, &s);
		if (r < 0 && r != -EINTR && !s.error) {
			fprintf(stderr, "stacksnap profile: reading samples: %s\n", strerror(-r));
			rc = EXIT_ERROR;
			break;
		}
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child = -1;
			break;
		}
		if (a->pid && kill(a->pid, 0) && errno == ESRCH)
			break;
		if (a->duration > 0 && monotonic_ns() - t0 >= (uint64_t)(a->duration * 1e9))
			break;
	}
	stacksnap_trace__stop(tr);
	while (!s.error && stacksnap_trace__poll(tr, 0, on_sample, &s) > 0)
		;
	if (s.error) {
		fprintf(stderr, "stacksnap profile: %s\n", strerror(s.error));
		rc = EXIT_ERROR;
	}
	if (rc == EXIT_OK) {
		rc = profile_out_write(a->out, "stacksnap profile", out, s.stacks,
				       a->cmd ? a->cmd[0] : "stacksnap profile");
		out = NULL; /* closed */
		if (!s.samples)
			profile_say_no_samples(&cpu, a->cmd, a->freq);
	}
	stacksnap_trace__stats(tr, &st);
	if (a->stats) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
		fprintf(stderr, "profile: %" PRIu64 " samples (eBPF), %" PRIu64 " with %s "
			"frames, %" PRIu64 " lost, %zu distinct stacks, %.3f s CPU\n",
			s.samples, s.python_samples, s.ruby ? "Ruby" : "Python", st.lost,
			stacksnap_stacks__distinct(s.stacks),
			(double)(cpu1.tv_sec - cpu0.tv_sec) + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e9);
	}
	if (st.lost)
		fprintf(stderr, "stacksnap profile: %" PRIu64 " samples lost (ring buffer "
			"full; lower -F or --stack-size)\n", st.lost);
	if (stop_signal && stop_signal != SIGINT)
		rc = EXIT_SIGNAL_BASE + stop_signal;
out:
	/* What is left of the command's process group (--duration ended
	 * the profile before it did, or a stop signal) is ended and reaped. */
	if (leader > 0)
		child_cmd_end(leader, child <= 0, stop_signal, &child_status);
	if (go_fd >= 0)
		close(go_fd);
	if (err_fd >= 0)
		close(err_fd);
	profile_out_abandon(a->out, out); /* not written: a failed run */
	stacksnap_trace__free(tr);
	stacksnap_stacks__free(s.stacks);
	return rc;
}

static bool named_python(const char *path)
{
	const char *base = strrchr(path, '/');

	/* (or ruby: the same eBPF walk reads Ruby's frames) */
	return !strncmp(base ? base + 1 : path, "python", 6) ||
	       !strncmp(base ? base + 1 : path, "ruby", 4);
}

static bool named_env(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strcmp(base ? base + 1 : path, "env");
}

/* The program env runs: its first word that is neither an option nor a
 * NAME=VALUE (NULL: none). */
static const char *env_program(char *const *words, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (words[i][0] != '-' && !strchr(words[i], '='))
			return words[i];
	return NULL;
}

/* name looked up as execvp does: a name with a slash is a path, else
 * the first executable regular file of that name on PATH. */
static bool find_program(const char *name, char *path, size_t size)
{
	const char *dirs = getenv("PATH");
	struct stat st;

	if (strchr(name, '/')) {
		snprintf(path, size, "%s", name);
		return true;
	}
	if (!dirs)
		dirs = "/usr/local/bin:/bin:/usr/bin";
	while (*dirs) {
		size_t len = strcspn(dirs, ":");

		snprintf(path, size, "%.*s%s%s", (int)len, dirs, len ? "/" : "", name);
		if (!stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK))
			return true;
		dirs += len + (dirs[len] == ':');
	}
	return false;
}

bool profile_python_command(char *const *cmd)
{
	char path[4096], prog[256], real[PATH_MAX], line[256];
	char *words[8];
	const char *name = cmd[0];
	size_t n = 0;

	if (name && named_env(name)) {
		while (cmd[n + 1])
			n++;
		name = env_program(cmd + 1, n);
	}
	for (int depth = 0; name && depth < 5; depth++) {
		FILE *f;
		size_t nw = 0;
		char *save, *w;

		if (named_python(name))
			return true;
		if (!find_program(name, path, sizeof(path)))
			return false;
		if (realpath(path, real) && named_python(real))
			return true;
		if (!(f = fopen(path, "re")))
			return false;
		if (!fgets(line, sizeof(line), f) || strncmp(line, "#!", 2)) {
			fclose(f);
			return false;
		}
		fclose(f);
		for (w = strtok_r(line + 2, " \t\r\n", &save); w && nw < 8;
		     w = strtok_r(NULL, " \t\r\n", &save))
			words[nw++] = w;
		if (!nw)
			return false;
		name = named_env(words[0]) ? env_program(words + 1, nw - 1) : words[0];
		if (name) {
			snprintf(prog, sizeof(prog), "%s", name);
			name = prog;
		}
	}
	return false;
}

bool profile_bpf_permitted(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f;

	if (geteuid() == 0)
		return true;
	if (!(f = fopen("/proc/self/status", "re")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	/* CAP_SYS_ADMIN 21; CAP_PERFMON 38 and CAP_BPF 39 together. */
	return (eff >> 21 & 1) || ((eff >> 38 & 1) && (eff >> 39 & 1));
}
