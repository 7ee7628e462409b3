/* test_python.c - unit tests of src/runtime/python/: the line-table
 * decoders (each entry form by hand, then every instruction of the code
 * objects of a few stdlib modules against CPython's own co_lines(), or
 * dis.findlinestarts() before 3.10, for 3.11 and pyenv's 3.7-3.10), the
 * _Py_DebugOffsets reader, and capture + resolve over a synthetic memory
 * image (a good chain, a loop, a wild pointer, an unreadable code
 * object). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/python/python.h"
#include "stacksnap.h"

static int line_of(const uint8_t *t, size_t len, int first, int addrq)
{
	int line = -100;

	if (py_linetable__line(t, len, first, addrq, &line))
		return -99;
	return line;
}

static void linetable_forms(void)
{
	/* short form (code 0), 2 units, line stays 10 */
	/* one-line form code 11 (+1), 1 unit */
	/* no-columns form code 13, signed varint -3 (zigzag 7), 3 units */
	/* long form code 14, +70 (zigzag 140 = 0x4c | 0x40, 2), 1 unit */
	/* none form code 15, 1 unit */
	const uint8_t t[] = {
		0x80 | (0 << 3) | 1, 0x12,
		0x80 | (11 << 3) | 0, 4, 9,
		0x80 | (13 << 3) | 2, 7,
		0x80 | (14 << 3) | 0, 0x40 | (140 & 63), 140 >> 6, 0, 1, 2,
		0x80 | (15 << 3) | 0,
	};

	CHECK(line_of(t, sizeof(t), 10, -2) == 10);
	CHECK(line_of(t, sizeof(t), 10, 0) == 10);
	CHECK(line_of(t, sizeof(t), 10, 2) == 10);
	CHECK(line_of(t, sizeof(t), 10, 4) == 11);
	CHECK(line_of(t, sizeof(t), 10, 6) == 8);
	CHECK(line_of(t, sizeof(t), 10, 10) == 8);
	CHECK(line_of(t, sizeof(t), 10, 12) == 78);
	CHECK(line_of(t, sizeof(t), 10, 14) == -1);	/* no location */
	CHECK(line_of(t, sizeof(t), 10, 16) == -1);	/* past the table */

	const uint8_t no_start[] = { 0x12, 0x80 };
	CHECK(line_of(no_start, sizeof(no_start), 1, 0) == -99);
	const uint8_t cut_varint[] = { 0x80 | (13 << 3), 0x40 };
	CHECK(line_of(cut_varint, sizeof(cut_varint), 1, 0) == -99);
	const uint8_t long_varint[] = { 0x80 | (13 << 3), 0x7f, 0x7f, 0x7f,
					0x7f, 0x7f, 0x7f, 0x3f };
	CHECK(line_of(long_varint, sizeof(long_varint), 1, 0) == -99);
	CHECK(line_of(NULL, 0, 5, 0) == -1);
}

/* 3.7-3.9 co_lnotab and 3.10 co_linetable by hand. */
static void old_linetable_forms(void)
{
	/* lnotab: +0 bytes +1 line, +6 bytes +2 lines, +4 bytes -3 lines */
	const uint8_t lnotab[] = { 0, 1, 6, 2, 4, 0xfd };
	int l = 0;

	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, sizeof(lnotab),
				    10, 0, &l) == 0 && l == 11);
	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, sizeof(lnotab),
				    10, 4, &l) == 0 && l == 11);
	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, sizeof(lnotab),
				    10, 6, &l) == 0 && l == 13);
	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, sizeof(lnotab),
				    10, 10, &l) == 0 && l == 10);
	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, sizeof(lnotab),
				    10, -2, &l) == 0 && l == 10);
	CHECK(py_linetable__line_of(PY_LINES_LNOTAB, lnotab, 5, 10, 100,
				    &l) == 0 && l == 13);	/* odd byte */
	/* 3.10: [0,4) +1, empty +2, [4,6) no line, [6,8) +0 (line 13) */
	const uint8_t lt[] = { 4, 1, 0, 2, 2, 0x80, 2, 0 };
	CHECK(py_linetable__line_of(PY_LINES_310, lt, sizeof(lt), 10, 2,
				    &l) == 0 && l == 11);
	CHECK(py_linetable__line_of(PY_LINES_310, lt, sizeof(lt), 10, 4,
				    &l) == 0 && l == -1);
	CHECK(py_linetable__line_of(PY_LINES_310, lt, sizeof(lt), 10, 6,
				    &l) == 0 && l == 13);
	CHECK(py_linetable__line_of(PY_LINES_310, lt, sizeof(lt), 10, 8,
				    &l) == 0 && l == -1);	/* past the end */
}

