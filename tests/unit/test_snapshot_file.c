/* test_snapshot_file.c - the compact stack stream (round trips, hostile
 * streams) and the snapshot file container (sections written and read
 * back, unknown sections skipped or refused, limits, errors with offsets). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_image.h"
#include "snapfile/compact_stack.h"
#include "save/snapfile_writer.h"
#include "snapfile/snapshot_file.h"
#include "harness.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void stream_round_trips(void)
{
	for (int iter = 0; iter < 200; iter++) {
		size_t len = (size_t)(next_rand() % 4096) + (iter % 8);
		uint8_t *stack = malloc(len + 1), *out = calloc(1, len + 1);
		uint64_t *keep = calloc(compact_stack__bitmap_u64s(len) + 1, 8);
		struct byte_buf b = { 0 };
		struct cursor c;
		size_t bad = 0;
		unsigned density = (unsigned)(next_rand() % 4);

		for (size_t i = 0; i < len; i++)
			stack[i] = (uint8_t)next_rand();
		for (size_t w = 0; w < compact_stack__words(len); w++)
			if (density == 3 || (density && next_rand() % 4 < density))
				compact_stack__keep(keep, w);
		bool delta = iter % 2;
		uint64_t base = 0x7ffc00000000ull + 8 * (next_rand() % 4096);

		/* Some words point near themselves or near each other, as
		 * stack pointers and return addresses do. */
		for (size_t w = 0; w + 1 < compact_stack__words(len); w += 3) {
			uint64_t v = base + 8 * w + (next_rand() % 512);

			memcpy(stack + 8 * w, &v, 8);
			v = 0x555555554000ull + (next_rand() % 65536);
			memcpy(stack + 8 * w + 8, &v, 8);
		}
		compact_stack__encode(stack, len, base, iter % 5 ? keep : NULL, delta, &b);
		CHECK(!b.failed);
		cursor_init(&c, b.p, b.n);
		CHECKF(compact_stack__decode(&c, out, len, base, delta, &bad) == 0,
		       "iter %d bad at %zu", iter, bad);
		for (size_t w = 0; w < compact_stack__words(len); w++) {
			bool kept = iter % 5 == 0 || compact_stack__kept(keep, w);
			uint64_t x, y;

			memcpy(&x, stack + 8 * w, 8);
			memcpy(&y, out + 8 * w, 8);
			CHECKF(kept ? x == y : y == 0, "iter %d word %zu", iter, w);
		}
		for (size_t i = compact_stack__words(len) * 8; i < len; i++)
			CHECK(out[i] == 0);
		byte_buf__free(&b);
		free(stack);
		free(out);
		free(keep);
	}
}

static void stream_hostile(void)
{
	uint8_t out[64] = { 0 };
	size_t bad = 99;
	struct cursor c;
	/* runs past the end: skip 9 of 8 words */
	static const uint8_t past[] = { 9, 0 };
	/* kept words missing their bytes */
	static const uint8_t trunc[] = { 0, 2, 1, 2, 3 };
	/* an empty pair would loop forever */
	static const uint8_t empty[] = { 0, 0 };
	/* a complete stream followed by garbage */
	static const uint8_t extra[] = { 8, 0, 0x55 };
	/* an overlong LEB128 */
	static const uint8_t leb[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x7f };

	/* a word with the unused tag 3, and a raw word tag with bits set */
	static const uint8_t tag3[] = { 0, 1, 3 };
	static const uint8_t rawbits[] = { 0, 1, 6, 1, 2, 3, 4, 5, 6, 7, 8 };

	for (int delta = 0; delta < 2; delta++) {
		cursor_init(&c, past, sizeof(past));
		CHECK(compact_stack__decode(&c, out, 64, 0, delta, &bad) == -EINVAL && bad == 0);
		cursor_init(&c, trunc, sizeof(trunc));
		CHECK(compact_stack__decode(&c, out, 64, 0, delta, &bad) == -EINVAL);
		cursor_init(&c, empty, sizeof(empty));
		CHECK(compact_stack__decode(&c, out, 64, 0, delta, &bad) == -EINVAL);
		cursor_init(&c, extra, sizeof(extra));
		CHECK(compact_stack__decode(&c, out, 64, 0, delta, &bad) == -EINVAL && bad == 2);
		cursor_init(&c, leb, sizeof(leb));
		CHECK(compact_stack__decode(&c, out, 64, 0, delta, &bad) == -EINVAL);
	}
	cursor_init(&c, tag3, sizeof(tag3));
	CHECK(compact_stack__decode(&c, out, 64, 0, true, &bad) == -EINVAL && bad == 2);
	cursor_init(&c, rawbits, sizeof(rawbits));
	CHECK(compact_stack__decode(&c, out, 64, 0, true, &bad) == -EINVAL && bad == 2);
}

