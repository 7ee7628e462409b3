/* cmd_watch.c - `stacksnap watch PID`: stays attached with the walker,
 * samples every thread at an interval (all at one instant), counts
 * identical stacks, and prints a wall-clock profile (where the threads
 * spend their time, waiting included) with what it cost the target. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "help.h"
#include "print.h"
#include "profile_go.h"
#include "profile_out.h"
#include "stacksnap.h"
#include "monotonic.h"
#include "stop_signal.h"
#include "subcommands.h"
#include "watch_waits.h"

enum watch_format { FORMAT_TOP, FORMAT_PROFILE, FORMAT_JSON };

/* Between a root's OS thread name and its runtime name's index (a byte
 * neither a comm nor the folded text's tidying gives). */
#define LABEL_SEP '\x1f'

struct watch_options {
	pid_t pid;
	uint64_t interval_ns, duration_ns; /* duration 0: until Ctrl-C or exit */
	enum watch_format format;
	unsigned limit;		/* stacks in the top table */
	struct profile_out out;	/* FORMAT_PROFILE: -o, --format, --colors */
	bool no_demangle, verbose;
	bool stats;		/* --stats: counts and the library's tables */
	bool goroutines;	/* --goroutines: a Go program's goroutines,
				   not its threads */
	double max_stopped;	/* --max-stopped: the target's stopped share
				   kept near this fraction (1: no bound) */
};

/* The default bound on the share of the run the target spends stopped:
 * 1%, what a production service can give (issue 39: at 11.7% redis lost
 * a third of its throughput); a small C program at 10 ms stays under it,
 * a large or loaded one is sampled less often. */
#define WATCH_MAX_STOPPED 0.01
/* The credit a quiet stretch may save for a busier one, in seconds of
 * run at the bound: a window of about this length is held to the
 * bound, and a run starts with none (a short run stays under it). */
#define WATCH_CREDIT_S 1.0

/* Paces the samples: never closer than the interval asked, and no
 * sooner than the target's stopped time allows (a leaky bucket: debt_ns
 * grows by each sample's stopped time and drains at max_stopped of the
 * wall clock, at least -credit). Counts why the interval was not kept. */
struct pacer {
	double bound;		/* max_stopped */
	double debt_ns;		/* stopped time owed; negative: credit */
	uint64_t last_ns;	/* when debt_ns was last drained */
	uint64_t waited_ns;	/* time waited for the bound beyond the interval */
	size_t slowed;		/* samples the bound delayed */
	size_t late;		/* samples that came late: the walk itself took longer */
};

/* One run. Invariant: stopped_ns holds nsamples entries. */
struct watch {
	struct watch_options o;
	struct options print;	/* what symbolize_thread reads */
	struct stacksnap_target *t;
	struct stacksnap_goroutines *gr; /* --goroutines */
	struct stacksnap_stacks *stacks; /* a sample per thread stack */
	uint64_t *stopped_ns;
	size_t nsamples, capsamples;
	uint64_t thread_samples, truncated;
	struct { pid_t tid; char name[16]; size_t label; } *names;
	size_t nnames, capnames;
	/* The runtime (Java, Python) thread names met (--top, --json): such a thread's stacks
	   are counted under the root "COMM" LABEL_SEP "K", rnames[K] its
	   name, so that threads of one OS name and different runtime names
	   stay apart and the output says both, as the dump does. names[].label
	   is the thread's last K + 1 (0: none yet). */
	char **rnames;
	size_t nrnames, caprnames;
	enum stacksnap_runtime rkind;	/* whose names rnames are */
	bool exited;
	int exit_status;
	struct pacer pace;
	/* The waits that last the run (--top, --json); NULL: not followed. */
	struct watch_waits *waits;
};


