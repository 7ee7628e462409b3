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

#include "options.h"
#include "perf_script.h"
#include "stacksnap.h"
#include "subcommands.h"

#define PERF_CONTEXT_MAX ((uint64_t)-4095)
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_SAMPLE_CPU (1ull << 7)
#define SYM_CACHE (1u << 16)

struct ps_options {
	const char *file;
	bool folded, no_demangle, stats, verbose, file_order, no_cache;
	unsigned max_stack;	/* user frames per sample, as perf's --max-stack */
};

/* A symbolized address, cached: valid while the process table's
 * generation is gen (strings belong to the context and address spaces,
 * which keep them at least that long). */
struct sym_slot {
	const struct stacksnap_addrspace *as;
	uint64_t addr, gen;
	const char *name;	/* NULL: [unknown] */
	const char *dso;	/* NULL: [unknown] */
	uint64_t off, rel;
};

/* Output assembled by hand into one buffer: formatting through stdio
 * would cost more than unwinding. Invariant: len < sizeof(buf). */
struct outbuf {
	FILE *f;
	size_t len;
	char buf[1 << 16];
};

/* Everything one run needs. frames is sized max_stack; key holds one
 * folded stack being built. */
struct perf_script {
	struct ps_options o;
	struct stacksnap_ctx *ctx;
	struct stacksnap_procs *procs;
	struct stacksnap_unwinder *uw;
	struct stacksnap_frame *frames;
	struct sym_slot *cache;
	struct kallsyms *ksyms;
	bool ksyms_tried;
	struct folded *folded;
	struct outbuf *out;
	char *key;
	size_t keycap;
	uint64_t samples, frames_total, truncated, lookups, misses;
};


static void out_flush(struct outbuf *o)
{
	if (o->len)
		fwrite(o->buf, 1, o->len, o->f);
	o->len = 0;
}