static void mark_range_clips(void)
{
	uint64_t keep[2] = { 0 };

	compact_stack__mark_range(keep, 0x1000, 64, 0xff8, 16); /* words 0 */
	compact_stack__mark_range(keep, 0x1000, 64, 0x1013, 2); /* word 2 */
	compact_stack__mark_range(keep, 0x1000, 64, 0x1038, 64); /* word 7 */
	compact_stack__mark_range(keep, 0x1000, 64, 0x2000, 8); /* outside */
	CHECK_EQ_U64(keep[0], 0x85);
	CHECK_EQ_U64(keep[1], 0);
}

/* A file with one thread whose 64-byte stack keeps words 1 and 6. */
static void write_sample(struct snapfile_writer *w, uint64_t stack_len_claim,
			 bool unknown_required)
{
	uint8_t stack[64];
	uint64_t keep[1] = { (1u << 1) | (1u << 6) };

	for (int i = 0; i < 64; i++)
		stack[i] = (uint8_t)(i + 1);
	snapfile_writer__init(w);
	snapfile_writer__begin_section(w, SNAPFILE_SEC_PROCESS, 1, 0);
	byte_buf__u32(&w->buf, 4242);
	byte_buf__u64(&w->buf, 1700000000000000000ull);
	byte_buf__u64(&w->buf, 1234);
	byte_buf__u64(&w->buf, 64);
	byte_buf__u8(&w->buf, STACKSNAP_ENCODING_POINTERS);
	byte_buf__u32(&w->buf, 9);
	byte_buf__put(&w->buf, "prog\0arg1", 9);
	byte_buf__u32(&w->buf, 3);
	byte_buf__put(&w->buf, "6.1", 3);
	byte_buf__u32(&w->buf, 5);
	byte_buf__put(&w->buf, "0.1.0", 5);
	snapfile_writer__end_section(w);
	/* a kind of a newer minor version, not required: skipped */
	snapfile_writer__begin_section(w, 78, 1, 0);
	byte_buf__u32(&w->buf, 0xdeadbeef);
	snapfile_writer__end_section(w);
	snapfile_writer__begin_section(w, 77, 3, unknown_required ? SNAPFILE_SEC_REQUIRED : 0);
	byte_buf__u64(&w->buf, 1);
	snapfile_writer__end_section(w);
	snapfile_writer__begin_section(w, SNAPFILE_SEC_THREADS, 1, 0);
	byte_buf__u8(&w->buf, STACKSNAP_ENCODING_POINTERS);
	byte_buf__u32(&w->buf, 1);
	size_t rec = w->buf.n;
	byte_buf__u32(&w->buf, 0);
	byte_buf__u32(&w->buf, 4243);
	byte_buf__u8(&w->buf, 'S');
	byte_buf__u8(&w->buf, 0);
	byte_buf__u8(&w->buf, 6);
	byte_buf__put(&w->buf, "worker", 6);
	byte_buf__u32(&w->buf, 0x1ffff);
	for (int r = 0; r < STACKSNAP_REG_COUNT; r++)
		byte_buf__u64(&w->buf, 0x100 + (uint64_t)r);
	byte_buf__u64(&w->buf, 0x7ff000);
	byte_buf__u64(&w->buf, stack_len_claim);
	size_t el = w->buf.n;
	byte_buf__u64(&w->buf, 0);
	compact_stack__encode(stack, 64, 0x7ff000, keep, true, &w->buf);
	byte_buf__patch_u64(&w->buf, el, w->buf.n - el - 8);
	/* a newer minor version's extra field in the record: skipped */
	byte_buf__u32(&w->buf, 0xabcdef);
	byte_buf__patch_u32(&w->buf, rec, (uint32_t)(w->buf.n - rec - 4));
	snapfile_writer__end_section(w);
}

static char errors[4096];

static void collect(enum stacksnap_log_level level, const char *msg, void *user)
{
	snprintf(errors + strlen(errors), sizeof(errors) - strlen(errors), "%s\n", msg);
}

static struct stacksnap_saved *open_written(struct snapfile_writer *w,
					    struct stacksnap_ctx *ctx,
					    uint8_t **bytes, size_t *len)
{
	char path[] = "/tmp/test_snapshot_file.XXXXXX";
	int fd = mkstemp(path);
	struct stacksnap_saved *s;
	FILE *f;

	close(fd);
	CHECK(snapfile_writer__finish(w, path, NULL) == 0);
	f = fopen(path, "rb");
	*bytes = malloc(1 << 16);
	*len = fread(*bytes, 1, 1 << 16, f);
	fclose(f);
	errors[0] = 0;
	s = stacksnap_saved__open(ctx, path, NULL);
	unlink(path);
	return s;
}