static int parse(struct watch_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "duration", required_argument, NULL, 'd' },
		{ "top", no_argument, NULL, 'T' },
		{ "limit", required_argument, NULL, 'n' },
		{ "folded", no_argument, NULL, 'F' },
		PROFILE_OUT_LONGOPTS,
		{ "json", no_argument, NULL, 'J' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "goroutines", no_argument, NULL, 'G' },
		{ "stats", no_argument, NULL, 'S' },
		{ "max-stopped", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, formats = 0;
	bool folded = false;	/* --folded: whatever -o's name says */

	memset(o, 0, sizeof(*o));
	o->interval_ns = 10000000;
	o->limit = 20;
	o->max_stopped = WATCH_MAX_STOPPED;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:i:d:n:o:vh", longopts, NULL)) != -1) {
		int r = profile_out_option(&o->out, "stacksnap watch", c, optarg);

		if (r != 1) {
			if (r)
				return r;
			if (c == PROFILE_OUT_FORMAT) {
				o->format = FORMAT_PROFILE;
				formats++;
			}
			continue;
		}
		switch (c) {
		case 'p': {
			unsigned long v;

			if (parse_uint(optarg, INT_MAX, &v) || !v) {
				fprintf(stderr, "stacksnap watch: -p: '%s' is not a process id\n",
					optarg);
				return EXIT_USAGE;
			}
			o->pid = (pid_t)v;
			break;
		}
		case 'i':
			if (parse_duration(optarg, &o->interval_ns) ||
			    o->interval_ns < 100000) {
				fprintf(stderr, "stacksnap watch: --interval: '%s' is not "
						DURATION_HELP " of at least 100us\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'd':
			if (parse_duration(optarg, &o->duration_ns)) {
				fprintf(stderr, "stacksnap watch: --duration: '%s' is not "
						DURATION_HELP "\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > 1000000) {
				fprintf(stderr, "stacksnap watch: --limit wants a "
						"number of stacks in 1..1000000\n");
				return EXIT_USAGE;
			}
			o->limit = (unsigned)v;
			break;
		}
		case 'T': o->format = FORMAT_TOP; formats++; break;
		case 'F':
			o->format = FORMAT_PROFILE;
			folded = true;
			formats++;
			break;
		case 'J': o->format = FORMAT_JSON; formats++; break;
		case 'D': o->no_demangle = true; break;
		case 'G': o->goroutines = true; break;
		case 'S': o->stats = true; break;
		case 'M': {
			char *end;
			double v = strtod(optarg, &end);

			if (end != optarg && *end == '%')
				end++;
			if (end == optarg || *end || !(v > 0) || v > 100) {
				fprintf(stderr, "stacksnap watch: --max-stopped: '%s' is not a "
						"percentage in (0, 100] (as 1 or 1%%; 100: no bound)\n",
					optarg);
				return EXIT_USAGE;
			}
			o->max_stopped = v / 100;
			break;
		}
		case 'v': o->verbose = true; break;
		case 'h': fputs(help_text("watch"), stdout); return -1;
		default: return EXIT_USAGE; /* getopt said which */
		}
	}
	if (o->format == FORMAT_PROFILE && !o->out.format_set)
		o->out.format = o->out.format_by_name && !folded
			? o->out.format : STACKSNAP_FORMAT_FOLDED;
	if (o->out.output && !formats) {
		o->format = FORMAT_PROFILE; /* -o alone: folded stacks */
		formats++;
	}
	/* --top or --json with -o: that output, into FILE. */
	if (formats > 1 || (o->out.output && o->out.format_set && o->format != FORMAT_PROFILE)) {
		fprintf(stderr, "stacksnap watch: choose one of --top, --folded, "
				"--format and --json\n");
		return EXIT_USAGE;
	}
	/* -p PID, as in every subcommand, or the PID alone. */
	if (!o->pid && optind < argc) {
		unsigned long v;

		if (parse_uint(argv[optind], INT_MAX, &v) || !v) {
			fprintf(stderr, "stacksnap watch: '%s' is not a process id\n",
				argv[optind]);
			return EXIT_USAGE;
		}
		o->pid = (pid_t)v;
		optind++;
	}
	if (!o->pid) {
		fprintf(stderr, "stacksnap watch: which process? (stacksnap watch [-p] PID)\n");
		return EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "stacksnap watch: unexpected argument '%s'\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	return 0;
}

/* The thread's name, read from /proc once per thread. */
static const char *thread_name(struct watch *w, pid_t tid)
{
	char path[64], buf[32] = "";
	FILE *f;

	for (size_t i = 0; i < w->nnames; i++)
		if (w->names[i].tid == tid)
			return w->names[i].name;
	if (w->nnames == w->capnames) {
		size_t cap = w->capnames ? w->capnames * 2 : 64;
		void *n = realloc(w->names, cap * sizeof(*w->names));

		if (!n)
			return "?";
		w->names = n;
		w->capnames = cap;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)w->o.pid, (int)tid);
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	w->names[w->nnames].tid = tid;
	w->names[w->nnames].label = 0;
	snprintf(w->names[w->nnames].name, sizeof(w->names[0].name), "%s",
		 buf[0] ? buf : "?");
	return w->names[w->nnames++].name;
}

/* The thread's names for the waits said at the end (watch_waits.h). */
static const char *waits_name(void *user, pid_t tid, const char **rname, const char **rkind)
{
	struct watch *w = user;
	const char *comm = thread_name(w, tid);

	*rname = NULL;
	*rkind = w->rkind == STACKSNAP_RUNTIME_PYTHON ? "Python" : "Java";
	for (size_t i = 0; i < w->nnames; i++)
		if (w->names[i].tid == tid && w->names[i].label)
			*rname = w->rnames[w->names[i].label - 1];
	return comm;
}

/* The root thread tid's stacks are counted under: its OS name, with its
 * runtime name's index (--top, --json) when it has one. NULL: no memory. */
static const char *thread_root(struct watch *w, pid_t tid, const char *rname,
			       char *buf, size_t len)
{
	const char *comm = thread_name(w, tid);
	size_t i, k;

	if (!rname || w->o.format == FORMAT_PROFILE)
		return comm;
	for (i = 0; i < w->nnames && w->names[i].tid != tid; i++)
		;
	if (i < w->nnames && w->names[i].label &&
	    !strcmp(w->rnames[w->names[i].label - 1], rname)) {
		k = w->names[i].label - 1;
	} else {
		for (k = 0; k < w->nrnames && strcmp(w->rnames[k], rname); k++)
			;
		if (k == w->nrnames) {
			if (w->nrnames == w->caprnames) {
				size_t cap = w->caprnames ? 2 * w->caprnames : 32;
				char **v = realloc(w->rnames, cap * sizeof(*v));

				if (!v)
					return NULL;
				w->rnames = v;
				w->caprnames = cap;
			}
			if (!(w->rnames[k] = strdup(rname)))
				return NULL;
			w->nrnames++;
		}
		if (i < w->nnames)
			w->names[i].label = k + 1;
	}
	snprintf(buf, len, "%s%c%zu", comm, LABEL_SEP, k);
	return buf;
}

/* One sampled thread: its stack counted once (a sample of the wall
 * clock's interval). */
static int on_thread(void *user, const struct stacksnap_walked_thread *th)
{
	struct watch *w = user;
	struct stacksnap_addrspace *as = stacksnap_target__addrspace(w->t);
	struct thread_result r = { .frames = (struct stacksnap_frame *)th->frames,
				   .nframes = (int)th->nframes, .end = th->end,
				   .rframes = (struct stacksnap_runtime_frame *)th->rframes,
				   .nrframes = th->nrframes };
	char rootbuf[48];
	const char *root;
	int err;

	if (th->error)
		return 0;
	if ((err = watch_waits__add(w->waits, th)))
		return err;
	w->thread_samples++;
	if (th->rname)
		w->rkind = th->rname_runtime;
	if (th->end != STACKSNAP_END_COMPLETE)
		w->truncated++;
	err = symbolize_thread(&w->print, as, &r);
	if (!err) {
		root = thread_root(w, th->tid, th->rname, rootbuf, sizeof(rootbuf));
		err = root ? profile_out_add_thread(w->stacks, as, root, &r, 1)
			   : -ENOMEM;
	}
	free(r.out);
	return err;
}

/* --goroutines: every thread stopped while the goroutine list is read
 * and each goroutine walked, then a sample per goroutine as Go's
 * goroutine profile counts them (profile_go_add). Returns the goroutines
 * counted, or -errno. */
static int sample_goroutines(struct watch *w, struct stacksnap_walk_stats *st)
{
	uint64_t t0 = monotonic_ns();
	int err = stacksnap_target__pause(w->t, 0);
	size_t n, counted;

	if (err)
		return err;
	err = stacksnap_goroutines__read(w->gr);
	stacksnap_target__resume(w->t, 0);
	st->stopped_ns = monotonic_ns() - t0;
	if (err)
		return err;
	n = stacksnap_goroutines__count(w->gr);
	for (size_t i = 0; i < n; i++)
		w->truncated += stacksnap_goroutines__get(w->gr, i)->end != NULL;
	err = profile_go_add(w->stacks,
			     n ? stacksnap_goroutines__get(w->gr, 0) : NULL, n,
			     &counted);
	/* The table's shares are of the goroutines counted. */
	w->thread_samples += counted;
	return err ? err : (int)counted;
}

static int on_event(void *user, const struct stacksnap_event *ev)
{
	struct watch *w = user;

	if (ev->type == STACKSNAP_EVENT_EXIT) {
		w->exited = true;
		w->exit_status = ev->status;
	}
	return 0;
}

static void pacer_init(struct pacer *p, double bound, uint64_t now)
{
	*p = (struct pacer){ .bound = bound, .last_ns = now };
}

/* The debt drained up to now, then a sample's stopped time added. */
static void pacer_drain(struct pacer *p, uint64_t now)
{
	double credit = -p->bound * WATCH_CREDIT_S * 1e9;

	p->debt_ns -= p->bound * (double)(now - p->last_ns);
	if (p->debt_ns < credit)
		p->debt_ns = credit;
	p->last_ns = now;
}

/* When the next sample may be taken: at `next` (the interval's beat),
 * or later, when the debt of the samples so far is paid. */
static uint64_t pacer_next(struct pacer *p, uint64_t stopped_ns, uint64_t now,
			   uint64_t next)
{
	uint64_t paid;

	pacer_drain(p, now);
	p->debt_ns += (double)stopped_ns;
	if (p->bound >= 1 || p->debt_ns <= 0)
		return next;
	paid = now + (uint64_t)(p->debt_ns / p->bound);
	if (paid <= next)
		return next;
	p->slowed++;
	p->waited_ns += paid - (next > now ? next : now);
	return paid;
}

/* Sleeps until `until` (monotonic ns) in slices of at most 100 ms, so
 * that a stop signal or the target's exit ends a long wait (the bound
 * may ask for seconds). */
static void wait_until(struct watch *w, struct stacksnap_walker *walker,
		       uint64_t until)
{
	for (;;) {
		uint64_t now = monotonic_ns(), to = until;

		if (stop_signal || now >= until)
			return;
		if (to - now > 100000000u)
			to = now + 100000000u;
		struct timespec ts = { (time_t)(to / 1000000000u),
				       (long)(to % 1000000000u) };
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (to < until) {
			stacksnap_walker__handle_events(walker, false, on_event, w);
			if (w->exited || stacksnap_target__is_terminated(w->t))
				return;
		}
	}
}

/* ---- output ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

struct cost {
	uint64_t median, max, total;
};

static struct cost cost_of(struct watch *w)
{
	struct cost c = { 0 };

	if (!w->nsamples)
		return c;
	for (size_t i = 0; i < w->nsamples; i++)
		c.total += w->stopped_ns[i];
	qsort(w->stopped_ns, w->nsamples, sizeof(uint64_t), cmp_u64);
	c.median = w->stopped_ns[w->nsamples / 2];
	c.max = w->stopped_ns[w->nsamples - 1];
	return c;
}

/* Whether the run kept the interval asked: at least 90% of the samples
 * it asks for over elapsed_ns (the first at the start). */
static bool interval_kept(const struct watch *w, uint64_t elapsed_ns)
{
	double asked = (double)elapsed_ns / (double)w->o.interval_ns;

	return (double)w->nsamples >= 0.9 * asked;
}

static double mean_interval_ms(const struct watch *w, uint64_t elapsed_ns)
{
	return w->nsamples ? (double)elapsed_ns / (double)w->nsamples / 1e6 : 0;
}

static double stopped_share(const struct cost *c, uint64_t elapsed_ns)
{
	return elapsed_ns ? (double)c->total / (double)elapsed_ns : 0;
}

/* Prints the frames of a folded key innermost first: "c <- b <- a". */
static void print_innermost_first(FILE *f, const char *key, bool json)
{
	const char *end = key + strlen(key), *p = end;
	bool first = true;

	while (p > key) {
		const char *q = p;

		while (q > key && q[-1] != ';')
			q--;
		if (q == key)
			break; /* the thread name */
		if (json) {
			char *s = strndup(q, (size_t)(p - q));

			fputs(first ? "" : ", ", f);
			json_str(f, s);
			free(s);
		} else {
			fprintf(f, "%s%.*s", first ? "" : " <- ", (int)(p - q), q);
		}
		first = false;
		p = q - 1;
	}
}

/* A folded key's root: its OS thread name (*comm, *commlen) and its Java
 * name (NULL: none). */
static const char *split_root(const struct watch *w, const char *key,
			      const char **comm, int *commlen)
{
	const char *semi = strchr(key, ';');
	size_t len = semi ? (size_t)(semi - key) : strlen(key);
	const char *sep = memrchr(key, LABEL_SEP, len);

	*comm = key;
	*commlen = (int)len;
	if (sep) {
		char *end;
		unsigned long k = strtoul(sep + 1, &end, 10);

		if (end == key + len && k < w->nrnames) {
			*commlen = (int)(sep - key);
			return w->rnames[k];
		}
	}
	return NULL;
}

/* --goroutines: a key's leading KEY=VALUE fields are its goroutine's
 * labels, as profile_go_add puts them above the stack (status first, then
 * the wait reason and the program's own pprof labels); Go's function
 * names hold no '='. Returns how many; *last: where the last one starts
 * (print_innermost_first takes it for the thread name and skips it). */
static size_t label_fields(const char *key, const char **last)
{
	const char *p = key;
	size_t n = 0;

	*last = key;
	for (;;) {
		const char *semi = strchr(p, ';');
		size_t len = semi ? (size_t)(semi - p) : strlen(p);

		if (!memchr(p, '=', len))
			return n;
		n++;
		*last = p;
		if (!semi)
			return n;
		p = semi + 1;
	}
}

/* Label field i of key (KEY=VALUE, i < label_fields()): its key and value
 * spans. */
static void label_at(const char *key, size_t i, const char **k, int *klen,
		     const char **v, int *vlen)
{
	const char *p = key, *semi, *eq;

	while (i--)
		p = strchr(p, ';') + 1;
	semi = strchr(p, ';');
	eq = memchr(p, '=', semi ? (size_t)(semi - p) : strlen(p));
	*k = p;
	*klen = (int)(eq - p);
	*v = eq + 1;
	*vlen = semi ? (int)(semi - eq - 1) : (int)strlen(eq + 1);
}

/* A goroutine's row of the table: its status, the stack, its other
 * labels in brackets. */
static void print_goroutine_row(FILE *f, const char *key)
{
	const char *last, *k, *v;
	int klen, vlen;
	size_t n = label_fields(key, &last);

	if (!n) {
		fprintf(f, "%-16s ", "?");
		print_innermost_first(f, key, false);
		return;
	}
	label_at(key, 0, &k, &klen, &v, &vlen);
	fprintf(f, "%-16.*s ", vlen, v);
	print_innermost_first(f, last, false);
	for (size_t i = 1; i < n; i++) {
		label_at(key, i, &k, &klen, &v, &vlen);
		fprintf(f, "%s%.*s=%.*s", i == 1 ? "  [" : ", ", klen, k, vlen, v);
	}
	if (n > 1)
		fputc(']', f);
}

static void print_top(FILE *f, struct watch *w, const struct profile_top *e,
		      const struct cost *c, uint64_t elapsed_ns)
{
	if (interval_kept(w, elapsed_ns))
		fprintf(f, "pid %d: %zu samples every %.3g ms over %.2f s",
			(int)w->o.pid, w->nsamples, (double)w->o.interval_ns / 1e6,
			(double)elapsed_ns / 1e9);
	else
		fprintf(f, "pid %d: %zu samples over %.2f s, every %.3g ms on average "
			   "(%.3g ms asked)", (int)w->o.pid, w->nsamples,
			(double)elapsed_ns / 1e9, mean_interval_ms(w, elapsed_ns),
			(double)w->o.interval_ns / 1e6);
	fprintf(f, ", %llu %s stacks (wall clock: waiting included); the target "
		   "stopped %.2f%% of the time\n",
		(unsigned long long)w->thread_samples,
		w->o.goroutines ? "goroutine" : "thread",
		100 * stopped_share(c, elapsed_ns));
	fprintf(f, "%8s %6s  %-16s %s\n", "count", "%",
		w->o.goroutines ? "status" : "thread",
		w->o.goroutines ? "stack (innermost first)  [labels]"
				: "stack (innermost first)");
	for (size_t i = 0; i < e->n && i < w->o.limit; i++) {
		const char *comm, *rname;
		int commlen;

		fprintf(f, "%8llu %5.1f%%  ", (unsigned long long)e->v[i].count,
			100.0 * (double)e->v[i].count / (double)w->thread_samples);
		if (w->o.goroutines) {
			print_goroutine_row(f, e->v[i].text);
			fputc('\n', f);
			continue;
		}
		rname = split_root(w, e->v[i].text, &comm, &commlen);
		if (rname)	/* as the dump says it */
			fprintf(f, "%.*s, %s thread \"%s\" ", commlen, comm,
				w->rkind == STACKSNAP_RUNTIME_PYTHON ? "Python" : "Java", rname);
		else
			fprintf(f, "%-16.*s ", commlen, comm);
		print_innermost_first(f, e->v[i].text, false);
		fputc('\n', f);
	}
	if (e->n > w->o.limit)
		fprintf(f, "(%zu more distinct stacks; --limit N shows more)\n",
			e->n - w->o.limit);
}

/* --goroutines --json: a goroutine's stack, its status and its other
 * labels by name. */
static void print_json_goroutine(FILE *f, const char *key, uint64_t count, size_t i)
{
	const char *last, *k, *v;
	int klen, vlen;
	size_t n = label_fields(key, &last);

	fprintf(f, "%s\n  {\"count\": %llu, \"status\": ", i ? "," : "",
		(unsigned long long)count);
	if (n) {
		char *s;

		label_at(key, 0, &k, &klen, &v, &vlen);
		s = strndup(v, (size_t)vlen);
		json_str(f, s);
		free(s);
	} else {
		fputs("null", f);
	}
	fputs(", \"labels\": {", f);
	for (size_t j = 1; j < n; j++) {
		char *ks, *vs;

		label_at(key, j, &k, &klen, &v, &vlen);
		ks = strndup(k, (size_t)klen);
		vs = strndup(v, (size_t)vlen);
		fputs(j > 1 ? ", " : "", f);
		json_str(f, ks);
		fputs(": ", f);
		json_str(f, vs);
		free(ks);
		free(vs);
	}
	fputs("}, \"frames\": [", f);
	print_innermost_first(f, n ? last : key, true);
	fputs("]}", f);
}

static void print_json_profile(FILE *f, struct watch *w, const struct profile_top *e,
			       const struct cost *c, uint64_t elapsed_ns)
{
	fprintf(f, "{\"pid\": %d, \"interval_ns\": %llu, \"elapsed_ns\": %llu, "
		   "\"samples\": %zu, \"thread_samples\": %llu, \"truncated\": %llu,\n"
		   " \"stopped_ns\": {\"median\": %llu, \"max\": %llu, \"total\": %llu},\n"
		   " \"stopped_share\": %.6f, \"max_stopped_share\": %.6f,\n"
		   " \"interval_kept\": %s, \"mean_interval_ns\": %llu,"
		   " \"slowed_samples\": %zu, \"late_samples\": %zu,\n"
		   " \"exited\": %s,\n \"stacks\": [",
		(int)w->o.pid, (unsigned long long)w->o.interval_ns,
		(unsigned long long)elapsed_ns, w->nsamples,
		(unsigned long long)w->thread_samples, (unsigned long long)w->truncated,
		(unsigned long long)c->median, (unsigned long long)c->max,
		(unsigned long long)c->total, stopped_share(c, elapsed_ns), w->o.max_stopped,
		interval_kept(w, elapsed_ns) ? "true" : "false",
		(unsigned long long)(mean_interval_ms(w, elapsed_ns) * 1e6),
		w->pace.slowed, w->pace.late, w->exited ? "true" : "false");
	for (size_t i = 0; i < e->n; i++) {
		const char *comm, *rname;
		int commlen;
		char *name;

		if (w->o.goroutines) {
			print_json_goroutine(f, e->v[i].text, e->v[i].count, i);
			continue;
		}
		rname = split_root(w, e->v[i].text, &comm, &commlen);
		name = strndup(comm, (size_t)commlen);
		fprintf(f, "%s\n  {\"count\": %llu, \"thread\": ", i ? "," : "",
			(unsigned long long)e->v[i].count);
		json_str(f, name);
		free(name);
		fputs(", \"runtime_name\": ", f); /* the dump's key */
		json_str(f, rname);
		fputs(", \"frames\": [", f);
		print_innermost_first(f, e->v[i].text, true);
		fputs("]}", f);
	}
	fputs("\n]", f);
	watch_waits__print_json(f, w->waits);
	fputs("}\n", f);
}

/* A first walk, not counted, reads the unwind tables and symbols of the
 * modules met (tens to hundreds of ms the first time): it must not eat
 * into the sampling. */
static void warm_up(const struct watch *w, struct stacksnap_unwinder *uw)
{
	struct watch warm = *w;

	warm.stacks = stacksnap_stacks__new(NULL);
	if (!warm.stacks)
		return;
	warm.names = NULL;
	warm.nnames = warm.capnames = 0;
	warm.rnames = NULL;
	warm.nrnames = warm.caprnames = 0;
	warm.waits = NULL;
	stacksnap_target__walk(w->t, NULL, 0, uw, on_thread, &warm, NULL);
	stacksnap_stacks__free(warm.stacks);
	free(warm.names);
	for (size_t i = 0; i < warm.nrnames; i++)
		free(warm.rnames[i]);
	free(warm.rnames);
}

/* On stderr: what the samples cost the target, --stats, and how the
 * target ended if it did. */
static void print_cost(const struct watch *w, struct stacksnap_ctx *ctx,
		       const struct cost *c, uint64_t elapsed)
{
	fprintf(stderr, "stacksnap watch: cost to the target: stopped %.1f us per "
			"sample (median; max %.1f us), %.2f ms in all over %zu samples: "
			"stopped %.3f%% of %.2f s (bound %.3g%%, --max-stopped)\n",
		(double)c->median / 1e3, (double)c->max / 1e3, (double)c->total / 1e6,
		w->nsamples, 100 * stopped_share(c, elapsed), (double)elapsed / 1e9,
		100 * w->o.max_stopped);
	if (!interval_kept(w, elapsed)) {
		fprintf(stderr, "stacksnap watch: interval not kept: %zu samples in %.2f s, "
				"every %.3g ms on average where %.3g ms was asked:",
			w->nsamples, (double)elapsed / 1e9, mean_interval_ms(w, elapsed),
			(double)w->o.interval_ns / 1e6);
		if (w->pace.slowed)
			fprintf(stderr, " %zu delayed (%.2f s in all) to keep the target "
					"stopped under %.3g%% of the run (--max-stopped PCT "
					"raises it)%s", w->pace.slowed,
				(double)w->pace.waited_ns / 1e9, 100 * w->o.max_stopped,
				w->pace.late ? ";" : "");
		if (w->pace.late)
			fprintf(stderr, " %zu late: a sample's walk took longer than the "
					"interval (a loaded machine, or many threads)",
				w->pace.late);
		fputc('\n', stderr);
	}
	if (w->o.stats) {
		struct stacksnap_ctx_stats cs = { .sz = sizeof(cs) };

		fprintf(stderr, "stacksnap watch: %zu samples, %" PRIu64 " thread "
				"stacks (%" PRIu64 " truncated), %zu distinct stacks\n",
			w->nsamples, w->thread_samples, w->truncated,
			stacksnap_stacks__distinct(w->stacks));
		stacksnap_ctx__stats(ctx, &cs);
		cli_print_table_stats(stderr, "stacksnap watch", &cs);
	}
	if (w->exited)
		fprintf(stderr, "stacksnap watch: pid %d exited (%s %d)\n",
			(int)w->o.pid,
			WIFSIGNALED(w->exit_status) ? "signal" : "status",
			WIFSIGNALED(w->exit_status) ? WTERMSIG(w->exit_status)
						   : WEXITSTATUS(w->exit_status));
}

int watch_main(int argc, char **argv)
{
	struct watch w = { 0 };
	struct stacksnap_ctx *ctx = NULL;
	struct stacksnap_walker *walker = NULL;
	struct stacksnap_unwinder *uw = NULL;
	struct profile_top e = { 0 };
	FILE *out = NULL;
	int rc;

	rc = parse(&w.o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	cli_verbose = w.o.verbose;
	signal(SIGPIPE, SIG_IGN);
	stop_signal_catch(); /* no SA_RESTART: the sleep ends */
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = w.o.verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR,
		       .cache_dir = default_cache_dir());
	ctx = stacksnap_ctx__new(&copts);
	walker = ctx ? stacksnap_walker__new(ctx, NULL) : NULL;
	uw = stacksnap_unwinder__new(NULL);
	w.print.no_demangle = w.o.no_demangle;
	/* --goroutines: Go's sample type, as profile --goroutines. */
	STACKSNAP_OPTS(stacksnap_stacks_opts, sopts, .period_ns = w.o.interval_ns,
		       .period_type = "wall",
		       .sample_type = w.o.goroutines ? "goroutine" : NULL,
		       .sample_unit = w.o.goroutines ? "count" : NULL,
		       .time_ns = (uint64_t)time(NULL) * 1000000000ull);
	w.stacks = stacksnap_stacks__new(&sopts);
	if (!ctx || !walker || !uw || !w.stacks) {
		fprintf(stderr, "stacksnap watch: %s\n", strerror(errno));
		rc = EXIT_ERROR;
		goto out;
	}
	if (w.o.format == FORMAT_PROFILE && !(out = profile_out_open(&w.o.out, "stacksnap watch"))) {
		rc = EXIT_ERROR;
		goto out;
	}
	if (w.o.format != FORMAT_PROFILE && w.o.out.output) {
		if (!freopen(w.o.out.output, "w", stdout)) {
			fprintf(stderr, "stacksnap watch: cannot write %s: %s\n",
				w.o.out.output, strerror(errno));
			rc = EXIT_ERROR;
			goto out;
		}
		cli_stdout_path = w.o.out.output; /* cli_close_output names it */
	}
	if ((rc = cli_check_not_thread(w.o.pid)))
		goto out;
	/* The library has said what is wrong with the target. */
	w.t = stacksnap_walker__attach(walker, w.o.pid);
	if (!w.t) {
		rc = exit_code_for_errno(errno);
		goto out;
	}
	if (w.o.goroutines && !(w.gr = stacksnap_goroutines__open(ctx, w.o.pid))) {
		fprintf(stderr, "stacksnap watch: pid %d: %s\n", (int)w.o.pid,
			errno == ENOENT ? "not a Go program (--goroutines)"
					: strerror(errno));
		rc = EXIT_ERROR;
		goto out;
	}
	/* Who waits for whom at each sample (locks only, after the thaw):
	   what lasts the whole run is said at the end. */
	if (!w.gr && w.o.format != FORMAT_PROFILE &&
	    !(w.waits = watch_waits__new(ctx, w.o.pid, waits_name, &w))) {
		rc = EXIT_ERROR;
		goto out;
	}
	warm_up(&w, uw);
	uint64_t start = monotonic_ns(), next = start;
	uint64_t end = w.o.duration_ns ? start + w.o.duration_ns : UINT64_MAX;
	pacer_init(&w.pace, w.o.max_stopped, start);
	while (!stop_signal) {
		struct stacksnap_walk_stats st = { .sz = sizeof(st) };
		uint64_t now;

		stacksnap_walker__handle_events(walker, false, on_event, &w);
		if (w.exited || stacksnap_target__is_terminated(w.t))
			break;
		if (w.nsamples == w.capsamples) {
			size_t cap = w.capsamples ? w.capsamples * 2 : 1024;
			uint64_t *v = realloc(w.stopped_ns, cap * sizeof(*v));

			if (!v) {
				rc = EXIT_ERROR;
				goto out;
			}
			w.stopped_ns = v;
			w.capsamples = cap;
		}
		int n = w.gr ? sample_goroutines(&w, &st)
			     : stacksnap_target__walk(w.t, NULL, 0, uw, on_thread, &w, &st);
		if (n < 0 && (w.gr ? n == -ESRCH : errno == ESRCH))
			break; /* exited: its event comes next round */
		if (n >= 0)
			w.stopped_ns[w.nsamples++] = st.stopped_ns;
		if (!w.gr)
			watch_waits__sample(w.waits, stacksnap_target__addrspace(w.t), n >= 0);
		next += w.o.interval_ns;
		now = monotonic_ns();
		if (next <= now) { /* late (a loaded machine): no burst to catch up */
			w.pace.late++;
			next = now;
		}
		next = pacer_next(&w.pace, n >= 0 ? st.stopped_ns : 0, now, next);
		if (now >= end)
			break;
		wait_until(&w, walker, next < end ? next : end);
		if (monotonic_ns() >= end)
			break;
	}
	uint64_t elapsed = monotonic_ns() - start;
	stacksnap_walker__handle_events(walker, false, on_event, &w);
	/* Let the target go before printing (a slow pipe must not hold it). */
	stacksnap_target__detach(w.t);
	w.t = NULL;
	stacksnap_walker__free(walker);
	walker = NULL;
	struct cost c = cost_of(&w);
	char title[64];
	snprintf(title, sizeof(title), "stacksnap watch %d", (int)w.o.pid);
	if (w.o.format == FORMAT_PROFILE) {
		rc = profile_out_write(&w.o.out, "stacksnap watch", out, w.stacks, title);
		out = NULL; /* closed */
		if (rc)
			goto out;
	} else if (profile_out_top(w.stacks, &e)) {
		fprintf(stderr, "stacksnap watch: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	} else if (w.o.format == FORMAT_JSON)
		print_json_profile(stdout, &w, &e, &c, elapsed);
	else {
		print_top(stdout, &w, &e, &c, elapsed);
		watch_waits__print_text(stdout, w.waits, elapsed);
	}
	print_cost(&w, ctx, &c, elapsed);
	/* Ctrl-C is how a watch without --duration ends. */
	rc = stop_signal && stop_signal != SIGINT ? EXIT_SIGNAL_BASE + stop_signal
						  : EXIT_OK;
	rc = cli_close_output(stdout, NULL, rc);
out:
	stacksnap_goroutines__free(w.gr);
	watch_waits__free(w.waits);
	if (w.t)
		stacksnap_target__detach(w.t);
	stacksnap_walker__free(walker);
	stacksnap_unwinder__free(uw);
	profile_out_abandon(&w.o.out, out); /* not written: a failed run */
	stacksnap_stacks__free(w.stacks);
	profile_out_top_free(&e);
	free(w.stopped_ns);
	free(w.names);
	for (size_t i = 0; i < w.nrnames; i++)
		free(w.rnames[i]);
	free(w.rnames);
	stacksnap_ctx__free(ctx);
	return rc;
}
