/* test_v8_frames.c - V8 frame naming (src/runtime/v8/v8_frames.c) and the
 * v8dbg constants (v8_layout.c) on a heap image this test lays out as node
 * 20 does (the offsets its v8dbg_* symbols give): a frame's JSFunction to
 * its name (ScopeInfo function variable, inferred name, a String), its
 * script's name, the line of an interpreted frame's bytecode offset
 * through the source position table and the line ends, or counted in a
 * sequential or external source, or, in an optimized frame, its Code's
 * positions (through an inlined function's call); strings sequential,
 * two-byte, cons and sliced; typed frames and corrupt objects ending in
 * errors, not loops.
 * tests/integration/v8_frames compares the same code with node's own
 * stacks. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "runtime/v8/v8_frames.h"
#include "runtime/v8/v8_layout.h"
#include "stacksnap.h"
#include "v8_node20.h"

#define BASE 0x10000ull
#define SIZE 0x2000

static uint8_t img[SIZE];
static uint64_t next_free;
static uint64_t maps[4096];

static void q(uint64_t a, uint64_t v) { memcpy(img + (a - BASE), &v, 8); }
static void i32(uint64_t a, int32_t v) { memcpy(img + (a - BASE), &v, 4); }
static void u16(uint64_t a, uint16_t v) { memcpy(img + (a - BASE), &v, 2); }
static uint64_t smi(int64_t v) { return (uint64_t)v << 32; }
static uint64_t tag(uint64_t a) { return a + 1; }

static uint64_t alloc(size_t n)
{
	uint64_t a = next_free;

	next_free += (n + 15) / 16 * 16;
	if (next_free > BASE + SIZE)
		abort();
	return a;
}

static uint64_t map_of(unsigned type)
{
	if (!maps[type]) {
		maps[type] = alloc(16);
		q(maps[type], tag(BASE + 0x200)); /* the meta map */
		u16(maps[type] + 12, (uint16_t)type);
	}
	return tag(maps[type]);
}

static uint64_t str(const char *s)
{
	uint64_t a = alloc(16 + strlen(s));

	q(a, map_of(8));
	i32(a + 12, (int32_t)strlen(s));
	memcpy(img + (a + 16 - BASE), s, strlen(s));
	return tag(a);
}

static uint64_t str16(const char *s)
{
	uint64_t a = alloc(16 + 2 * strlen(s));

	q(a, map_of(0));
	i32(a + 12, (int32_t)strlen(s));
	for (size_t i = 0; i < strlen(s); i++)
		u16(a + 16 + 2 * i, (uint8_t)s[i]);
	return tag(a);
}

static uint64_t cons(uint64_t first, uint64_t second, int32_t len)
{
	uint64_t a = alloc(32);

	q(a, map_of(1 | 8));
	i32(a + 12, len);
	q(a + 16, first);
	q(a + 24, second);
	return tag(a);
}

static uint64_t sliced(uint64_t parent, int64_t off, int32_t len)
{
	uint64_t a = alloc(32);

	q(a, map_of(3 | 8));
	i32(a + 12, len);
	q(a + 16, parent);
	q(a + 24, smi(off));
	return tag(a);
}

static const char src[] = "a\nbb\r\nccc\rfunction main_leaf() { x(); }\n";

static void zz(uint8_t **p, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);

	do {
		*(*p)++ = (uint8_t)((u & 0x7f) | (u > 0x7f ? 0x80 : 0));
		u >>= 7;
	} while (u);
}

/* An empty image: the meta map at BASE + 0x200, the frame's slots below
 * BASE + 0x100. */
static void reset(void)
{
	memset(img, 0, sizeof(img));
	memset(maps, 0, sizeof(maps));
	next_free = BASE + 0x200;
	alloc(16);
	q(BASE + 0x200, tag(BASE + 0x200));
	u16(BASE + 0x200 + 12, 255);
}

