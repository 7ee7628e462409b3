/* perf_script.c - `stacksnap perf-script FILE`: reads a perf.data recorded
 * with --call-graph dwarf, follows its processes, unwinds each sample's
 * user stack and prints it in the text layout of `perf script` (or, with
 * --folded, as collapsed stacks with counts). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "help.h"

#include "options.h"
#include "perf_script.h"
#include "sample_frames.h"
#include "profile_out.h"
#include "stacksnap.h"
#include "subcommands.h"

#define PERF_SAMPLE_CPU (1ull << 7)

struct ps_options {
	const char *file;
	struct profile_out out;	/* -o, --format, --colors */
	bool aggregate;		/* --folded / --format: stacks, not samples */
	bool no_demangle, stats, verbose, file_order, no_cache;
	/* Inline frames: perf script's default for its text layout (-1:
	 * not asked, then on for text, off for the aggregated formats, which
	 * stacksnap profile and trace write without them). */
	int inline_frames;
	unsigned max_stack;	/* user frames per sample, as perf's --max-stack */
};

/* Output assembled by hand into one buffer: formatting through stdio
 * would cost more than unwinding. Invariant: len < sizeof(buf). */
struct outbuf {
	FILE *f;
	size_t len;
	int err;	/* errno of the first write that failed (ENOSPC), 0 */
	char buf[1 << 16];
};

/* Frame lines formatted once: a direct-mapped cache from what a line
 * shows (address, name, offset, dso) to its text in an arena. The
 * strings are compared by address: an entry is good only at the process
 * table's generation it was made at (the symbol cache's rule,
 * sample_frames.h), and only while the arena holds it (epoch: bumped when
 * the arena, full, starts again). Invariant: an entry with len != 0 made
 * at epoch holds text[at .. at + len) for its key. */
#define LINE_SLOTS 4096
#define LINE_ARENA (1u << 20)
struct line_memo {
	struct line_slot {
		uint64_t addr, off, gen;
		const char *name, *dso;
		uint32_t epoch, at, len;
	} slot[LINE_SLOTS];
	uint32_t epoch;
	size_t used;
	char text[LINE_ARENA];
};

/* The parts of a sample's header line that repeat from one sample to the
 * next, kept formatted: "comm tid [cpu] " for the last (comm, tid, cpu),
 * the seconds of the time, and ": period event: \n" for the last period
 * and event (its name lives as long as the recording). */
struct header_memo {
	char comm[64];
	int64_t tid;
	uint32_t cpu;
	bool has_cpu, valid;
	char prefix[128];
	size_t prefix_len;
	uint64_t sec;
	char sec_text[24];
	size_t sec_len;
	uint64_t period;
	const char *event;
	char suffix[160];
	size_t suffix_len;
};

/* Everything one run needs. */
struct perf_script {
	struct ps_options o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct sample_frames sf;
	struct stacksnap_stacks *stacks;	/* when aggregating */
	struct outbuf *out;
	struct line_memo *lines;	/* NULL: formatted each time */
	uint64_t gen;			/* the process table's, this sample */
	struct header_memo hdr;
	bool no_memo;	/* STACKSNAP_PERF_SCRIPT_NO_MEMO set: every line
			   formatted whole (the tests' reference) */
};


/* A failed write's errno is kept: stdio drops the buffer it could not
 * write, and closing the stream no longer says why. */
static void out_flush(struct outbuf *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len && !o->err)
		o->err = errno ? errno : EIO;
	o->len = 0;
}