static int hexval(int c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* The script that prints, per code object (nested ones too) of a few
 * modules: co_firstlineno, the line table in hex, and the interpreter's
 * own "start:end:line" ranges (co_lines() from 3.10; before, the ranges
 * between dis.findlinestarts' starts, to the end of co_code). */
static const char LINES_PY[] =
	"import threading, json.decoder, queue, traceback, types, dis\n"
	"def walk(co):\n"
	"    yield co\n"
	"    for c in co.co_consts:\n"
	"        if isinstance(c, types.CodeType): yield from walk(c)\n"
	"def lines(co):\n"
	"    if hasattr(co, \"co_lines\"):\n"
	"        return [(s, e, -1 if l is None else l) for s, e, l in co.co_lines()]\n"
	"    st = list(dis.findlinestarts(co)) + [(len(co.co_code), None)]\n"
	"    return [(st[i][0], st[i + 1][0], st[i][1]) for i in range(len(st) - 1)]\n"
	"for m in (threading, json.decoder, queue, traceback):\n"
	"    top = compile(open(m.__file__).read(), m.__file__, \"exec\")\n"
	"    for co in walk(top):\n"
	"        t = co.co_linetable if hasattr(co, \"co_linetable\") else co.co_lnotab\n"
	"        ls = [\"%d:%d:%d\" % r for r in lines(co)]\n"
	"        print(co.co_firstlineno, t.hex() or \"-\", \",\".join(ls) or \"-\")\n";

/* Every instruction of every code object of a few modules, decoded as
 * kind, against the interpreter py that made them. Returns whether py
 * exists (required: must_exist). */
static void linetable_matches(const char *py, enum py_lines kind,
			      bool must_exist)
{
	char cmd[4096];
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	unsigned codes = 0, checked = 0, bad = 0;

	if (access(py, X_OK) != 0) {
		if (must_exist)
			CHECKF(0, "%s missing (scripts/install-deps.sh)", py);
		else
			fprintf(stderr, "  note: %s not installed, not tested\n", py);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s -c '%s'", py, LINES_PY);
	f = popen(cmd, "r");
	if (!f) {
		CHECK(f != NULL);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		int first;
		char *hex, *ranges, *save = NULL;
		size_t n;
		uint8_t *t;

		first = atoi(strtok_r(line, " ", &save));
		hex = strtok_r(NULL, " ", &save);
		ranges = strtok_r(NULL, " \n", &save);
		if (!hex || !ranges)
			continue;
		if (!strcmp(hex, "-"))
			hex = "";
		n = strlen(hex) / 2;
		t = malloc(n + 1);
		for (size_t i = 0; i < n; i++)
			t[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
		codes++;
		for (char *r = strtok_r(ranges, ",", &save); r;
		     r = strtok_r(NULL, ",", &save)) {
			int s, e, l, got;

			if (sscanf(r, "%d:%d:%d", &s, &e, &l) != 3)
				continue;
			for (int a = s; a < e; a += 2) {
				checked++;
				if (py_linetable__line_of(kind, t, n, first, a, &got))
					got = -99;
				if (got != l && bad++ < 5)
					fprintf(stderr, "  %s first %d offset %d: %d, "
						"CPython %d\n", py, first, a, got, l);
			}
		}
		free(t);
	}
	free(line);
	CHECK(pclose(f) == 0);
	/* Before 3.11 there are no inline caches: fewer offsets. */
	CHECKF(codes > 150 && checked > (kind == PY_LINES_LOCATIONS ? 10000 : 5000),
	       "%s: %u codes, %u offsets", py, codes, checked);
	CHECKF(bad == 0, "%s: %u of %u offsets differ", py, bad, checked);
}

static void linetable_matches_cpython(void)
{
	linetable_matches("/usr/bin/python3.11", PY_LINES_LOCATIONS, true);
}

/* 3.10's co_linetable and 3.7-3.9's co_lnotab, against pyenv's builds
 * where installed (each one said when not). */
static void old_linetables_match_cpython(void)
{
	static const struct { const char *v; enum py_lines kind; } vs[] = {
		{ "3.7.16/bin/python3.7", PY_LINES_LNOTAB },
		{ "3.8.18/bin/python3.8", PY_LINES_LNOTAB },
		{ "3.9.18/bin/python3.9", PY_LINES_LNOTAB },
		{ "3.10.13/bin/python3.10", PY_LINES_310 },
	};
	const char *home = getenv("HOME");
	char py[512];

	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		snprintf(py, sizeof(py), "%s/.pyenv/versions/%s",
			 home ? home : "/root", vs[i].v);
		linetable_matches(py, vs[i].kind, false);
	}
}

static void debug_offsets(void)
{
	uint64_t w[73] = { 0 };
	struct py_layout l;

	memcpy(w, "xdebugpy", 8);
	w[1] = 0x030d00f0;	/* 3.13.0 final */
	for (unsigned i = 3; i < 73; i++)
		w[i] = 8 * i;
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w), &l) == 0);
	CHECK(l.minor == 13 && l.rt_interpreters_head == 40 &&
	      l.interp_threads_head == 72 && l.ts_current_frame == 184 &&
	      l.ts_native_thread_id == 200 && l.frame_previous == 232 &&
	      l.frame_code == 240 && l.frame_instr == 248 &&
	      l.frame_owner == 264 && l.code_qualname == 296 &&
	      l.code_adaptive == 344 && l.unicode_ascii_size == 560 &&
	      l.unicode_compact_size == 576 && l.ts_cframe == PY_OFF_NONE &&
	      l.owner_cstack == 3 && l.frame_size == 272);
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w) - 8, &l) ==
	      -ENOENT);
	w[1] = 0x030e00f0;
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w), &l) ==
	      -ENOTSUP);
	w[1] = 0x030d00f0;
	w[2] = 1;	/* free-threaded */
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w), &l) ==
	      -ENOTSUP);
	w[2] = 0;
	w[38] = 1u << 30;
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w), &l) ==
	      -EINVAL);
	memcpy(w, "xdebugpx", 8);
	CHECK(py_layout__from_debug_offsets((uint8_t *)w, sizeof(w), &l) ==
	      -ENOENT);
	CHECK(py_layout__find(3, 11, false, false) != NULL);
	CHECK(py_layout__find(3, 11, true, false) != NULL);
	CHECK(py_layout__find(3, 11, false, true)->code_qualname ==
	      py_layout__find(3, 11, false, false)->code_qualname + 16);
	CHECK(py_layout__find(3, 6, false, false) == NULL);
	CHECK(py_layout__find(3, 10, true, false) == NULL);
	for (unsigned m = 7; m <= 10; m++)
		CHECK(py_layout__find(3, m, false, false) &&
		      py_layout__find(3, m, false, false)->minor == m &&
		      py_layout__find(3, m, false, false)->frame_lasti > 0);
	CHECK(py_layout__find(3, 12, true, false) == NULL);
}