/* The frame's objects, after what the image holds; returns fp. Script offset 33 is on line 4 (after
 * \n, \r\n, and a lone \r). */
struct opts {
	uint64_t name_or_scope, file, inlined_name;
	bool line_ends, external_source, typed;
	int compiled;	/* 1: optimized code, pc's position the frame's own;
			   2: inside a function inlined at the call on line
			   4; 3: an inlining chain that loops; 4: baseline
			   code (baseline_frame()) */
	/* The optimized code replaced the frame on the stack (OSR): its
	   instructions in an InstructionStream at osr_pc - 0x40 - 16, the
	   function's own code still the interpreter's, the frame's
	   interpreter slots kept. */
	bool osr;
};

static uint64_t osr_pc;

#define CODE_START 0x7f0000001000ull

/* Baseline code over ba: bytecodes 5 (2 bytes) at 0, Wide 6 (4 bytes:
 * prefix, then 6 at double scale) at 2, 7 at 6 and 7; the code's
 * lengths: prologue 0x10, then 0x10, 0x20, 0x10, 0x10 (ends 0x10, 0x20,
 * 0x40, 0x50, 0x60); the bytecodes' positions: offset 0 at script
 * offset 3 (line 2), 6 at 33 (line 4). */
static void baseline_frame(uint64_t code, uint64_t ba)
{
	const uint8_t bc[8] = { 5, 0x99, 0, 6, 0x99, 0x99, 7, 7 };
	const uint8_t lens[5] = { 0x10, 0x10, 0x20, 0x10, 0x10 };
	uint8_t table[8], *p = table;
	uint64_t tab = alloc(16 + sizeof(lens)), spt;

	q(tab, map_of(190));
	q(tab + 8, smi(sizeof(lens)));
	memcpy(img + (tab + 16 - BASE), lens, sizeof(lens));
	q(code + 32, tag(tab));
	memcpy(img + (ba + 54 - BASE), bc, sizeof(bc));
	/* Expression entries: code deltas d as -d - 1. */
	zz(&p, -(0 - -1) - 1);	/* offset 0 (from -1) */
	zz(&p, (3 + 1) << 1);
	zz(&p, -(6 - 0) - 1);	/* offset 6 */
	zz(&p, ((33 + 1) << 1) - ((3 + 1) << 1));
	spt = alloc(16 + (size_t)(p - table));
	q(spt, map_of(190));
	q(spt + 8, smi(p - table));
	memcpy(img + (spt + 16 - BASE), table, (size_t)(p - table));
	q(ba + 32, tag(spt));
}

static struct stacksnap_mem *frame(const struct opts *o, uint64_t *fp)
{
	uint64_t ctx, si, le, sc, spt, ba, sfi, fn;
	uint64_t ends[4] = { 1, 5, 9, 39 };
	uint8_t table[32], *p = table;
	/* (code offset, statement, position): the function entry (-1), a
	   statement at 0, the call at 3. */
	const int64_t ent[3][3] = { { -1, 0, 9 }, { 0, 1, 20 }, { 3, 0, 33 } };
	int64_t pc = -1, pp = 0;