static void out_mem_slow(struct outbuf *o, const char *s, size_t n)
{
	out_flush(o);
	if (n >= sizeof(o->buf)) {
		if (fwrite(s, 1, n, o->f) != n && !o->err)
			o->err = errno ? errno : EIO;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* Inline: called a few times for every line. */
static inline void out_mem(struct outbuf *o, const char *s, size_t n)
{
	if (__builtin_expect(n >= sizeof(o->buf) - o->len, 0)) {
		out_mem_slow(o, s, n);
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void out_str(struct outbuf *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

/* v in hex, right-aligned in width (0: no padding). */
static void out_hex(struct outbuf *o, uint64_t v, int width)
{
	char tmp[32];
	int n = 0;

	do {
		tmp[sizeof(tmp) - 1 - n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (n < width)
		tmp[sizeof(tmp) - 1 - n++] = ' ';
	out_mem(o, tmp + sizeof(tmp) - n, n);
}

static void out_dec(struct outbuf *o, uint64_t v, int width, char pad)
{
	char tmp[32];
	int n = 0;

	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n < width)
		tmp[sizeof(tmp) - 1 - n++] = pad;
	out_mem(o, tmp + sizeof(tmp) - n, n);
}

/* One frame's line of perf script's text layout. */
static void format_frame(struct outbuf *o, const struct out_frame *f, const char *dso)
{
	out_mem(o, "\t", 1);
	out_hex(o, f->addr, 16);
	out_mem(o, " ", 1);
	if (f->name) {
		out_str(o, f->name);
		out_mem(o, "+0x", 3);
		out_hex(o, f->off, 0);
	} else {
		out_str(o, "[unknown]");
	}
	out_mem(o, " (", 2);
	out_str(o, dso);
	out_mem(o, ")\n", 2);
}

/* The line of frame f, from the memo when it was formatted before. */
static void frame_line(struct perf_script *ps, const struct out_frame *f)
{
	struct outbuf *o = ps->out;
	struct line_memo *lm = ps->lines;
	const char *dso = f->kernel ? "[kernel.kallsyms]" : f->inlined ? "inlined"
			  : f->dso ? f->dso : "[unknown]";
	struct line_slot *sl;
	uint64_t gen, h;
	size_t start;

	if (!lm) {
		format_frame(o, f, dso);
		return;
	}
	gen = ps->gen;
	h = (f->addr ^ (uint64_t)(uintptr_t)f->name * 31 ^
	     (uint64_t)(uintptr_t)dso * 7) * 0x9e3779b97f4a7c15ull;
	sl = &lm->slot[h >> 52 & (LINE_SLOTS - 1)];
	if (sl->len && sl->epoch == lm->epoch && sl->gen == gen &&
	    sl->addr == f->addr && sl->name == f->name && sl->off == f->off &&
	    sl->dso == dso) {
		out_mem(o, lm->text + sl->at, sl->len);
		return;
	}
	/* Formatted into the output buffer, then copied to the arena. */
	if (o->len > sizeof(o->buf) / 2)
		out_flush(o);
	start = o->len;
	format_frame(o, f, dso);
	if (o->len <= start)
		return; /* flushed on the way: a very long name */
	size_t len = o->len - start;

	if (len > LINE_ARENA / 16)
		return;
	if (lm->used + len > LINE_ARENA) { /* full: start again */
		lm->epoch++;
		lm->used = 0;
	}
	memcpy(lm->text + lm->used, o->buf + start, len);
	*sl = (struct line_slot){ .addr = f->addr, .off = f->off, .gen = gen,
				  .name = f->name, .dso = dso, .epoch = lm->epoch,
				  .at = (uint32_t)lm->used, .len = (uint32_t)len };
	lm->used += len;
}

/* Formats into a small buffer through out_* (the same code as the
 * output's): a scratch outbuf (the command is single-threaded), never
 * flushed: what is formatted is far below its size (callers check). */
static size_t format_into(char *dst, size_t cap, void (*fmt)(struct outbuf *, const void *),
			  const void *arg)
{
	static struct outbuf scratch;

	scratch.f = NULL;
	scratch.len = 0;
	fmt(&scratch, arg);
	if (scratch.len > cap)
		return 0;
	memcpy(dst, scratch.buf, scratch.len);
	return scratch.len;
}

struct header_args {
	const struct stacksnap_perf_event *ev;
	const char *comm;
};

static void fmt_prefix(struct outbuf *o, const void *arg)
{
	const struct header_args *a = arg;

	out_str(o, a->comm);
	out_mem(o, " ", 1);
	out_dec(o, (uint64_t)(int64_t)a->ev->tid, 5, ' ');
	out_mem(o, " ", 1);
	if (a->ev->sample_type & PERF_SAMPLE_CPU) {
		out_mem(o, "[", 1);
		out_dec(o, a->ev->cpu, 3, '0');
		out_mem(o, "] ", 2);
	}
}

static void fmt_sec(struct outbuf *o, const void *arg)
{
	const struct header_args *a = arg;

	out_dec(o, a->ev->time / 1000000000u, 5, ' ');
	out_mem(o, ".", 1);
}

static void fmt_suffix(struct outbuf *o, const void *arg)
{
	const struct header_args *a = arg;

	out_mem(o, ": ", 2);
	out_dec(o, a->ev->period, 10, ' ');
	out_mem(o, " ", 1);
	out_str(o, a->ev->event_name);
	out_mem(o, ": \n", 3);
}

/* The header line: comm, tid, [cpu], time, period, event; what repeats
 * from the last sample copied, the microseconds formatted. */
static void header(struct perf_script *ps, const struct stacksnap_perf_event *ev,
		   const char *comm)
{
	struct outbuf *o = ps->out;
	struct header_memo *m = &ps->hdr;
	struct header_args a = { ev, comm };
	bool has_cpu = ev->sample_type & PERF_SAMPLE_CPU;
	size_t clen = strlen(comm);
	uint64_t sec = ev->time / 1000000000u;
	uint32_t us = (uint32_t)(ev->time % 1000000000u / 1000u);
	char usbuf[6];

	if (ps->no_memo) {
		fmt_prefix(o, &a);
		out_dec(o, sec, 5, ' ');
		out_mem(o, ".", 1);
		out_dec(o, us, 6, '0');
		fmt_suffix(o, &a);
		return;
	}
	if (!m->valid || m->tid != (int64_t)ev->tid || m->has_cpu != has_cpu ||
	    (has_cpu && m->cpu != ev->cpu) || clen >= sizeof(m->comm) ||
	    memcmp(m->comm, comm, clen + 1)) {
		m->prefix_len = clen < sizeof(m->comm)
					? format_into(m->prefix, sizeof(m->prefix), fmt_prefix, &a)
					: 0;
		m->valid = m->prefix_len != 0;
		if (m->valid)
			memcpy(m->comm, comm, clen + 1);
		m->tid = ev->tid;
		m->cpu = ev->cpu;
		m->has_cpu = has_cpu;
		m->sec_len = 0;
		m->suffix_len = 0;
	}
	if (m->valid)
		out_mem(o, m->prefix, m->prefix_len);
	else
		fmt_prefix(o, &a);
	if (!m->sec_len || m->sec != sec) {
		m->sec = sec;
		m->sec_len = format_into(m->sec_text, sizeof(m->sec_text), fmt_sec, &a);
	}
	if (m->sec_len)
		out_mem(o, m->sec_text, m->sec_len);
	else
		fmt_sec(o, &a);
	for (int i = 5; i >= 0; i--, us /= 10)
		usbuf[i] = (char)('0' + us % 10);
	out_mem(o, usbuf, 6);
	if (!m->suffix_len || m->period != ev->period || m->event != ev->event_name) {
		m->period = ev->period;
		m->event = ev->event_name;
		m->suffix_len = strlen(ev->event_name) < sizeof(m->suffix) - 40
					? format_into(m->suffix, sizeof(m->suffix), fmt_suffix, &a)
					: 0;
	}
	if (m->suffix_len)
		out_mem(o, m->suffix, m->suffix_len);
	else
		fmt_suffix(o, &a);
}

static int emit(struct perf_script *ps, const struct stacksnap_perf_event *ev,
		const char *comm, const struct out_frame *fr, size_t n)
{
	struct outbuf *o = ps->out;

	if (ps->stacks)
		return sample_frames_add(&ps->sf, ps->stacks, comm, fr, n);
	/* perf script's header: comm, tid, [cpu], time, period, event. */
	header(ps, ev, comm);
	ps->gen = stacksnap_procs__generation(ps->procs);
	for (size_t i = 0; i < n; i++)
		frame_line(ps, &fr[i]);
	out_mem(o, "\n", 1);
	return 0;
}

static int do_sample(struct perf_script *ps, const struct stacksnap_perf_event *ev,
		     struct out_frame *fr, size_t maxfr)
{
	char comm_buf[24];
	const char *comm = sample_comm(&ps->sf, ev->tid, comm_buf);
	size_t n = sample_frames_resolve(&ps->sf, ev, fr, maxfr);

	return emit(ps, ev, comm, fr, n);
}

static void usage(FILE *f)
{
	fputs(help_text("perf-script"), f);
}

static int parse(struct ps_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "folded", no_argument, NULL, 'F' },
		PROFILE_OUT_LONGOPTS,
		{ "max-frames", required_argument, NULL, 'm' },
		{ "max-stack", required_argument, NULL, 'm' },	/* perf's spelling */
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "inline", no_argument, NULL, 'I' },
		{ "no-inline", no_argument, NULL, 'N' },
		{ "file-order", no_argument, NULL, 'O' },
		{ "stats", no_argument, NULL, 'S' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;
	bool explicit_text = false;	/* --format text */
	bool folded = false;		/* --folded: whatever -o's name */

	memset(o, 0, sizeof(*o));
	o->max_stack = 127;
	o->inline_frames = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:o:vh", longopts, NULL)) != -1) {
		int r;

		if (c == PROFILE_OUT_FORMAT && !strcmp(optarg, "text")) {
			o->aggregate = false;
			explicit_text = true;
			continue;
		}
		r = profile_out_option(&o->out, "stacksnap perf-script", c, optarg);
		if (r != 1) {
			if (r)
				return r;
			if (c == PROFILE_OUT_FORMAT)
				o->aggregate = true;
			continue;
		}
		switch (c) {
		case 'i': o->file = optarg; break;
		case 'F': o->aggregate = true; folded = true; break;
		case 'D': o->no_demangle = true; break;
		case 'I': o->inline_frames = 1; break;
		case 'N': o->inline_frames = 0; break;
		case 'O': o->file_order = true; break;
		case 'S': o->stats = true; break;
		case 'C': o->no_cache = true; break;
		case 'v': o->verbose = true; break;
		case 'm': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > 65536) {
				fprintf(stderr, "stacksnap perf-script: --max-frames: '%s' "
					"is not a number of frames in 1..65536\n", optarg);
				return EXIT_USAGE;
			}
			o->max_stack = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); return -1;
		default: return EXIT_USAGE; /* getopt said which */
		}
	}
	if (optind < argc && !o->file)
		o->file = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "stacksnap perf-script: unexpected argument '%s'\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!o->file)
		o->file = "perf.data"; /* as perf script */
	if (o->out.format_by_name && !o->out.format_set && !explicit_text)
		o->aggregate = true; /* -o out.svg: the profile its name says */
	if (folded && !o->out.format_set)
		o->out.format = STACKSNAP_FORMAT_FOLDED;
	if (o->inline_frames < 0)
		o->inline_frames = !o->aggregate;
	return 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* All of standard input, for `perf record -o - | stacksnap perf-script -`
 * (a pipe cannot be mapped). NULL with errno set on failure. */
static void *read_stdin(size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;

	while (buf && (r = read(STDIN_FILENO, buf + n, cap - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		n += (size_t)r;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	*len = n;
	return buf;
}

int perf_script_main(int argc, char **argv)
{
	struct perf_script ps = { 0 };
	struct stacksnap_perf_data *pd = NULL;
	struct stacksnap_perf_event ev;
	struct out_frame *fr = NULL;
	FILE *out = stdout;
	void *input = NULL;
	size_t maxfr, input_len = 0;
	int rc, r;
	uint64_t t0 = cpu_ns(), events = 0;

	rc = parse(&ps.o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : cli_usage_error();
	cli_verbose = ps.o.verbose;
	/* The cache directory keeps compiled unwind tables and uncompressed
	 * debug files for the next run (cc1's table: a quarter of a replay's
	 * CPU when compiled each time). */
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = cli_verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR,
		       .cache_dir = ps.o.no_cache ? NULL : default_cache_dir());
	ps.ctx = stacksnap_ctx__new(&copts);
	/* What the cache keeps for next time (the uncompressed copy of
	 * libc6-dbg's libc, whole tables, symbol files) is written after the
	 * output, by a detached child: a first replay of clangd's recording
	 * spent 136 ms of its 0.45 s CPU on libc's copy, inline. */
	if (ps.ctx)
		stacksnap_ctx__defer_cache_writes(ps.ctx, true);
	STACKSNAP_OPTS(stacksnap_perf_data_opts, popts, .file_order = ps.o.file_order);
	if (ps.ctx && !strcmp(ps.o.file, "-")) {
		input = read_stdin(&input_len);
		if (!input)
			fprintf(stderr, "stacksnap perf-script: reading standard input: %s\n",
				strerror(errno));
		else
			pd = stacksnap_perf_data__open_mem(ps.ctx, input, input_len, &popts);
	} else if (ps.ctx) {
		pd = stacksnap_perf_data__open(ps.ctx, ps.o.file, &popts);
	}
	if (!pd) {
		rc = EXIT_ERROR; /* the log said why */
		goto out;
	}
	if (!(out = profile_out_open(&ps.o.out, "stacksnap perf-script"))) {
		out = stdout;
		rc = EXIT_ERROR;
		goto out;
	}
	ps.procs = stacksnap_procs__new(ps.ctx, NULL);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = ps.o.max_stack);
	ps.uw = stacksnap_unwinder__new(&uopts);
	maxfr = ps.o.max_stack + 256; /* + kernel frames */
	fr = calloc(maxfr, sizeof(*fr));
	ps.out = malloc(sizeof(*ps.out));
	/* The memos' output must be the plain formatting's, byte for byte:
	 * tests compare the two (tests/integration/perf_compare). */
	ps.no_memo = getenv("STACKSNAP_PERF_SCRIPT_NO_MEMO") != NULL;
	ps.lines = ps.o.aggregate || ps.no_memo ? NULL : calloc(1, sizeof(*ps.lines));
	if (ps.o.aggregate)
		ps.stacks = stacksnap_stacks__new(NULL);
	if (!ps.procs || !ps.uw || !fr || !ps.out || (ps.o.aggregate && !ps.stacks) ||
	    sample_frames_init(&ps.sf, ps.procs, ps.uw, ps.o.max_stack,
			       STACKSNAP_SYM_SYMTAB |
			       (ps.o.no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0),
			       ps.o.no_cache)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	ps.sf.inline_frames = ps.o.inline_frames > 0;
	const uint8_t *kid;
	size_t kidlen;

	if (stacksnap_perf_data__build_id(pd, "[kernel.kallsyms]", &kid, &kidlen) == 0)
		for (size_t i = 0; i < kidlen && i < 20; i++)
			sprintf(ps.sf.kernel_build_id + 2 * i, "%02x", kid[i]);
	ps.out->f = out;
	ps.out->len = 0;
	ps.out->err = 0;
	rc = EXIT_OK;
	bool tty = isatty(STDERR_FILENO) && !isatty(fileno(out));
	uint64_t last_progress = 0;

	while ((r = stacksnap_perf_data__next(pd, &ev)) > 0) {
		events++;
		/* A progress line on a terminal (never when stderr is a file
		 * or when the samples themselves go to the terminal). */
		if (tty && !(events & 4095) && cpu_ns() - last_progress > 500000000u) {
			last_progress = cpu_ns();
			fprintf(stderr, "\rperf-script: %" PRIu64 " samples, offset %#" PRIx64 " ",
				ps.sf.samples, ev.offset);
		}
		if (ev.type == STACKSNAP_PERF_SAMPLE)
			r = do_sample(&ps, &ev, fr, maxfr);
		else
			r = stacksnap_procs__apply_perf_event(ps.procs, &ev);
		if (r == -ENOMEM) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			break;
		}
		if (ps.out->err)
			break; /* the output cannot be written: said below */
	}
	if (tty && last_progress)
		fputs("\r\033[K", stderr);
	if (r < 0 && rc == EXIT_OK)
		rc = EXIT_ERROR; /* corrupt file: the log named the offset */
	out_flush(ps.out);
	if (!ps.out->err && fflush(out))
		ps.out->err = errno ? errno : EIO;
	if (ps.out->err) {
		fprintf(stderr, "stacksnap perf-script: writing %s: %s\n",
			out == stdout ? "standard output" : ps.o.out.output, strerror(ps.out->err));
		/* Said once: what stdio still holds is dropped by a flush
		 * that fails, and closing out says nothing more. */
		(void)fflush(out);
		clearerr(out);
		rc = EXIT_ERROR;
	}
	if (ps.stacks) {
		if (profile_out_write(&ps.o.out, "stacksnap perf-script", out,
				      ps.stacks, ps.o.file))
			rc = EXIT_ERROR;
		out = stdout; /* closed */
	}
	if (ps.o.stats) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr,
			"perf-script: %" PRIu64 " records, %" PRIu64 " samples, %" PRIu64
			" user frames, %" PRIu64 " truncated walks; symbol cache %" PRIu64
			"/%" PRIu64 " misses; %.3f s CPU, max RSS %ld KiB\n",
			events, ps.sf.samples, ps.sf.frames_total, ps.sf.truncated,
			ps.sf.misses, ps.sf.lookups, (double)(cpu_ns() - t0) / 1e9,
			ru.ru_maxrss);
		STACKSNAP_OPTS(stacksnap_ctx_stats, cs);
		if (stacksnap_ctx__stats(ps.ctx, &cs) == 0) {
			/* The cold part of a replay: what a warm cache saves. */
			fprintf(stderr, "perf-script: cold path: modules %.1f ms (%u), "
					"tables %.1f ms, debug files %.1f ms, symbol "
					"tables %.1f ms, DWARF %.1f ms\n",
				cs.module_ns / 1e6, cs.modules, cs.table_ns / 1e6,
				cs.debug_ns / 1e6, cs.symtab_ns / 1e6, cs.dwarf_ns / 1e6);
			cli_print_table_stats(stderr, "perf-script", &cs);
		}
	}
out:
	rc = cli_close_output(out, out == stdout ? NULL : ps.o.out.output, rc);
	if (ps.ctx)
		cli_write_caches_detached(ps.ctx);
	free(ps.out);
	free(ps.lines);
	free(fr);
	sample_frames_fini(&ps.sf);
	stacksnap_stacks__free(ps.stacks);
	stacksnap_unwinder__free(ps.uw);
	stacksnap_procs__free(ps.procs);
	stacksnap_perf_data__free(pd);
	free(input);
	stacksnap_ctx__free(ps.ctx);
	return rc;
}