static void out_mem(struct outbuf *o, const char *s, size_t n)
{
	if (n >= sizeof(o->buf) - o->len) {
		out_flush(o);
		if (n >= sizeof(o->buf)) {
			fwrite(s, 1, n, o->f);
			return;
		}
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

static const struct sym_slot *symbolize(struct perf_script *ps,
					struct stacksnap_addrspace *as,
					uint64_t addr)
{
	uint64_t gen = stacksnap_procs__generation(ps->procs);
	uint64_t h = (addr ^ (uint64_t)(uintptr_t)as * 0x9e3779b97f4a7c15ull) *
		     0x9e3779b97f4a7c15ull;
	struct sym_slot *s = &ps->cache[h >> 48 & (SYM_CACHE - 1)];
	struct stacksnap_mapping m;
	struct stacksnap_sym sym;

	ps->lookups++;
	if (s->as == as && s->addr == addr && s->gen == gen)
		return s;
	ps->misses++;
	s->as = as;
	s->addr = addr;
	s->gen = gen;
	s->name = s->dso = NULL;
	s->off = 0;
	s->rel = addr;
	m.sz = sizeof(m);
	if (stacksnap_addrspace__find_mapping(as, addr, &m) == 0) {
		s->dso = m.path;
		s->rel = addr - m.start + m.offset;
	}
	if (stacksnap_addrspace__symbolize(as, addr, false,
					   STACKSNAP_SYM_SYMTAB |
					   (ps->o.no_demangle ? STACKSNAP_SYM_NO_DEMANGLE : 0),
					   &sym, 1) > 0 && sym.function) {
		s->name = sym.function;
		s->off = sym.offset;
		if (!s->dso)
			s->dso = sym.module;
	}
	return s;
}

static int key_add(struct perf_script *ps, size_t *len, const char *name,
		   const char *dso, bool kernel)
{
	return folded_key_add(&ps->key, &ps->keycap, len, name, dso, kernel);
}

/* A resolved frame of a sample, innermost first. */
struct out_frame {
	uint64_t addr;
	const char *name, *dso;
	uint64_t off;
	bool kernel;
};

static int emit(struct perf_script *ps, const struct stacksnap_perf_event *ev,
		const char *comm, const struct out_frame *fr, size_t n)
{
	struct outbuf *o = ps->out;

	if (ps->folded) {
		size_t len = 0;

		if (key_add(ps, &len, comm, NULL, false))
			return -ENOMEM;
		for (size_t i = n; i-- > 0;)
			if (key_add(ps, &len, fr[i].name, fr[i].dso, false))
				return -ENOMEM;
		return folded_add(ps->folded, ps->key, len, 1);
	}
	/* perf script's header: comm, tid, [cpu], time, period, event. */
	out_str(o, comm);
	out_mem(o, " ", 1);
	out_dec(o, (uint64_t)(int64_t)ev->tid, 5, ' ');
	out_mem(o, " ", 1);
	if (ev->sample_type & PERF_SAMPLE_CPU) {
		out_mem(o, "[", 1);
		out_dec(o, ev->cpu, 3, '0');
		out_mem(o, "] ", 2);
	}
	out_dec(o, ev->time / 1000000000u, 5, ' ');
	out_mem(o, ".", 1);
	out_dec(o, ev->time % 1000000000u / 1000u, 6, '0');
	out_mem(o, ": ", 2);
	out_dec(o, ev->period, 10, ' ');
	out_mem(o, " ", 1);
	out_str(o, ev->event_name);
	out_mem(o, ": \n", 3);
	for (size_t i = 0; i < n; i++) {
		out_mem(o, "\t", 1);
		out_hex(o, fr[i].addr, 16);
		out_mem(o, " ", 1);
		if (fr[i].name) {
			out_str(o, fr[i].name);
			out_mem(o, "+0x", 3);
			out_hex(o, fr[i].off, 0);
		} else {
			out_str(o, "[unknown]");
		}
		out_mem(o, " (", 2);
		out_str(o, fr[i].kernel ? "[kernel.kallsyms]"
			   : fr[i].dso ? fr[i].dso : "[unknown]");
		out_mem(o, ")\n", 2);
	}
	out_mem(o, "\n", 1);
	return 0;
}

static int do_sample(struct perf_script *ps, const struct stacksnap_perf_event *ev,
		     struct out_frame *fr, size_t maxfr)
{
	size_t n = 0;
	char comm_buf[24];
	const char *comm = stacksnap_procs__comm_of(ps->procs, ev->tid);

	if (!comm) {
		snprintf(comm_buf, sizeof(comm_buf), ":%d", (int)ev->tid);
		comm = comm_buf;
	}
	/* Kernel frames come from the sample's own callchain. */
	bool in_kernel = false, add_marker = false;
	for (uint64_t i = 0; i < ev->callchain_nr && n < maxfr; i++) {
		uint64_t ip = ev->callchain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			in_kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!in_kernel)
			continue;
		if (!ps->ksyms_tried) {
			ps->ksyms_tried = true;
			ps->ksyms = kallsyms_load(ps->o.no_cache ? NULL
								 : default_cache_dir());
		}
		fr[n].addr = ip;
		fr[n].name = kallsyms_lookup(ps->ksyms, ip, &fr[n].off);
		fr[n].dso = "[kernel.kallsyms]";
		fr[n].kernel = true;
		n++;
	}
	if (ev->regs_abi && ev->regs) {
		STACKSNAP_OPTS(stacksnap_sample, s, .pid = ev->pid, .tid = ev->tid,
			       .perf_regs_mask = ev->regs_mask, .perf_regs = ev->regs,
			       .stack = ev->stack, .stack_len = ev->stack_len);
		enum stacksnap_end end;
		int nf = stacksnap_procs__unwind_sample(ps->procs, ps->uw, &s,
							ps->frames, ps->o.max_stack,
							&end);
		struct stacksnap_addrspace *as =
			stacksnap_procs__addrspace(ps->procs, ev->pid);

		if (nf < 0 || !as)
			nf = 0;
		/* perf ends a walk that ran out of copied stack with a
		 * frame at -1, [unknown]; print it the same (a consumer
		 * of perf script's output sees a truncated stack as it
		 * would from perf). */
		if (end == STACKSNAP_END_STACK_COPY && nf > 0 &&
		    (unsigned)nf < ps->o.max_stack && n + (unsigned)nf < maxfr)
			add_marker = true;
		if (end != STACKSNAP_END_COMPLETE) {
			ps->truncated++;
			if (cli_verbose)
				fprintf(stderr, "stacksnap: sample at offset %#" PRIx64
					" (tid %d): walk ended after %d frames: %s\n",
					ev->offset, (int)ev->tid, nf,
					stacksnap_end__str(end));
		}
		ps->frames_total += (unsigned)nf;
		for (int i = 0; i < nf && n < maxfr; i++) {
			const struct stacksnap_frame *f = &ps->frames[i];
			/* perf names a return address by the call before it
			 * and prints that address; only frame 0 and the
			 * signal trampoline are exact. */
			uint64_t addr = f->pc - (i > 0 && !(f->flags & STACKSNAP_FRAME_SIGRETURN));
			const struct sym_slot *sl = symbolize(ps, as, addr);

			fr[n].addr = sl->rel;
			fr[n].name = sl->name;
			fr[n].off = sl->off;
			fr[n].dso = sl->dso;
			fr[n].kernel = false;
			n++;
		}
	}
	if (add_marker) {
		fr[n] = (struct out_frame){ .addr = UINT64_MAX };
		n++;
	}
	ps->samples++;
	return emit(ps, ev, comm, fr, n);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stacksnap perf-script [options] [-i] FILE\n"
		"Unwinds the user stacks of a perf.data recorded with\n"
		"`perf record --call-graph dwarf` and prints the samples as\n"
		"`perf script` does (kernel frames from the sample's callchain).\n"
		"  --folded          collapsed stacks with counts (comm;outer;...;inner N)\n"
		"  --max-stack N     user frames per sample (default 127, as perf)\n"
		"  --no-demangle     keep C++ names mangled\n"
		"  --file-order      records as written, not sorted by time\n"
		"  --stats           counts and times on stderr\n"
		"  --no-cache        read /proc/kallsyms anew (default: kept parsed\n"
		"                    for the boot in stacksnap's cache directory)\n"
		"  -v, --verbose     library warnings on stderr\n"
		"  -h, --help\n");
}