static void container_round_trip(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .log = collect);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&co);
	struct snapfile_writer w;
	uint8_t *bytes;
	size_t len;

	write_sample(&w, 64, false);
	struct stacksnap_saved *s = open_written(&w, ctx, &bytes, &len);
	CHECKF(s != NULL, "%s", errors);
	if (s) {
		STACKSNAP_OPTS(stacksnap_saved_info, info);
		const struct stacksnap_thread *th;

		CHECK(stacksnap_saved__info(s, &info) == 0);
		CHECK(info.pid == 4242 && info.freeze_ns == 1234);
		CHECK(!strcmp(info.cmdline, "prog arg1"));
		CHECK(!strcmp(info.kernel, "6.1") && info.format_version == 100);
		/* written before the host was recorded: none */
		CHECK(!strcmp(info.hostname, "") && !strcmp(info.boot_id, ""));
		CHECK(stacksnap_saved__thread_count(s) == 1);
		th = stacksnap_saved__thread(s, 0);
		CHECK(th->tid == 4243 && th->state == 'S' && !strcmp(th->name, "worker"));
		CHECK(th->regs.regs[STACKSNAP_REG_RIP] == 0x110 && th->regs.valid == 0x1ffff);
		CHECK(th->stack_base == 0x7ff000 && th->stack_len == 64);
		for (int i = 0; i < 64; i++)
			CHECKF(th->stack[i] == ((i / 8 == 1 || i / 8 == 6) ? i + 1 : 0),
			       "byte %d = %d", i, th->stack[i]);
		CHECK(stacksnap_saved__memory(s) == NULL);
		stacksnap_saved__free(s);
	}
	/* Every single-byte corruption is caught (checksum, or the header
	 * fields it does not cover), and every truncation. */
	int caught = 0;
	for (size_t i = 0; i < len; i++) {
		bytes[i] ^= 0x20;
		s = stacksnap_saved__open_mem(ctx, bytes, len, NULL);
		caught += !s || i == SNAPFILE_OFF_MINOR || i == SNAPFILE_OFF_MINOR + 1;
		stacksnap_saved__free(s);
		bytes[i] ^= 0x20;
	}
	CHECKF(caught == (int)len, "%d of %zu corruptions caught", caught, len);
	for (size_t l = 0; l < len; l += 7) {
		errors[0] = 0;
		s = stacksnap_saved__open_mem(ctx, bytes, l, NULL);
		CHECK(!s && errno == EINVAL && strstr(errors, "offset"));
		stacksnap_saved__free(s);
	}
	free(bytes);
	stacksnap_ctx__free(ctx);
}

static void container_refusals(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .log = collect);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&co);
	struct snapfile_writer w;
	uint8_t *bytes;
	size_t len;
	struct stacksnap_saved *s;

	write_sample(&w, 64, true);
	s = open_written(&w, ctx, &bytes, &len);
	CHECK(!s && errno == ENOTSUP && strstr(errors, "kind 77") &&
	      strstr(errors, "required"));
	free(bytes);
	/* A stack claimed beyond the limit: refused before allocating. */
	write_sample(&w, (uint64_t)SNAPFILE_MAX_STACK + 8, false);
	s = open_written(&w, ctx, &bytes, &len);
	CHECKF(!s && errno == EINVAL && strstr(errors, "limit"), "%s", errors);
	free(bytes);
	/* A stack longer than its stream encodes: corrupt encoding. */
	write_sample(&w, 128, false);
	s = open_written(&w, ctx, &bytes, &len);
	CHECKF(!s && errno == EINVAL && strstr(errors, "corrupt stack encoding"),
	       "%s", errors);
	free(bytes);
	/* A newer major version. */
	write_sample(&w, 64, false);
	w.buf.p[SNAPFILE_OFF_MAJOR] = 2;
	s = open_written(&w, ctx, &bytes, &len);
	CHECK(!s && errno == ENOTSUP && strstr(errors, "version 2.0"));
	free(bytes);
	stacksnap_ctx__free(ctx);
}

/* The fuzz target's seeds are files this reader reads whole (a seed the
 * reader refuses, or one whose section kind now means another section,
 * fuzzes only the first checks), the goroutine seeds with goroutines.
 * Run from the top of the tree, as tests/run-all runs it. */
static void fuzz_seeds_read(void)
{
	static const char dir[] = "fuzz/corpus/fuzz_snapshot_file";
	STACKSNAP_OPTS(stacksnap_ctx_opts, co, .log = collect);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&co);
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	CHECKF(d != NULL, "%s: %s", dir, strerror(errno));
	while (d && (de = readdir(d))) {
		char path[512];
		struct stacksnap_saved *s;

		if (de->d_name[0] == '.' || !strncmp(de->d_name, "regress-", 8))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		errors[0] = 0;
		s = stacksnap_saved__open(ctx, path, NULL);
		CHECKF(s != NULL, "%s: %s", de->d_name, errors);
		if (s && !strncmp(de->d_name, "go_goroutines", 13))
			CHECKF(stacksnap_saved__goroutine_count(s) > 0, "%s: no goroutines",
			       de->d_name);
		stacksnap_saved__free(s);
		n++;
	}
	CHECK(n >= 10);
	if (d)
		closedir(d);
	stacksnap_ctx__free(ctx);
}

TEST_MAIN("snapshot_file", TEST(stream_round_trips), TEST(stream_hostile),
	  TEST(mark_range_clips), TEST(container_round_trip),
	  TEST(container_refusals), TEST(fuzz_seeds_read))
