/* cache_bind.h - what a cache entry is bound to: the file it was made
 * from, by identity (device, inode, size, modification and change times)
 * and by a BLAKE2b-256 digest of its bytes. A build-id is a name any file
 * may give itself, not a proof of content: an entry is used only for the
 * file whose identity it records or, when the identity differs (a copy,
 * another container's file), for a file whose bytes have its digest. */
#ifndef SS_BASE_CACHE_BIND_H
#define SS_BASE_CACHE_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One file's record in an entry (little-endian): u64 dev, ino, size,
 * mtime_ns, ctime_ns, then the 32-byte digest of its bytes. */
#define CACHE_BIND_SIZE 72

/* A file an entry is made from. Invariant: bytes[0..len) are the whole
 * file, read from the file whose fstat gave the identity; ino == 0 for
 * bytes not from a file (the vDSO): such a source matches by digest only. */
struct cache_source {
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
	const uint8_t *bytes;
	size_t len;
};

enum cache_bind_match {
	CACHE_BIND_OTHER = 0,	/* other bytes: the entry is not this file's */
	CACHE_BIND_SAME_FILE,	/* the identity recorded (no bytes read) */
	CACHE_BIND_SAME_BYTES,	/* another file, the digest recorded */
};

/* Writes s's record (its digest computed here: the writer's cost). */
void cache_bind__put(uint8_t rec[CACHE_BIND_SIZE], const struct cache_source *s);

/* Is rec s's? The identity first (five compares); the digest of s's
 * bytes only when the identity differs. */
enum cache_bind_match cache_bind__check(const uint8_t rec[CACHE_BIND_SIZE],
					const struct cache_source *s);

/* BLAKE2b (RFC 7693) with a 32-byte digest, unkeyed. */
void blake2b_256(const uint8_t *p, size_t len, uint8_t out[32]);

#endif