/* A 3.11 memory image: _PyRuntime, one interpreter, one thread state
 * (tid 4242) with a chain of two frames running one code object. */
#define BASE 0x100000ull
static uint8_t img[0x2000];

static void p64(size_t off, uint64_t v) { memcpy(img + off, &v, 8); }
static void p32(size_t off, int32_t v) { memcpy(img + off, &v, 4); }

static void put_str(size_t off, const char *s)
{
	p64(off + 16, strlen(s));
	p32(off + 32, (1 << 2) | (1 << 5) | (1 << 6) | (1 << 7));
	memcpy(img + off + 48, s, strlen(s));
}

static void build_image(void)
{
	const uint8_t lt[] = { 0x80 | (13 << 3) | 1, 2,	/* +1, 2 units */
			       0x80 | (11 << 3) | 3, 0, 1 }; /* +1, 4 units */
	memset(img, 0, sizeof(img));
	p32(0x10, 1);
	p64(0x28, BASE + 0x400);		/* interpreters.head */
	p64(0x170, BASE + 0x500);		/* gil last_holder */
	p32(0x178, 1);				/* gil locked */
	p64(0x400 + 0x10, BASE + 0x500);	/* threads.head */
	p64(0x500 + 160, 4242);			/* native_thread_id */
	p64(0x500 + 56, BASE + 0x700);		/* cframe */
	p64(0x700 + 8, BASE + 0x800);		/* current_frame */
	/* inner frame at instruction 1 (line 11), outer at 4 (line 12) */
	p64(0x800 + 32, BASE + 0xa00);
	p64(0x800 + 48, BASE + 0x880);
	p64(0x800 + 56, BASE + 0xa00 + 184 + 2 * 1);
	p64(0x880 + 32, BASE + 0xa00);
	p64(0x880 + 56, BASE + 0xa00 + 184 + 2 * 4);
	img[0x880 + 68] = 1;			/* is_entry */
	p64(0xa00 + 8, BASE + 0xc00);		/* ob_type */
	p64(0xc00 + 24, BASE + 0xc80);		/* tp_name */
	memcpy(img + 0xc80, "code", 5);
	put_str(0xd00, "Outer.f");
	put_str(0xd80, "f");
	put_str(0xe00, "/tmp/x.py");
	p64(0xa00 + 128, BASE + 0xd00);
	p64(0xa00 + 120, BASE + 0xd80);
	p64(0xa00 + 112, BASE + 0xe00);
	p32(0xa00 + 72, 10);			/* co_firstlineno */
	p64(0xa00 + 136, BASE + 0xf00);		/* co_linetable */
	p64(0xf00 + 16, sizeof(lt));
	memcpy(img + 0xf00 + 32, lt, sizeof(lt));
}

