/* test_base.c - the bounds-checked cursor, LEB128 and growable arrays. */
#include <errno.h>
#include <stdint.h>

#include "base/cursor.h"
#include "base/log.h"
#include "base/opts.h"
#include "base/vec.h"
#include "harness.h"

static void uleb_values(void)
{
	static const uint8_t b[] = { 0x02, 0x7f, 0x80, 0x01, 0xe5, 0x8e, 0x26 };
	struct cursor c;

	cursor_init(&c, b, sizeof(b));
	CHECK_EQ_U64(cursor_uleb(&c), 2);
	CHECK_EQ_U64(cursor_uleb(&c), 127);
	CHECK_EQ_U64(cursor_uleb(&c), 128);
	CHECK_EQ_U64(cursor_uleb(&c), 624485);
	CHECK(!c.bad);
	CHECK_EQ_U64(cursor_uleb(&c), 0);
	CHECK(c.bad);
}

static void sleb_values(void)
{
	static const uint8_t b[] = { 0x02, 0x7e, 0xff, 0x00, 0x81, 0x7f,
				     0x80, 0x7f, 0xc0, 0xbb, 0x78 };
	struct cursor c;

	cursor_init(&c, b, sizeof(b));
	CHECK(cursor_sleb(&c) == 2);
	CHECK(cursor_sleb(&c) == -2);
	CHECK(cursor_sleb(&c) == 127);
	CHECK(cursor_sleb(&c) == -127);
	CHECK(cursor_sleb(&c) == -128);
	CHECK(cursor_sleb(&c) == -123456);
	CHECK(!c.bad);
}

static void leb_overflow_and_truncation(void)
{
	uint8_t big[12];
	struct cursor c;

	memset(big, 0xff, sizeof(big));
	big[11] = 0x01;
	cursor_init(&c, big, sizeof(big));
	cursor_uleb(&c);
	CHECK(c.bad); /* 12 * 7 bits of ones do not fit in 64 */

	cursor_init(&c, big, 3); /* continuation bit set on the last byte */
	CHECK_EQ_U64(cursor_uleb(&c), 0);
	CHECK(c.bad);
}

static void fixed_and_strings(void)
{
	static const uint8_t b[] = { 0x34, 0x12, 'h', 'i', 0, 0x78, 0x56, 0x34 };
	struct cursor c;

	cursor_init(&c, b, sizeof(b));
	CHECK_EQ_U64(cursor_u16(&c), 0x1234);
	CHECK(strcmp(cursor_cstr(&c), "hi") == 0);
	CHECK_EQ_U64(cursor_offset(&c), 5);
	CHECK_EQ_U64(cursor_u32(&c), 0); /* only 3 bytes left */
	CHECK(c.bad);
	CHECK(cursor_cstr(&c) == NULL);

	cursor_init(&c, "abc", 3); /* no terminator inside the range */
	CHECK(cursor_cstr(&c) == NULL && c.bad);
}

static void vec_push_grows(void)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	for (int i = 0; i < 1000; i++) {
		int *slot = VEC_PUSH(v, n, cap);
		CHECK(slot != NULL);
		if (slot)
			*slot = i;
	}
	CHECK(n == 1000 && cap >= 1000);
	CHECK(v[999] == 999 && v[0] == 0);
	CHECK(vec_reserve((void **)&v, &cap, SIZE_MAX / 2, 8) == -ENOMEM);
	free(v);
}

static int logged;
static void count_log(enum stacksnap_log_level l, const char *m, void *u)
{
	logged += strcmp(m, "x 42") == 0;
}

static void log_levels_and_fail(void)
{
	struct log_sink s = { count_log, NULL, STACKSNAP_LOG_WARN };

	log_err(&s, "x %d", 42);
	log_debug(&s, "x %d", 42); /* above the level: dropped */
	log_warn(NULL, "dropped");
	CHECK(logged == 1);
	errno = 0;
	CHECK(fail(-ENOENT) == -ENOENT && errno == ENOENT);
}

/* Version 2 of an options struct, and the version 1 and 3 callers may hold. */
struct v1 { size_t sz; long a; };
struct v2 { size_t sz; long a; long b; };
struct v3 { size_t sz; long a; long b; long c; };

static void opts_versions(void)
{
	struct v1 old = { sizeof(old), 7 };
	struct v3 newer = { sizeof(newer), 1, 2, 0 };
	struct v2 o;

	CHECK(opts_in(&o, sizeof(o), &old, 0) == 0 && o.a == 7 && o.b == 0);
	CHECK(opts_in(&o, sizeof(o), &newer, 0) == 0 && o.a == 1 && o.b == 2);
	newer.c = 5; /* a field this version does not know, asked for */
	CHECK(opts_in(&o, sizeof(o), &newer, 0) == -EINVAL);
	CHECK(opts_in(&o, sizeof(o), NULL, 0) == 0 && o.a == 0 && o.sz == 0);
	old.sz = 0;
	CHECK(opts_in(&o, sizeof(o), &old, 0) == -EINVAL);
	old.sz = sizeof(old);
	CHECK(opts_in(&o, sizeof(o), &old, sizeof(struct v2)) == -EINVAL);
}

static void opts_out_respects_caller_size(void)
{
	struct { struct v1 v; long canary; } dst = { { sizeof(struct v1), 0 }, 0x5a5a };
	struct v2 src = { sizeof(src), 3, 4 };

	CHECK(opts_out(&dst.v, &src, sizeof(src), 0) == 0);
	CHECK(dst.v.a == 3 && dst.v.sz == sizeof(struct v1) && dst.canary == 0x5a5a);
	dst.v.sz = 2;
	CHECK(opts_out(&dst.v, &src, sizeof(src), 0) == -EINVAL);
}

TEST_MAIN("base", TEST(uleb_values), TEST(sleb_values),
	  TEST(leb_overflow_and_truncation), TEST(fixed_and_strings),
	  TEST(vec_push_grows), TEST(log_levels_and_fail),
	  TEST(opts_versions), TEST(opts_out_respects_caller_size))