	ctx = alloc(16);
	q(ctx, map_of(205));
	si = o->name_or_scope;
	le = alloc(16 + 8 * 4);
	q(le, map_of(175));
	q(le + 8, smi(4));
	for (int i = 0; i < 4; i++)
		q(le + 16 + 8 * i, smi((int64_t)ends[i]));
	sc = alloc(64);
	q(sc, map_of(167));
	q(sc + 16, o->file);
	q(sc + 56, o->line_ends ? tag(le) : smi(0));
	if (o->external_source) {
		uint64_t raw = alloc(sizeof(src)), ext = alloc(32);

		memcpy(img + (raw - BASE), src, sizeof(src) - 1);
		q(ext, map_of(0x2a));
		i32(ext + 12, (int32_t)sizeof(src) - 1);
		q(ext + 16, 0x1234);
		q(ext + 24, raw);
		q(sc + 8, tag(ext));
	} else {
		q(sc + 8, str(src));
	}
	for (int i = 0; i < 3; i++) {
		int64_t d = ent[i][0] - pc, raw = (ent[i][2] + 1) << 1;

		zz(&p, ent[i][1] ? d : -d - 1);
		zz(&p, raw - pp);
		pc = ent[i][0];
		pp = raw;
	}
	spt = alloc(16 + (size_t)(p - table));
	q(spt, map_of(190));
	q(spt + 8, smi(p - table));
	memcpy(img + (spt + 16 - BASE), table, (size_t)(p - table));
	ba = alloc(72);
	q(ba, map_of(191));
	q(ba + 8, smi(8));
	q(ba + 32, tag(spt));
	sfi = alloc(48);
	q(sfi, map_of(262));
	q(sfi + 8, tag(ba));
	q(sfi + 16, si);
	q(sfi + 32, tag(sc));
	fn = alloc(64);
	q(fn, map_of(2066));
	q(fn + 24, tag(sfi));
	if (o->compiled) {
		/* The Code: pc offset 0x40 (the lookup pc) falls after the
		   entry at 0x30, whose position is 33 (line 4) or, inlined
		   (id 1), 3 (line 2) in the inlined function, whose call is at 33. */
		uint64_t code = alloc(64), cspt, deopt, ipos;
		uint8_t ctab[16], *cp = ctab;
		int64_t own = (33 + 1) << 1, inl = ((int64_t)(3 + 1) << 1) | (1ll << 31);

		zz(&cp, -(0x30 + 1) - 1);
		zz(&cp, o->compiled == 1 ? own : inl);
		cspt = alloc(16 + (size_t)(cp - ctab));
		q(cspt, map_of(190));
		q(cspt + 8, smi(cp - ctab));
		memcpy(img + (cspt + 16 - BASE), ctab, (size_t)(cp - ctab));
		ipos = alloc(16 + 16);
		q(ipos, map_of(190));
		q(ipos + 8, smi(16));
		q(ipos + 16, o->compiled == 3 ? (uint64_t)inl : (uint64_t)own);
		deopt = alloc(16 + 8 * 8);
		q(deopt, map_of(175));
		q(deopt + 8, smi(8));
		q(deopt + 16 + 8 * 7, tag(ipos));
		if (o->inlined_name) {
			/* The inlined function (literal 0, a weak reference)
			   shares the frame's script. */
			uint64_t lit = alloc(24), isfi = alloc(48);

			q(isfi, map_of(262));
			q(isfi + 16, o->inlined_name);
			q(isfi + 32, tag(sc));
			q(lit, map_of(240));
			q(lit + 8, smi(1));
			q(lit + 16, tag(isfi) | 2);
			q(deopt + 16 + 8 * 2, tag(lit));
		}
		q(code, map_of(245));
		q(code + 16, tag(deopt));
		q(code + 24, tag(cspt));
		q(code + 40, CODE_START);
		i32(code + 48, o->compiled == 4 ? 11 : 13); /* BASELINE, TURBOFAN */
		i32(code + 56, 0x100);
		q(fn + 48, tag(code));
		if (o->compiled == 4)
			baseline_frame(code, ba);
		if (o->osr) {
			uint64_t is = alloc(16 + 0x100), tc = alloc(64);

			q(is, map_of(252));
			q(is + 8, tag(code));
			q(code + 40, is + 16);
			osr_pc = is + 16 + 0x40;
			q(tc, map_of(245));
			q(tc + 40, CODE_START);
			i32(tc + 48, 3); /* the interpreter's */
			i32(tc + 56, 0x100);
			q(fn + 48, tag(tc));
		}
	}
	*fp = BASE + 0x100;
	q(*fp - 8, o->typed ? smi(0) + (13 << 1) : tag(ctx));
	q(*fp - 16, tag(fn));
	q(*fp - 32, tag(ba));
	/* An optimized frame has no bytecode offset there (one replaced on
	   the stack keeps the interpreter's). */
	q(*fp - 40, o->compiled && !o->osr ? tag(ctx) : smi(53 + 3));
	return stacksnap_mem__new_copy(img, sizeof(img), BASE);
}