struct walk {
	struct py_capture cap;
	struct py_frame *frames;
	size_t n;
	const char *end;
	bool keep_unknown;	/* the trace's resolver: set before the walk */
};

static int walk_image(struct walk *w)
{
	bool keep_unknown = w->keep_unknown;

	struct py_runtime rt = { 0 };
	struct py_resolver res;
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	int err;

	memset(w, 0, sizeof(*w));
	w->keep_unknown = keep_unknown;
	rt.found = true;
	rt.layout = py_layout__find(3, 11, false, false);
	rt.runtime_addr = BASE;
	err = py_capture__all(&rt, mem, &w->cap);
	/* Again, now batched where the first walk found the threads: the
	   same result. */
	if (!err && w->cap.nthreads) {
		size_t n = w->cap.nthreads, nf = w->cap.nframes;
		bool whole = !w->cap.end; /* a cut list is walked again */

		err = py_capture__all(&rt, mem, &w->cap);
		if (w->cap.batched != whole || w->cap.nthreads != n ||
		    w->cap.nframes != nf)
			err = -EPROTO;
	}
	if (!err && w->cap.nthreads == 1) {
		py_resolver__init(&res, &rt, mem);
		res.keep_unknown = w->keep_unknown;
		err = py_resolve__thread(&res, &w->cap, &w->cap.threads[0],
					 &w->frames, &w->n, &w->end);
		/* the names stay valid only with the resolver: copy the
		   ones checked */
		for (size_t i = 0; i < w->n; i++) {
			w->frames[i].function = strdup(w->frames[i].function);
			w->frames[i].file = strdup(w->frames[i].file);
		}
		py_resolver__free(&res);
	}
	stacksnap_mem__free(mem);
	return err;
}

static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free((char *)w->frames[i].function);
		free((char *)w->frames[i].file);
	}
	free(w->frames);
	py_capture__free(&w->cap);
}

static void capture_resolve_image(void)
{
	struct walk w = { 0 };

	build_image();
	CHECK(walk_image(&w) == 0);
	CHECK(w.cap.nthreads == 1 && w.cap.ninterps == 1 && !w.cap.state);
	CHECK(w.cap.threads[0].native_tid == 4242 && !w.cap.threads[0].end);
	CHECK(w.cap.threads[0].holds_gil);
	CHECK(w.n == 2 && !w.end);
	if (w.n == 2) {
		CHECK(!strcmp(w.frames[0].function, "Outer.f") &&
		      !strcmp(w.frames[0].file, "/tmp/x.py"));
		CHECKF(w.frames[0].line == 11 && w.frames[1].line == 12,
		       "lines %u %u", w.frames[0].line, w.frames[1].line);
		CHECK(!w.frames[0].entry && w.frames[1].entry);
	}
	walk_free(&w);
}

