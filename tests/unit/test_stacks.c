/* test_stacks.c - aggregated stacks: distinct stacks counted once, the
 * folded writer's names and order, the folded reader (and its errors), and
 * the structure of what the pprof, speedscope and SVG writers emit. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacks.h"
#include "harness.h"
#include "stacksnap.h"

/* Writes st in fmt into a malloc'ed string (len in *len). */
static char *render(struct stacksnap_stacks *st, enum stacksnap_stacks_format fmt,
		    const struct stacksnap_stacks_write_opts *o, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	if (stacksnap_stacks__write(st, f, fmt, o)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static void add3(struct stacksnap_stacks *st, const char *leaf, uint64_t n)
{
	struct stacksnap_stack_frame fr[3] = {
		{ .name = leaf, .module = "/bin/prog", .addr = 0x1010 + strlen(leaf) },
		{ .name = "main(int, char**)", .module = "/bin/prog", .addr = 0x1100 },
		{ .name = "prog", .kind = STACKSNAP_KIND_ROOT },
	};

	CHECK(stacksnap_stacks__add(st, fr, 3, n) == 0);
}

static void distinct_stacks_counted_once(void)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	size_t nframes;

	for (int i = 0; i < 1000; i++)
		add3(st, i % 2 ? "a" : "b;c", 1);
	nframes = st->nframes;
	CHECK_EQ_U64(stacksnap_stacks__samples(st), 1000);
	CHECK_EQ_U64(stacksnap_stacks__distinct(st), 2);
	/* Memory follows distinct stacks: more samples add no frame, no node. */
	for (int i = 0; i < 1000; i++)
		add3(st, "a", 2);
	CHECK_EQ_U64(st->nframes, nframes);
	CHECK_EQ_U64(st->nnodes, 1 + 1 + 1 + 2);
	CHECK_EQ_U64(stacksnap_stacks__samples(st), 3000);
	stacksnap_stacks__free(st);
}

static void folded_names_and_order(void)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	struct stacksnap_stack_frame unk[2] = {
		{ .module = "/usr/lib/libz.so.1", .addr = 5 },
		{ .name = "prog", .kind = STACKSNAP_KIND_ROOT },
	};
	size_t len;
	char *out;

	add3(st, "a", 3);
	add3(st, "b;c", 2);
	/* A parenthesised part after a space is the name's (a HotSpot
	   stub, as the dump prints it): kept whole, no name ending in a
	   space; a parameter list is cut. */
	add3(st, "StubRoutines (1)", 4);
	add3(st, "ns::f(long) const", 5);
	CHECK(stacksnap_stacks__add(st, unk, 2, 1) == 0);
	out = render(st, STACKSNAP_FORMAT_FOLDED, NULL, &len);
	CHECKF(out && !strcmp(out, "prog;[libz.so.1] 1\nprog;main;StubRoutines (1) 4\n"
			      "prog;main;a 3\nprog;main;b:c 2\nprog;main;ns::f 5\n"),
	       "got:\n%s", out ? out : "(null)");
	free(out);
	stacksnap_stacks__free(st);
}

/* Only a trailing parameter list is dropped: function types and operators
 * in template arguments, "operator()", lambdas and an enclosing function's
 * list stay (the profile outputs cut C++ names at the first '('). */