/* A ScopeInfo with no context locals: the function variable's name, then
 * (flag 14) the inferred name. */
static uint64_t scope_info(uint64_t fvar_name, uint64_t inferred)
{
	uint64_t a = alloc(64);
	int64_t flags = (fvar_name ? 3 << 12 : 0) | (inferred ? 1 << 14 : 0);

	q(a, map_of(261));
	q(a + 8, smi(flags));
	q(a + 16, smi(1));
	q(a + 24, smi(0));
	if (fvar_name) {
		q(a + 32, fvar_name);
		q(a + 40, smi(-1));
	}
	q(a + (fvar_name ? 48 : 32), inferred ? inferred : smi(0));
	return tag(a);
}

static void layout(struct v8_layout *l)
{
	const char *missing = NULL;

	CHECKF(v8_node20_layout(l, &missing) == 0, "%s", missing ? missing : "");
}

static void names_and_lines(void)
{
	struct v8_layout l;
	struct stacksnap_mem *mem;
	struct v8_frame out;
	struct opts o = { .line_ends = true };
	uint64_t fp;

	layout(&l);
	for (int c = 0; c < 5; c++) {
		memset(&o, 0, sizeof(o));
		o.line_ends = c != 3 && c != 4;
		o.external_source = c == 4;
		reset();
		switch (c) {
		case 0:
			o.name_or_scope = scope_info(str("main_leaf"), 0);
			o.file = str("/tmp/chain.js");
			break;
		case 1:
			o.name_or_scope = scope_info(str(""), str("Module._compile"));
			o.file = cons(str16("node:internal/"),
				      sliced(str("xxmodules/cjsyy"), 2, 11), 25);
			break;
		case 2:
			o.name_or_scope = str("plain");
			o.file = str("/a.js");
			break;
		default:
			o.name_or_scope = scope_info(0, 0);
			o.file = str("/b.js");
			break;
		}
		mem = frame(&o, &fp);
		CHECKF(v8_frame__name(&l, mem, fp, 0, &out, 1) == 1, "case %d", c);
		switch (c) {
		case 0:
			CHECKF(!strcmp(out.function, "main_leaf"), "%s", out.function);
			CHECKF(!strcmp(out.file, "/tmp/chain.js"), "%s", out.file);
			break;
		case 1:
			CHECKF(!strcmp(out.function, "Module._compile"), "%s", out.function);
			CHECKF(!strcmp(out.file, "node:internal/modules/cjs"), "%s", out.file);
			break;
		case 2:
			CHECKF(!strcmp(out.function, "plain"), "%s", out.function);
			break;
		default:
			CHECKF(!strcmp(out.function, "<anonymous>"), "%s", out.function);
			break;
		}
		/* Line ends, or the terminators counted in the source (a
		   lone \r and \r\n count once each). */
		CHECKF(out.line == 4 && out.interpreted, "case %d: line %u", c, out.line);
		stacksnap_mem__free(mem);
	}
}