static int parse(struct ps_options *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "folded", no_argument, NULL, 'F' },
		{ "max-stack", required_argument, NULL, 'm' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "file-order", no_argument, NULL, 'O' },
		{ "stats", no_argument, NULL, 'S' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->max_stack = 127;
	optind = 1;
	while ((c = getopt_long(argc, argv, "i:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o->file = optarg; break;
		case 'F': o->folded = true; break;
		case 'D': o->no_demangle = true; break;
		case 'O': o->file_order = true; break;
		case 'S': o->stats = true; break;
		case 'C': o->no_cache = true; break;
		case 'v': o->verbose = true; break;
		case 'm': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (*end || !v || v > 65536) {
				fprintf(stderr, "stacksnap perf-script: --max-stack "
					"wants a number of frames in 1..65536\n");
				return EXIT_USAGE;
			}
			o->max_stack = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return EXIT_USAGE;
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
	return 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int perf_script_main(int argc, char **argv)
{
	struct perf_script ps = { 0 };
	struct stacksnap_perf_data *pd = NULL;
	struct stacksnap_perf_event ev;
	struct out_frame *fr = NULL;
	size_t maxfr;
	int rc, r;
	uint64_t t0 = cpu_ns(), events = 0;

	rc = parse(&ps.o, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	cli_verbose = ps.o.verbose;
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = cli_log,
		       .log_level = cli_verbose ? STACKSNAP_LOG_INFO : STACKSNAP_LOG_ERROR);
	ps.ctx = stacksnap_ctx__new(&copts);
	STACKSNAP_OPTS(stacksnap_perf_data_opts, popts, .file_order = ps.o.file_order);
	pd = ps.ctx ? stacksnap_perf_data__open(ps.ctx, ps.o.file, &popts) : NULL;
	if (!pd) {
		rc = EXIT_ERROR; /* the log said why */
		goto out;
	}
	ps.procs = stacksnap_procs__new(ps.ctx, NULL);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uopts, .max_frames = ps.o.max_stack);
	ps.uw = stacksnap_unwinder__new(&uopts);
	ps.frames = calloc(ps.o.max_stack, sizeof(*ps.frames));
	maxfr = ps.o.max_stack + 256; /* + kernel frames */
	fr = calloc(maxfr, sizeof(*fr));
	ps.cache = calloc(SYM_CACHE, sizeof(*ps.cache));
	ps.out = malloc(sizeof(*ps.out));
	if (ps.o.folded)
		ps.folded = folded_new();
	if (!ps.procs || !ps.uw || !ps.frames || !fr || !ps.cache || !ps.out ||
	    (ps.o.folded && !ps.folded)) {
		fprintf(stderr, "stacksnap: out of memory\n");
		rc = EXIT_ERROR;
		goto out;
	}
	ps.out->f = stdout;
	ps.out->len = 0;
	rc = EXIT_OK;
	while ((r = stacksnap_perf_data__next(pd, &ev)) > 0) {
		events++;
		if (ev.type == STACKSNAP_PERF_SAMPLE)
			r = do_sample(&ps, &ev, fr, maxfr);
		else
			r = stacksnap_procs__apply_perf_event(ps.procs, &ev);
		if (r == -ENOMEM) {
			fprintf(stderr, "stacksnap: out of memory\n");
			rc = EXIT_ERROR;
			break;
		}
	}
	if (r < 0 && rc == EXIT_OK)
		rc = EXIT_ERROR; /* corrupt file: the log named the offset */
	out_flush(ps.out);
	if (ps.folded && folded_print(ps.folded, stdout))
		rc = EXIT_ERROR;
	if (ps.o.stats) {
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr,
			"perf-script: %" PRIu64 " records, %" PRIu64 " samples, %" PRIu64
			" user frames, %" PRIu64 " truncated walks; symbol cache %" PRIu64
			"/%" PRIu64 " misses; %.3f s CPU, max RSS %ld KiB\n",
			events, ps.samples, ps.frames_total, ps.truncated, ps.misses,
			ps.lookups, (double)(cpu_ns() - t0) / 1e9, ru.ru_maxrss);
	}
out:
	if (ps.out && fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_ERROR;
	free(ps.out);
	free(ps.cache);
	free(ps.frames);
	free(ps.key);
	free(fr);
	folded_free(ps.folded);
	kallsyms_free(ps.ksyms);
	stacksnap_unwinder__free(ps.uw);
	stacksnap_procs__free(ps.procs);
	stacksnap_perf_data__free(pd);
	stacksnap_ctx__free(ps.ctx);
	return rc;
}
