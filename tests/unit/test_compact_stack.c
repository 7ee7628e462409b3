/* test_compact_stack.c - expanding stack copies compacted in the kernel:
 * words kept land at their places, words left out read as the poison
 * (not 0: a false bottom of stack), malformed encodings are refused. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "mem/compact_stack.h"

/* 130 words (3 blocks): words 0, 63 and 129 kept. */
static void expand_three_blocks(void)
{
	uint64_t enc[] = { 1ull | 1ull << 63, 0x1111, 0x6363,
			   0,			/* block 1: nothing kept */
			   1ull << 1, 0x8181 };	/* block 2: word 129 */
	uint8_t out[130 * 8];
	uint64_t w;

	CHECK(compact_stack__expand(enc, sizeof(enc), sizeof(out), out) == 0);
	memcpy(&w, out, 8);
	CHECK_EQ_U64(w, 0x1111);
	memcpy(&w, out + 63 * 8, 8);
	CHECK_EQ_U64(w, 0x6363);
	memcpy(&w, out + 129 * 8, 8);
	CHECK_EQ_U64(w, 0x8181);
	memcpy(&w, out + 64 * 8, 8);
	CHECK_EQ_U64(w, COMPACT_STACK_DROPPED);
}

static void malformed_refused(void)
{
	uint64_t enc[] = { 3, 0x1111 };		/* mask says 2 words, 1 given */
	uint64_t past[] = { 1ull << 5, 0x1 };	/* word 5 of a 4-word copy */
	uint64_t extra[] = { 1, 0x1, 0x2 };	/* a word left over */
	uint8_t out[64 * 8];

	CHECK(compact_stack__expand(enc, sizeof(enc), 64 * 8, out) == -EINVAL);
	CHECK(compact_stack__expand(past, sizeof(past), 4 * 8, out) == -EINVAL);
	CHECK(compact_stack__expand(extra, sizeof(extra), 64 * 8, out) == -EINVAL);
	CHECK(compact_stack__expand(enc, 4, 64 * 8, out) == -EINVAL);
	CHECK(compact_stack__expand(NULL, 0, 0, out) == 0);
	CHECK(compact_stack__expand(enc, sizeof(enc), 7, out) == -EINVAL);
}

TEST_MAIN("compact_stack", TEST(expand_three_blocks), TEST(malformed_refused))
