/* test_base.c - the bounds-checked cursor, LEB128 and growable arrays. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cursor.h"
#include "base/log.h"
#include "base/maps_line.h"
#include "base/opts.h"
#include "base/radix_sort.h"
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

/* A counted list of length-prefixed records: the count checked against
 * what is left, each record read by itself, a cut one found where it is. */
static void lists_and_records(void)
{
	/* Two records ("ab", "") and a third cut: its length says 9. */
	static const uint8_t b[] = { 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0, 9, 0, 0, 0, 'x' };
	struct cursor c, rec;
	uint32_t *a;
	size_t at;
	int err = 0;

	cursor_init(&c, b, sizeof(b));
	a = cursor_list_alloc(&c, 3, 3, 4, sizeof(*a), &err);
	CHECK(a && !a[0] && !a[2]);
	free(a);
	CHECK(!cursor_list_alloc(&c, 4, 4, 4, sizeof(*a), &err) && err == -EINVAL);
	err = 0;
	CHECK(!cursor_list_alloc(&c, 3, 2, 4, sizeof(*a), &err) && err == -EINVAL);
	a = cursor_list_alloc(&c, 0, 0, 4, sizeof(*a), &err); /* none: not NULL */
	CHECK(a != NULL);
	free(a);
	CHECK(cursor_count_fits(&c, 15, 99, 1) && !cursor_count_fits(&c, 16, 99, 1));

	CHECK(cursor_record(&c, &rec, &at) && at == 4);
	CHECK_EQ_U64(cursor_left(&rec), 2);
	CHECK_EQ_U64(cursor_u16(&rec), 'a' | 'b' << 8);
	CHECK_EQ_U64(cursor_u8(&rec), 0);
	CHECK(rec.bad && !c.bad); /* a record's reads stop at its end */
	CHECK(cursor_record(&c, &rec, NULL) && cursor_left(&rec) == 0);
	CHECK(!cursor_record(&c, &rec, &at) && c.bad && cursor_left(&rec) == 0);
	CHECK_EQ_U64(at, 14);
	CHECK_EQ_U64(at, cursor_offset(&c));
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


/* /proc/PID/maps lines: every field of real lines (file, vDSO, anonymous,
 * deleted file, path with spaces, hex device numbers), and the malformed
 * lines refused: end before start, no number, unknown perms, no inode,
 * junk after the inode. */
static void maps_lines(void)
{
	static const struct {
		const char *line;
		int rc;
		uint64_t start, end, offset, inode;
		unsigned maj, min;
		uint32_t prot;
		const char *path;
	} c[] = {
		{ "5578eb8c8000-5578eb8cb000 r--p 00008000 fe:00 247498      /usr/bin/head\n",
		  0, 0x5578eb8c8000, 0x5578eb8cb000, 0x8000, 247498, 0xfe, 0, PROT_READ, "/usr/bin/head" },
		{ "7ffbd406a000-7ffbd406c000 r-xp 00000000 00:00 0          [vdso]",
		  0, 0x7ffbd406a000, 0x7ffbd406c000, 0, 0, 0, 0, PROT_READ | PROT_EXEC, "[vdso]" },
		{ "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n",
		  0, 0x7f0000000000, 0x7f0000001000, 0, 0, 0, 0, PROT_READ | PROT_WRITE, NULL },
		{ "00400000-00452000 r-xp 00001000 08:02 173521 /usr/bin/d (deleted)",
		  0, 0x400000, 0x452000, 0x1000, 173521, 8, 2, PROT_READ | PROT_EXEC, "/usr/bin/d (deleted)" },
		{ "10-20 --xs 0 103:0a 12 /path with spaces",
		  0, 0x10, 0x20, 0, 12, 0x103, 0xa, PROT_EXEC, "/path with spaces" },
		{ "7f-7e r--p 0 0:0 0", .rc = -EINVAL },
		{ "x-1 r--p 0 0:0 0", .rc = -EINVAL },
		{ "10-20 rwxq 0 0:0 0", .rc = -EINVAL },
		{ "10-20 r--p 0 0:0", .rc = -EINVAL },
		{ "10-20 r--p 0 0:0 12x", .rc = -EINVAL },
		{ "10-20 r--p 0 0:0 1 extra", 0, 0x10, 0x20, 0, 1, 0, 0, PROT_READ, "extra" },
		{ "10000000000000000-20 r--p 0 0:0 1", .rc = -EINVAL },
		{ "", .rc = -EINVAL },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char buf[256];
		struct maps_line ml;

		snprintf(buf, sizeof(buf), "%s", c[i].line);
		int rc = maps_line__parse(buf, &ml);
		CHECKF(rc == c[i].rc, "line %zu: rc %d", i, rc);
		if (rc || c[i].rc)
			continue;
		CHECK_EQ_U64(ml.start, c[i].start);
		CHECK_EQ_U64(ml.end, c[i].end);
		CHECK_EQ_U64(ml.offset, c[i].offset);
		CHECK_EQ_U64(ml.inode, c[i].inode);
		CHECK_EQ_U64(ml.dev_major, c[i].maj);
		CHECK_EQ_U64(ml.dev_minor, c[i].min);
		CHECK_EQ_U64(ml.prot, c[i].prot);
		CHECKF(c[i].path ? ml.path && !strcmp(ml.path, c[i].path) : !ml.path,
		       "line %zu: path '%s'", i, ml.path ? ml.path : "(null)");
	}
}

/* Records of 24 bytes, key in the middle; keys with few distinct values
 * (ties), zero bytes, and the full 64 bits. The reference: a stable
 * insertion sort. */
struct rs_rec {
	uint32_t seq;
	uint32_t pad;
	uint64_t key;
	uint64_t tail;
};

static void radix_sort_stable(void)
{
	enum { N = 5000 };
	static struct rs_rec a[N], b[N];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint64_t k = round == 0 ? x % 17 : round == 1 ? x << 40
				   : round == 2 ? x : 0x7f0000000000ull + (x & 0xffff00);
			a[i] = b[i] = (struct rs_rec){ (uint32_t)i, 0, k, ~k };
		}
		for (int i = 1; i < N; i++) /* stable reference */
			for (int j = i; j > 0 && b[j - 1].key > b[j].key; j--) {
				struct rs_rec t = b[j];
				b[j] = b[j - 1];
				b[j - 1] = t;
			}
		CHECK(radix_sort_u64(a, N, sizeof(a[0]), offsetof(struct rs_rec, key)) == 0);
		int bad = 0;
		for (int i = 0; i < N; i++)
			bad += a[i].seq != b[i].seq || a[i].key != b[i].key || a[i].tail != ~a[i].key;
		CHECKF(!bad, "round %d: %d records out of place", round, bad);
	}
	CHECK(radix_sort_u64(a, 1, sizeof(a[0]), 8) == 0 && radix_sort_u64(a, 0, 8, 0) == 0);
}

TEST_MAIN("base", TEST(uleb_values), TEST(sleb_values),
	  TEST(leb_overflow_and_truncation), TEST(fixed_and_strings), TEST(lists_and_records),
	  TEST(vec_push_grows), TEST(log_levels_and_fail),
	  TEST(opts_versions), TEST(opts_out_respects_caller_size),
	  TEST(maps_lines), TEST(radix_sort_stable))