static void corrupt_chains_end_with_reason(void)
{
	struct walk w = { 0 };

	build_image();
	p64(0x880 + 48, BASE + 0x800);		/* loop */
	CHECK(walk_image(&w) == 0);
	CHECK(w.cap.threads[0].end &&
	      !strcmp(w.cap.threads[0].end, "loop in frame chain"));
	CHECK(w.cap.threads[0].nframes <= 4);
	walk_free(&w);

	build_image();
	p64(0x880 + 48, 0xdead0000);		/* outside memory */
	CHECK(walk_image(&w) == 0);
	CHECK(w.cap.threads[0].end &&
	      !strcmp(w.cap.threads[0].end, "frame unreadable") &&
	      w.cap.threads[0].nframes == 2 && w.n == 2);
	walk_free(&w);

	build_image();
	p64(0x880 + 32, BASE + 0x1800);		/* not a code object */
	CHECK(walk_image(&w) == 0);
	CHECK(w.n == 1 && w.end && !strcmp(w.end, "code object unreadable"));
	walk_free(&w);

	/* The trace names frames after the event: an unreadable code object
	   is a frame of its own, and the frames past it stay. */
	build_image();
	p64(0x880 + 32, BASE + 0x1800);
	memset(&w, 0, sizeof(w));
	w.keep_unknown = true;
	CHECK(walk_image(&w) == 0);
	CHECK(w.n == 2 && !w.end);
	if (w.n == 2)
		CHECK(!strcmp(w.frames[1].function, "<unknown code object>") &&
		      !strcmp(w.frames[1].file, "?") && w.frames[1].line == 0 &&
		      !strcmp(w.frames[0].function, "Outer.f"));
	walk_free(&w);

	build_image();
	p64(0x500 + 8, BASE + 0x500);		/* thread list loops */
	CHECK(walk_image(&w) == 0);
	CHECK(w.cap.end && !strcmp(w.cap.end, "loop in thread list") &&
	      w.cap.nthreads <= 2);
	walk_free(&w);

	build_image();
	p64(0x18, BASE + 0x500);		/* _finalizing */
	CHECK(walk_image(&w) == 0);
	CHECK(w.cap.state && !strcmp(w.cap.state, "finalizing"));
	walk_free(&w);
}

/* Native frames innermost first: a C function, the eval loop running
 * two Python frames (inner, then its entry frame), a C call, the eval
 * loop running two more, the thread start. The Python frames take the
 * eval loop frames' places; frames past the last eval loop frame (a
 * native walk cut short) come last. */
static void merge_into_native(void)
{
	struct stacksnap_frame native[6] = {
		{ .pc = 0x1000 }, { .pc = 0x5010 }, { .pc = 0x2000 },
		{ .pc = 0x5020 }, { .pc = 0x3000 }, { .pc = 0x4000 },
	};
	struct py_frame pf[5] = {
		{ .function = "a", .file = "f", .line = 1 },
		{ .function = "b", .file = "f", .line = 2, .entry = true },
		{ .function = "c", .file = "f", .line = 3 },
		{ .function = "d", .file = "f", .line = 4, .entry = true },
		{ .function = "e", .file = "f", .line = 5, .entry = true },
	};
	struct stacksnap_runtime_frame out[8];
	size_t n = py_merge(pf, 5, native, 6, 0x5000, 0x5100, out, 8);

	CHECK(n == 5);
	CHECK(out[0].native_index == 1 && out[1].native_index == 1);
	CHECK(out[2].native_index == 3 && out[3].native_index == 3);
	CHECK(out[4].native_index == 6);	/* no eval frame left for it */
	CHECK(!strcmp(out[0].function, "a") && !strcmp(out[3].function, "d"));
	CHECK(out[0].runtime == STACKSNAP_RUNTIME_PYTHON && out[2].line == 3 &&
	      out[0].pc == 0);
	/* max bounds the writes, not the count */
	CHECK(py_merge(pf, 5, native, 6, 0x5000, 0x5100, out, 2) == 5);
	/* no eval loop known: all left over */
	n = py_merge(pf, 5, native, 6, 0, 0, out, 8);
	CHECK(n == 5 && out[0].native_index == 6);
}

/* A 3.9 memory image (PyFrameObjects on the heap): 16 thread states, each
 * with a chain of 12 frames packed in a pool as pymalloc puts a thread's
 * frames, thread 3's chain cut by a wild f_back, thread 5's looping. The
 * capture must give each chain as built, and the second capture (the
 * pages the first used, read in one batch, then each chain from them) must
 * take a few reads, not one per frame (issue 35: 761 reads for 757
 * frames, the freeze +18% at 64 threads). */
#define HBASE 0x200000ull
#define HTHREADS 16
#define HDEPTH 12
static uint8_t himg[0x20000];

static void h64(size_t off, uint64_t v) { memcpy(himg + off, &v, 8); }