static void not_js_and_corrupt(void)
{
	struct v8_layout l;
	struct stacksnap_mem *mem;
	struct v8_frame out;
	struct opts o = { .line_ends = true, .typed = true };
	uint64_t fp, self;

	layout(&l);
	/* A typed frame: a Smi marker where the context would be. */
	reset();
	o.name_or_scope = str("x");
	o.file = str("/x.js");
	mem = frame(&o, &fp);
	CHECK(v8_frame__name(&l, mem, fp, 0, &out, 1) == -ENOENT);
	CHECK(v8_frame__name(&l, mem, 8, 0, &out, 1) == -ENOENT);
	CHECK(v8_frame__name(&l, mem, fp, 0, &out, 0) == -EINVAL);
	CHECK(v8_frame__name(&l, mem, BASE + SIZE + 64, 0, &out, 1) == -EFAULT);
	stacksnap_mem__free(mem);
	/* A cons string that is its own first part: the part budget ends
	   it; the frame is still named. */
	o.typed = false;
	reset();
	self = alloc(32);
	q(self, map_of(1 | 8));
	i32(self + 12, 100);
	q(self + 16, tag(self));
	q(self + 24, tag(self));
	o.name_or_scope = tag(self);
	o.file = tag(self);
	mem = frame(&o, &fp);
	CHECK(v8_frame__name(&l, mem, fp, 0, &out, 1) == 1);
	CHECK(!strcmp(out.function, "<anonymous>"));
	stacksnap_mem__free(mem);
}

static void constants(void)
{
	struct v8_layout l;
	const char *missing;

	v8_layout__init(&l);
	v8_layout__parse_text(&l, v8_node20, sizeof(v8_node20) - 1);
	v8_layout__set(&l, "TaggedSize", 4);
	CHECK(v8_layout__check(&l, &missing) == -ENOTSUP);
	v8_layout__init(&l);
	v8_layout__parse_text(&l, v8_node20, 200);
	CHECK(v8_layout__check(&l, &missing) == -ENOENT && missing);
	v8_layout__init(&l);
	v8_layout__parse_text(&l, v8_node20, sizeof(v8_node20) - 1);
	v8_layout__set(&l, "off_fp_function", 1 << 20);
	CHECK(v8_layout__check(&l, &missing) == -EPROTO &&
	      !strcmp(missing, "off_fp_function"));
	/* Node's own, where it is installed. */
	v8_layout__init(&l);
	if (v8_layout__read_elf("/usr/bin/node", NULL, &l) == 0) {
		CHECK(v8_layout__check(&l, &missing) == 0);
		CHECK(l.fp_function == -16 && l.tagged_size == 8);
	}
}

static void optimized(void)
{
	struct v8_layout l;
	struct stacksnap_mem *mem;
	struct v8_frame out[4];
	struct opts o = { .line_ends = true };
	uint64_t fp;
	const unsigned want[4] = { 0, 4, 4, 0 };

	layout(&l);
	for (int c = 1; c <= 4; c++) {
		int n;

		reset();
		o.compiled = c == 4 ? 2 : c;
		o.name_or_scope = str("hot");
		o.file = str("/h.js");
		o.inlined_name = c == 4 ? str("inner") : 0;
		mem = frame(&o, &fp);
		n = v8_frame__name(&l, mem, fp, CODE_START + 0x40, out, 4);
		if (c == 4) {
			/* The inlined function first, at its own line (2),
			   then the frame's, at the call (4). */
			CHECKF(n == 2, "%d", n);
			CHECK(n == 2 && !strcmp(out[0].function, "inner") &&
			      out[0].inlined && out[0].line == 2 &&
			      !strcmp(out[0].file, "/h.js"));
			CHECK(n == 2 && !strcmp(out[1].function, "hot") &&
			      !out[1].inlined && out[1].line == 4);
			/* Room for one frame: the frame's own, still. */
			CHECK(v8_frame__name(&l, mem, fp, CODE_START + 0x40, out, 1) == 1 &&
			      !strcmp(out[0].function, "hot") && out[0].line == 4);
		} else {
			CHECKF(n == 1, "%d", n);
			CHECK(!strcmp(out[0].function, "hot"));
			CHECKF(out[0].line == want[c] && !out[0].interpreted,
			       "case %d: line %u", c, out[0].line);
		}
		/* A pc outside the code: not this code's frame, no line. */
		CHECK(v8_frame__name(&l, mem, fp, CODE_START + 0x200, out, 4) == 1 &&
		      out[0].line == 0);
		CHECK(v8_frame__name(&l, mem, fp, CODE_START + 0x10, out, 4) == 1 &&
		      out[0].line == 0);
		stacksnap_mem__free(mem);
	}
}

