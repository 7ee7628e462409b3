/* test_analysis.c - the analysis stepper's dataflow on hand-assembled
 * functions: heights through push/sub/mov %rsp,%rbp/call/leave/ret, the
 * saved rbp, and each kind of "unknown" (heights disagreeing at a join,
 * rsp realigned, code reached only by an indirect jump, a return address
 * not after a call). The whole-library comparison with the CFI is
 * tests/integration/analysis_compare. */
#include <stdlib.h>

#include "unwind/unwind_internal.h"
#include "harness.h"

#define BASE 0x1000

static struct analysis_fn *analyse(const uint8_t *code, size_t len)
{
	struct analysis_fn *fn = NULL;

	CHECK(analysis__function(code, BASE, BASE + len, &fn) == 0 && fn);
	return fn;
}

/* Queries fn at BASE + off; want_rsp/want_rbp 0 means "not known that way". */
static void expect(const struct analysis_fn *fn, unsigned off, bool exact,
		   int want_rsp, int want_rbp, uint8_t want_rbp_kind)
{
	struct analysis_result r;
	int rc = analysis__query(fn, BASE + off, exact, &r);

	CHECKF(rc == 0, "+%#x: unknown (%s)", off, analysis_why__str(r.why));
	if (rc)
		return;
	CHECKF(want_rsp ? r.rsp_ok && r.cfa_rsp == want_rsp : !r.rsp_ok,
	       "+%#x: CFA rsp+%d (ok %d), want %d", off, r.cfa_rsp, r.rsp_ok,
	       want_rsp);
	CHECKF(r.cfa_rbp == want_rbp, "+%#x: CFA rbp+%d, want %d", off,
	       r.cfa_rbp, want_rbp);
	CHECKF(r.rbp == want_rbp_kind, "+%#x: rbp kind %u, want %u", off, r.rbp,
	       want_rbp_kind);
}

static void expect_unknown(const struct analysis_fn *fn, unsigned off,
			   bool exact, enum analysis_why why)
{
	struct analysis_result r;
	int rc = analysis__query(fn, BASE + off, exact, &r);

	CHECKF(rc != 0 && r.why == why, "+%#x: rc %d why '%s', want '%s'", off,
	       rc, analysis_why__str(r.why), analysis_why__str(why));
}

static void test_frame_pointer_function(void)
{
	static const uint8_t code[] = {
		0x55,			      /* 0: push %rbp */
		0x48, 0x89, 0xe5,	      /* 1: mov %rsp,%rbp */
		0x48, 0x83, 0xec, 0x10,	      /* 4: sub $0x10,%rsp */
		0xe8, 0x00, 0x00, 0x00, 0x00, /* 8: call (next) */
		0xc9,			      /* d: leave */
		0xc3,			      /* e: ret */
	};
	struct analysis_fn *fn = analyse(code, sizeof(code));

	if (!fn)
		return;
	expect(fn, 0x0, true, 8, 0, ANALYSIS_RBP_SAME);
	expect(fn, 0x1, true, 16, 0, ANALYSIS_RBP_SAVED);
	expect(fn, 0x4, true, 16, 16, ANALYSIS_RBP_SAVED);
	expect(fn, 0x8, true, 32, 16, ANALYSIS_RBP_SAVED);
	expect(fn, 0xd, false, 32, 16, ANALYSIS_RBP_SAVED); /* return address */
	expect(fn, 0xd, true, 32, 16, ANALYSIS_RBP_SAVED);
	expect(fn, 0xe, true, 8, 0, ANALYSIS_RBP_SAME);
	struct analysis_result r;
	CHECK(analysis__query(fn, BASE + 1, true, &r) == 0 && r.rbp_off == -16);
	expect_unknown(fn, 0x5, true, ANALYSIS_WHY_UNREACHED); /* mid-insn */
	expect_unknown(fn, 0x5, false, ANALYSIS_WHY_NOT_CALL);
	analysis__fn_free(fn);
}

static void test_unknowns(void)
{
	static const uint8_t join[] = {
		0x85, 0xff,	    /* 0: test %edi,%edi */
		0x74, 0x01,	    /* 2: je 5 */
		0x50,		    /* 4: push %rax */
		0xc3,		    /* 5: ret: reached at heights 8 and 16 */
	};
	static const uint8_t realign[] = {
		0x55,			/* 0: push %rbp */
		0x48, 0x89, 0xe5,	/* 1: mov %rsp,%rbp */
		0x48, 0x83, 0xe4, 0xf0, /* 4: and $-16,%rsp */
		0x50,			/* 8: push %rax: rsp unknown, rbp frame */
		0xc9,			/* 9: leave */
		0xc3,			/* a: ret */
	};
	static const uint8_t lost[] = {
		0x48, 0x83, 0xe4, 0xf0, /* 0: and $-16,%rsp (no frame) */
		0xc3,			/* 4: ret */
	};
	static const uint8_t indirect[] = {
		0xff, 0xe0, /* 0: jmp *%rax */
		0xc3,	    /* 2: ret: reached only through the jump */
	};
	struct analysis_fn *fn;

	if ((fn = analyse(join, sizeof(join)))) {
		expect(fn, 0x4, true, 8, 0, ANALYSIS_RBP_SAME);
		expect_unknown(fn, 0x5, true, ANALYSIS_WHY_JOIN);
		analysis__fn_free(fn);
	}
	if ((fn = analyse(realign, sizeof(realign)))) {
		expect(fn, 0x8, true, 0, 16, ANALYSIS_RBP_SAVED);
		expect(fn, 0x9, true, 0, 16, ANALYSIS_RBP_SAVED);
		expect(fn, 0xa, true, 8, 0, ANALYSIS_RBP_SAME);
		analysis__fn_free(fn);
	}
	if ((fn = analyse(lost, sizeof(lost)))) {
		expect_unknown(fn, 0x4, true, ANALYSIS_WHY_UNTRACKED);
		analysis__fn_free(fn);
	}
	if ((fn = analyse(indirect, sizeof(indirect)))) {
		expect(fn, 0x0, true, 8, 0, ANALYSIS_RBP_SAME);
		expect_unknown(fn, 0x2, true, ANALYSIS_WHY_UNREACHED);
		analysis__fn_free(fn);
	}
	CHECK(analysis__is_cold("foo.cold") && analysis__is_cold("bar.cold.3") &&
	      !analysis__is_cold("cold_path"));
}

TEST_MAIN("analysis", TEST(test_frame_pointer_function), TEST(test_unknowns))