static void folded_names_keep_templates(void)
{
	static const char *const cases[][2] = {
		{ "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)()> > >::_M_run()",
		  "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)()> > >::_M_run" },
		{ "std::function<bool (int, int)>::operator()(int, int) const",
		  "std::function<bool (int, int)>::operator()" },
		{ "main::{lambda()#1}::operator()() const", "main::{lambda()#1}::operator()" },
		{ "bool std::operator< <char>(std::string const&, char const*)",
		  "bool std::operator< <char>" },
		{ "S::operator<<(int)", "S::operator<<" },
		{ "S::operator->() const", "S::operator->" },
		{ "(anonymous namespace)::worker(int)", "(anonymous namespace)::worker" },
		{ "f(int)::Local::run()", "f(int)::Local::run" },
		{ "foo(int) [clone .cold]", "foo" },
		{ "S::operator int()", "S::operator int" },
		{ "plain_c_function", "plain_c_function" },
		{ "std::less<void>::operator()<int&, int&>(int&, int&) const",
		  "std::less<void>::operator()<int&, int&>" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
		struct stacksnap_stack_frame fr[1] = {
			{ .name = cases[i][0], .module = "/bin/prog", .addr = 0x1000 },
		};
		char want[512];
		size_t len;
		char *out;

		CHECK(stacksnap_stacks__add(st, fr, 1, 1) == 0);
		out = render(st, STACKSNAP_FORMAT_FOLDED, NULL, &len);
		snprintf(want, sizeof(want), "%s 1\n", cases[i][1]);
		CHECKF(out && !strcmp(out, want), "%s: got %s", cases[i][0], out ? out : "(null)");
		free(out);
		stacksnap_stacks__free(st);
	}
}

static void folded_reader(void)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	static const char text[] = "# comment\nprog;main;a 3\r\nprog;main;b 2\n\nprog;k_[k] 4";
	size_t len;
	char *out;

	CHECK(stacksnap_stacks__add_folded(st, NULL, text, strlen(text)) == 3);
	CHECK_EQ_U64(stacksnap_stacks__samples(st), 9);
	out = render(st, STACKSNAP_FORMAT_FOLDED, NULL, &len);
	CHECKF(out && !strcmp(out, "prog;k 4\nprog;main;a 3\nprog;main;b 2\n"), "got:\n%s",
	       out ? out : "(null)");
	free(out);
	CHECK(stacksnap_stacks__add_folded(st, NULL, "a;b x\n", 6) == -EINVAL);
	CHECK(stacksnap_stacks__add_folded(st, NULL, "a;b -3\n", 7) == -EINVAL);
	CHECK(stacksnap_stacks__add_folded(st, NULL, "nocount\n", 8) == -EINVAL);
	stacksnap_stacks__free(st);
}

static void writers_structure(void)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	struct stacksnap_stacks *base = stacksnap_stacks__new(NULL);
	enum stacksnap_stacks_format fmt;
	size_t len;
	char *out;

	add3(st, "a", 3);
	add3(st, "b", 1);
	add3(base, "a", 1);
	add3(base, "b", 3);
	out = render(st, STACKSNAP_FORMAT_PPROF, NULL, &len);
	CHECK(out && len > 20 && (uint8_t)out[0] == 0x1f && (uint8_t)out[1] == 0x8b);
	free(out);
	out = render(st, STACKSNAP_FORMAT_SPEEDSCOPE, NULL, &len);
	CHECK(out && strstr(out, "\"weights\":[3,1]") && strstr(out, "\"type\":\"sampled\""));
	free(out);
	out = render(st, STACKSNAP_FORMAT_SVG, NULL, &len);
	CHECK(out && strstr(out, "data-name=\"a\"") && strstr(out, "(3 samples, 75.00%)"));
	free(out);
	STACKSNAP_OPTS(stacksnap_stacks_write_opts, wo, .base = base);
	out = render(st, STACKSNAP_FORMAT_SVG, &wo, &len);
	/* a went from 25% to 75%: red; b from 75% to 25%: blue. */
	CHECK(out && strstr(out, "base 1 samples, 25.00%; +50.00%") &&
	      strstr(out, "hsl(0,80%") && strstr(out, "hsl(220,80%"));
	free(out);
	CHECK(stacksnap_stacks_format__parse("svg", &fmt) == 0 && fmt == STACKSNAP_FORMAT_SVG);
	CHECK(stacksnap_stacks_format__parse("png", &fmt) == -EINVAL);
	stacksnap_stacks__free(st);
	stacksnap_stacks__free(base);
}

struct visited {
	char text[4][64];
	uint64_t count[4];
	int n;
};

static int visit_one(const char *folded, uint64_t count, void *user)
{
	struct visited *v = user;

	if (v->n == 4)
		return 7; /* stops the visit, returned as it is */
	snprintf(v->text[v->n], sizeof(v->text[0]), "%s", folded);
	v->count[v->n++] = count;
	return 0;
}

/* visit_folded gives what the folded writer prints: stacks that print
 * the same (same names, other addresses) are one line, summed; sorted. */