/* A frame whose optimized code replaced it on the stack (OSR): the
 * function's own code is still the interpreter's and its interpreter
 * slots say the loop's offset; the Code holding pc, found by its
 * InstructionStream before pc, names the frame and what it inlined
 * there, not the interpreter slots. Without the stream's constants, the
 * interpreter's line. */
static void osr(void)
{
	struct v8_layout l;
	struct stacksnap_mem *mem;
	struct v8_frame out[4];
	struct opts o = { .line_ends = true, .compiled = 2, .osr = true };
	uint64_t fp;
	int n;

	layout(&l);
	reset();
	o.name_or_scope = str("middle");
	o.file = str("/o.js");
	o.inlined_name = str("leaf");
	mem = frame(&o, &fp);
	n = v8_frame__name(&l, mem, fp, osr_pc, out, 4);
	CHECKF(n == 2 && !strcmp(out[0].function, "leaf") && out[0].inlined &&
	       out[0].line == 2 && !strcmp(out[1].function, "middle") &&
	       !out[1].inlined && out[1].line == 4 && !out[1].interpreted,
	       "n %d: %s:%u", n, out[0].function, out[0].line);
	l.type_istream = -1;
	n = v8_frame__name(&l, mem, fp, osr_pc, out, 4);
	CHECKF(n == 1 && !strcmp(out[0].function, "middle") && out[0].interpreted,
	       "n %d: %s", n, out[0].function);
	stacksnap_mem__free(mem);
}

/* A baseline frame: its pc's bytecode offset from the Code's table
 * walked beside the bytecodes (a Wide prefix scaling the one after it),
 * its line that offset's; the prologue, pcs past the table, and a binary
 * without the bytecode sizes give none. */
static void baseline(void)
{
	static const uint8_t sizes[3][8] = {
		{ 1, 1, 1, 1, 1, 2, 2, 1 }, { 1, 1, 1, 1, 1, 3, 3, 1 },
		{ 1, 1, 1, 1, 1, 5, 5, 1 },
	};
	struct v8_layout l;
	struct stacksnap_mem *mem;
	struct v8_frame out[2];
	struct opts o = { .line_ends = true, .compiled = 4 };
	uint64_t fp;
	const struct { uint64_t pc; unsigned line; } at[] = {
		{ 0x18, 2 },	/* offset 0 */
		{ 0x30, 2 },	/* 2, Wide: before 6's position */
		{ 0x48, 4 },	/* 6: misread prefix would give 3 (line 2) */
		{ 0x5f, 4 },	/* 7 */
		{ 0x08, 0 },	/* the prologue (function entry) */
		{ 0x60, 0 },	/* past the table */
	};

	layout(&l);
	v8_layout__set(&l, "class_Code__bytecode_offset_table__ByteArray", 32);
	l.nbytecodes = 8;
	for (int k = 0; k < 3; k++)
		memcpy(l.bytecode_sizes[k], sizes[k], 8);
	reset();
	o.name_or_scope = str("warm");
	o.file = str("/b.js");
	mem = frame(&o, &fp);
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		int n = v8_frame__name(&l, mem, fp, CODE_START + at[k].pc, out, 2);

		CHECKF(n == 1 && !strcmp(out[0].function, "warm") &&
		       out[0].line == at[k].line && !out[0].interpreted,
		       "pc +%#llx: n %d line %u", (unsigned long long)at[k].pc, n,
		       n == 1 ? out[0].line : 0);
	}
	l.nbytecodes = 0;
	CHECK(v8_frame__name(&l, mem, fp, CODE_START + 0x48, out, 2) == 1 &&
	      out[0].line == 0);
	stacksnap_mem__free(mem);
}

TEST_MAIN("v8_frames", TEST(names_and_lines), TEST(optimized), TEST(osr),
	  TEST(baseline),
	  TEST(not_js_and_corrupt), TEST(constants))