static size_t hframe(unsigned i, unsigned d)
{
	return 0x8000 + (i * HDEPTH + d) * 416;
}

static void heap_frames_batched(void)
{
	const struct py_layout *l = py_layout__find(3, 9, false, false);
	struct py_runtime rt = { 0 };
	struct py_capture cap = { 0 };
	struct stacksnap_mem *mem =
		stacksnap_mem__new_copy(himg, sizeof(himg), HBASE);
	unsigned reads[2] = { 0, 0 };

	CHECK(l && l->frame_lasti == 104 && l->frame_previous == 24);
	if (!l || !mem)
		return;
	memset(himg, 0, sizeof(himg));
	memcpy(himg + l->rt_initialized, &(int32_t){ 1 }, 4);
	h64((size_t)l->rt_interpreters_head, HBASE + 0x1000);
	h64(0x1000 + (size_t)l->interp_threads_head, HBASE + 0x2000);
	for (unsigned i = 0; i < HTHREADS; i++) {
		size_t ts = 0x2000 + i * 288;

		h64(ts + (size_t)l->ts_next,
		    i + 1 < HTHREADS ? HBASE + ts + 288 : 0);
		h64(ts + (size_t)l->ts_thread_id, 0x7f0000000000ull + i * 0x1000);
		h64(ts + (size_t)l->ts_current_frame, HBASE + hframe(i, 0));
		for (unsigned d = 0; d < HDEPTH; d++) {
			size_t f = hframe(i, d);

			h64(f + (size_t)l->frame_previous,
			    d + 1 < HDEPTH ? HBASE + hframe(i, d + 1) : 0);
			h64(f + (size_t)l->frame_code, HBASE + 0x1f000 + d * 8);
			memcpy(himg + f + l->frame_lasti,
			       &(int32_t){ (int32_t)(i * 100 + d) }, 4);
		}
	}
	h64(hframe(3, 4) + (size_t)l->frame_previous, 0xdead0000);
	h64(hframe(5, 6) + (size_t)l->frame_previous, HBASE + hframe(5, 2));
	rt.found = true;
	rt.layout = l;
	rt.runtime_addr = HBASE;
	for (int k = 0; k < 2; k++) {
		CHECK(py_capture__all(&rt, mem, &cap) == 0);
		reads[k] = cap.reads;
		CHECK(cap.nthreads == HTHREADS && cap.ninterps == 1);
		for (unsigned i = 0; i < cap.nthreads && i < HTHREADS; i++) {
			const struct py_raw_thread *t = &cap.threads[i];
			size_t want = i == 3 ? 5 : HDEPTH;
			bool same = true;

			if (i == 3)
				CHECK(t->end && !strcmp(t->end, "frame unreadable") &&
				      t->end_addr == 0xdead0000);
			else if (i == 5)
				CHECK(t->end && !strcmp(t->end, "loop in frame chain"));
			else
				CHECK(!t->end);
			if (i == 5)
				want = t->nframes < HDEPTH ? t->nframes : HDEPTH;
			else
				CHECKF(t->nframes == want, "thread %u: %zu frames",
				       i, t->nframes);
			for (size_t d = 0; d < want && d < t->nframes; d++) {
				const struct py_raw_frame *f = &cap.frames[t->first + d];
				size_t dd = i == 5 && d > 6 ? 2 + (d - 7) % 5 : d;

				same &= f->addr == HBASE + hframe(i, (unsigned)dd) &&
					f->code == HBASE + 0x1f000 + dd * 8 &&
					f->instr == i * 100 + dd && f->is_entry;
			}
			CHECKF(same, "thread %u's frames differ from the image's", i);
		}
	}
	CHECK(cap.batched);
	/* the used pages in one batch; the wild pointer's page tried in a
	   second, and once more alone (a smaller range of a page that
	   failed may be there, in a source that is not a live process) */
	CHECKF(reads[1] <= 3, "second capture: %u reads", reads[1]);
	CHECKF(reads[0] <= 2 + HDEPTH, "first capture: %u reads", reads[0]);
	py_capture__free(&cap);
	stacksnap_mem__free(mem);
}

TEST_MAIN("python", TEST(linetable_forms), TEST(linetable_matches_cpython),
	  TEST(old_linetables_match_cpython), TEST(old_linetable_forms),
	  TEST(merge_into_native),
	  TEST(debug_offsets), TEST(capture_resolve_image),
	  TEST(corrupt_chains_end_with_reason), TEST(heap_frames_batched))