static void visit_folded_lines(void)
{
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);
	struct stacksnap_stack_frame other[3] = {
		{ .name = "a", .module = "/bin/prog", .addr = 0x2222 },
		{ .name = "main(int, char**)", .module = "/bin/prog", .addr = 0x1100 },
		{ .name = "prog", .kind = STACKSNAP_KIND_ROOT },
	};
	struct visited v = { .n = 0 };
	STACKSNAP_OPTS(stacksnap_stacks_opts, o, .period_ns = 10000000, .period_type = "wall");
	struct stacksnap_stacks *wall = stacksnap_stacks__new(&o);
	char *out;
	size_t len;

	add3(st, "b", 2);
	add3(st, "a", 3);
	CHECK(stacksnap_stacks__add(st, other, 3, 4) == 0);
	CHECK_EQ_U64(stacksnap_stacks__distinct(st), 3);
	CHECK(stacksnap_stacks__visit_folded(st, visit_one, &v) == 0);
	CHECK(v.n == 2);
	CHECK(!strcmp(v.text[0], "prog;main;a") && v.count[0] == 7);
	CHECK(!strcmp(v.text[1], "prog;main;b") && v.count[1] == 2);
	CHECK(stacksnap_stacks__visit_folded(st, NULL, NULL) == -EINVAL);
	for (int i = 0; i < 5; i++) {
		char leaf[16];

		snprintf(leaf, sizeof(leaf), "f%d", i);
		add3(st, leaf, 1);
	}
	v.n = 0;
	CHECK(stacksnap_stacks__visit_folded(st, visit_one, &v) == 7);
	/* The pprof file names the period's type as asked. */
	add3(wall, "a", 1);
	out = render(wall, STACKSNAP_FORMAT_PPROF, NULL, &len);
	CHECK(out != NULL);
	free(out);
	CHECK(wall && !strcmp(wall->o.period_type, "wall"));
	CHECK(!strcmp(st->o.period_type, "cpu"));
	stacksnap_stacks__free(wall);
	stacksnap_stacks__free(st);
}

/* A write that fails returns its own cause, ENOSPC on /dev/full, in every
 * format (it was EIO: the CLI could not say "No space left on device"). */
static void write_error_cause(void)
{
	static const enum stacksnap_stacks_format fmts[] = {
		STACKSNAP_FORMAT_FOLDED, STACKSNAP_FORMAT_PPROF,
		STACKSNAP_FORMAT_SPEEDSCOPE, STACKSNAP_FORMAT_SVG,
	};
	struct stacksnap_stacks *st = stacksnap_stacks__new(NULL);

	for (int i = 0; i < 300; i++) {
		char leaf[24];

		snprintf(leaf, sizeof(leaf), "leaf_%d", i);
		add3(st, leaf, 1);
	}
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		FILE *f = fopen("/dev/full", "we");

		if (!f)
			continue; /* no /dev/full here */
		CHECK_EQ_U64(stacksnap_stacks__write(st, f, fmts[i], NULL), -ENOSPC);
		fclose(f);
	}
	stacksnap_stacks__free(st);
}

/* The one JSON string writer: escapes, null, UTF-8 kept, and each byte
 * of a broken sequence (a name cut to 15 bytes mid-character) as \ufffd. */
static void json_string_escapes(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "a\"b\\c\n\x01", "\"a\\\"b\\\\c\\u000a\\u0001\"" },
		{ "\xd0\xb2\xd0\xbe", "\"\xd0\xb2\xd0\xbe\"" },		/* "во" */
		{ "abc\xd0\xb2\xd0", "\"abc\xd0\xb2\\ufffd\"" },	/* cut */
		{ "\xff\x80x", "\"\\ufffd\\ufffdx\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },	/* a surrogate */
		{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },	/* U+1F600 */
		{ NULL, "null" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(f != NULL);
		if (!f)
			continue;
		stacksnap_json_string(f, cases[i].in);
		fclose(f);
		CHECK(buf && !strcmp(buf, cases[i].out));
		free(buf);
	}
}

TEST_MAIN("stacks", TEST(distinct_stacks_counted_once), TEST(folded_names_and_order),
	  TEST(folded_names_keep_templates),
	  TEST(folded_reader), TEST(writers_structure), TEST(visit_folded_lines),
	  TEST(write_error_cause), TEST(json_string_escapes))
