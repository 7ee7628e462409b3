/* test_jit_hotspot.c - HotSpot code naming (src/runtime/java/hotspot_code.c)
 * on a memory image this test lays out as JDK 17 does (the offsets a live
 * JVM's vmStructs give): the code cache's segment map walk to the blob
 * holding a pc, an nmethod's Method* to "class.method(signature)", a
 * hidden class's name as Java writes it, an interpreter frame's Method*
 * and bytecode index, the compressed line number table,
 * whether a Method* read after the thaw is still its class's (current,
 * an old version after a redefinition, or stale: unloaded or redefined
 * and freed), the threads' Java names (java.lang.Thread.name, LATIN1 and
 * UTF-16 strings, compressed references), and corrupt structures ending
 * in errors, not loops. tests/integration/jit_names compares the same
 * code with jstack on a live JVM. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hotspot_jdk17.h"
#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_frames.h"
#include "runtime/java/hotspot_locks.h"
#include "runtime/java/hotspot_threads.h"
#include "stacksnap.h"

#define BASE 0x10000ull
#define SIZE 0x1800

static uint8_t img[SIZE];

static void q(size_t off, uint64_t v) { memcpy(img + off, &v, 8); }
static void i32(size_t off, int32_t v) { memcpy(img + off, &v, 4); }
static void u16(size_t off, uint16_t v) { memcpy(img + off, &v, 2); }
static void sym(size_t off, const char *s)
{
	u16(off + 4, (uint16_t)strlen(s));
	memcpy(img + off + 6, s, strlen(s));
}

/* One code heap [BASE+0x1000, BASE+0x1800) of 64-byte segments holding
 * an nmethod in segments 0-7 and "Interpreter" from segment 8. */
static void build(void)
{
	memset(img, 0, sizeof(img));
	q(24, BASE + 0x100); /* CodeCache::_heaps */
	i32(0x100, 1);
	q(0x108, BASE + 0x120);
	q(0x120, BASE + 0x200);
	q(0x200 + 8 + 0x10, BASE + 0x1000);
	q(0x200 + 8 + 0x18, BASE + 0x1800);
	q(0x200 + 0x78 + 0x10, BASE + 0x400);
	i32(0x200 + 0x100, 6);
	for (int s = 0; s < 32; s++)
		img[0x400 + s] = s < 8 ? (uint8_t)s : s < 12 ? (uint8_t)(s - 8) : 0xff;
	img[0x1000 + 8] = 1;
	i32(0x1010 + 0xc, 0x1f0);
	q(0x1010 + 0x60, BASE + 0x340);
	q(0x1010 + 0x70, BASE + 0x500);
	memcpy(img + 0x340, "nmethod", 8);
	img[0x1200 + 8] = 1;
	i32(0x1210 + 0xc, 0xf0);
	q(0x1210 + 0x60, BASE + 0x350);
	memcpy(img + 0x350, "Interpreter", 12);
	q(0x500 + 8, BASE + 0x600);
	q(0x600 + 8, BASE + 0x700);
	u16(0x600 + 0x22, 1);
	u16(0x600 + 0x24, 2);
	q(0x700 + 0x18, BASE + 0x900);
	i32(0x700 + 0x3c, 4);
	q(0x700 + 72 + 8, BASE + 0xa00);
	q(0x700 + 72 + 16, BASE + 0xa40);
	q(0x900 + 0x18, BASE + 0xa80);
	sym(0xa00, "down");
	sym(0xa40, "(IZ)I");
	sym(0xa80, "pkg/Deep$$Lambda$1+0x0000000800c01000");
	/* An interpreter frame with rbp at 0xb00: Method* at rbp - 24, its
	 * bytecode pointer at rbp - 64, at bci 5 of 10. */
	q(0xb00 - 24, BASE + 0x500);
	q(0xb00 - 64, BASE + 0x600 + 48 + 5);
	/* Lines: bci 0 line 10 (0xff form: zigzag 0, 20), bci 4 line 12. */
	u16(0x600 + 0x20, 10);
	u16(0x600 + 0x1c, 1);
	img[0x600 + 48 + 10] = 0xff;
	img[0x600 + 48 + 11] = 0;
	img[0x600 + 48 + 12] = 20;
	img[0x600 + 48 + 13] = 4 << 3 | 2;
	img[0x600 + 48 + 14] = 0;
	u16(0x700 + 0x36, 3);
	q(0x700 + 72 + 24, BASE + 0xc40);
	sym(0xc40, "Deep.java");
}

static void layout(struct hotspot_code *hc, struct stacksnap_mem *mem)
{
	hotspot_jdk17_code(hc, mem, BASE + 24);
}

static void names(void)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_blob b;
	uint64_t method = 0;
	char name[256];

	build();
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	layout(&hc, mem);
	CHECK(hotspot_code__blob(&hc, BASE + 0x11f0, &b) == 0);
	CHECK(!strcmp(b.name, "nmethod") && b.method == BASE + 0x500 &&
	      b.start == BASE + 0x1010 && !b.is_interpreter);
	CHECK(hotspot_code__method_name(&hc, b.method, name, sizeof(name)) == 0);
	CHECKF(!strcmp(name, "pkg.Deep$$Lambda$1/0x0000000800c01000.down(IZ)I"),
	       "%s", name);
	CHECK(hotspot_code__blob(&hc, BASE + 0x12e0, &b) == 0);
	CHECK(!strcmp(b.name, "Interpreter") && b.is_interpreter && !b.method);
	CHECK(hotspot_code__interpreter_method(&hc, NULL, BASE + 0xb00, &method) == 0);
	CHECK(method == BASE + 0x500);
	{
		int bci = -2, line = 0;
		char file[64];

		CHECK(hotspot_code__interpreter_bci(&hc, NULL, BASE + 0xb00, method, &bci) == 0);
		CHECK(bci == 5);
		CHECK(hotspot_code__line(&hc, method, bci, &line, file, sizeof(file)) == 0);
		CHECKF(line == 12 && !strcmp(file, "Deep.java"), "%d %s", line, file);
		CHECK(hotspot_code__line(&hc, method, 3, &line, file, sizeof(file)) == 0);
		CHECK(line == 10);
		CHECK(hotspot_code__line(&hc, method, 10, &line, file, sizeof(file)) == -ENOENT);
	}
	/* Past the blob's size (heap padding), an unused segment, outside
	 * the heap. */
	CHECK(hotspot_code__blob(&hc, BASE + 0x1201, &b) == -ENOENT);
	CHECK(hotspot_code__blob(&hc, BASE + 0x1400, &b) == -ENOENT);
	CHECK(hotspot_code__blob(&hc, BASE + 0x1800, &b) == -ENOENT);
	CHECK(hotspot_code__blob(&hc, 0x42, &b) == -ENOENT);
	stacksnap_mem__free(mem);
}

static void corrupt(void)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_blob b;
	char name[256];

	build();
	img[0x400 + 3] = 9; /* steps back past the map's start */
	u16(0x600 + 0x22, 7); /* a name index past the pool */
	i32(0x200 + 0x100, 40); /* no segment size */
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	layout(&hc, mem);
	CHECK(hotspot_code__blob(&hc, BASE + 0x10f0, &b) == -EPROTO);
	CHECK(hotspot_code__method_name(&hc, BASE + 0x500, name, sizeof(name)) == -EPROTO);
	CHECK(hotspot_code__method_name(&hc, BASE + 0x1790, name, sizeof(name)) < 0);
	CHECK(hotspot_code__method_name(&hc, 0, name, sizeof(name)) < 0);
	stacksnap_mem__free(mem);
	build();
	img[0x400 + 3] = 9;
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	layout(&hc, mem);
	CHECK(hotspot_code__blob(&hc, BASE + 0x10f0, &b) == -EPROTO);
	stacksnap_mem__free(mem);
}

/* A Method* checked against its class: among InstanceKlass::_methods
 * (current), flagged JVM_ACC_IS_OLD (redefined, the frame runs the old
 * version: named, said), or neither (stale: the frame says so instead of
 * a name read from freed memory). */
static void method_state(void)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_frame fr;

	build();
	/* The holder (0x900) lists its methods at 0xd00: two, ours second. */
	q(0x900 + 0x30, BASE + 0xd00);
	i32(0xd00, 2);
	q(0xd08, BASE + 0x1500);
	q(0xd10, BASE + 0x500);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	layout(&hc, mem);
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_UNCHECKED);
	hc.check_ok = true;
	hc.method_access_flags = 0x28;
	hc.ik_methods = 0x30;
	hc.array_ptr_data = 8;
	hc.acc_is_old = 0x10000;
	hc.acc_is_obsolete = 0x20000;
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_CURRENT);
	memset(&fr, 0, sizeof(fr));
	CHECK(hotspot_frame__method(&hc, BASE + 0x500, 5, &fr) == 0);
	CHECKF(!strcmp(fr.function, "pkg.Deep$$Lambda$1/0x0000000800c01000.down") &&
	       fr.line == 12 && fr.state == HOTSPOT_METHOD_CURRENT, "%s", fr.function);
	stacksnap_mem__free(mem);

	/* Redefined: the old version, still named. */
	i32(0x528, 0x10000 | 0x8);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	memset(&fr, 0, sizeof(fr));
	CHECK(hotspot_frame__method(&hc, BASE + 0x500, 5, &fr) == 0);
	CHECKF(fr.state == HOTSPOT_METHOD_OLD &&
	       !strcmp(fr.function, "pkg.Deep$$Lambda$1/0x0000000800c01000.down "
				    "(old version: class redefined)") && fr.line == 12,
	       "%s", fr.function);
	stacksnap_mem__free(mem);

	/* No longer its class's: no name read from it, no line. */
	i32(0x528, 0);
	q(0xd10, BASE + 0x1510);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	memset(&fr, 0, sizeof(fr));
	CHECK(hotspot_frame__method(&hc, BASE + 0x500, 5, &fr) == 0);
	CHECKF(fr.state == HOTSPOT_METHOD_STALE && !strncmp(fr.function, "?? (", 4) &&
	       strstr(fr.function, "unloaded or redefined") && !fr.line,
	       "%s", fr.function);
	/* After a collection: the class's loader (0xe00) among the live
	 * ones (0xe40 -> 0xe00 -> end) or not (0xe40 -> end). */
	q(0xd10, BASE + 0x500);
	q(0x900 + 0x40, BASE + 0xe00);
	q(0x20, BASE + 0xe40);
	q(0xe40 + 0x70, BASE + 0xe00);
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	hc.cldg_head = BASE + 0x20;
	hc.cld_next = 0x70;
	hc.klass_cld = 0x40;
	CHECK(hotspot_code__read_live_loaders(&hc) == 0 && hc.nlive_clds == 2);
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_CURRENT);
	q(0xe40 + 0x70, 0);
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	CHECK(hotspot_code__read_live_loaders(&hc) == 0 && hc.nlive_clds == 1);
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_STALE);
	/* A list that loops is not read (nothing checked against it). */
	q(0xe40 + 0x70, BASE + 0xe40);
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	CHECK(hotspot_code__read_live_loaders(&hc) == -EPROTO && hc.nlive_clds == 1);
	hotspot_code__free(&hc);
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_CURRENT);
	/* A methods array whose length is not one. */
	i32(0xd00, -1);
	stacksnap_mem__free(mem);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = mem;
	CHECK(hotspot_code__method_check(&hc, BASE + 0x500) == HOTSPOT_METHOD_STALE);
	stacksnap_mem__free(mem);
}

static void cstr(size_t off, const char *s) { memcpy(img + off, s, strlen(s) + 1); }

/* Two JavaThreads (tids 1234, 1235) named "main" (LATIN1) and "naïve €"
 * (UTF-16), through compressed references (base BASE, shift 0), the
 * field offsets found in the classes' field tables; then a thread list
 * whose length is not one. */
static void thread_names(void)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_thread_name *tn;
	size_t n;
	static const uint16_t utf16[] = { 'n', 'a', 0xef, 'v', 'e', ' ', 0x20ac };

	memset(img, 0, sizeof(img));
	q(0x08, BASE + 0x400);
	q(0x10, BASE + 0x600);
	q(0x18, BASE + 0x800);
	q(0x20, BASE);
	i32(0x28, 0);
	q(0x30, BASE + 0x200);
	q(0x38, 2);
	q(0x200, BASE + 0x2f0);
	q(0x208, BASE + 0x280);
	q(0x218, BASE + 0x2f1);
	q(0x220, BASE + 0x2a0);
	cstr(0x280, "UseCompressedOops");
	cstr(0x2a0, "UseCompressedClassPointers");
	img[0x2f0] = img[0x2f1] = 1;
	/* Thread's fields: one, "name" at 0x50; String's "value" at 0x10,
	 * "coder" at 0x14 (offsets packed << 2, tag 1). */
	q(0x600 + 0x1c8, BASE + 0xa00);
	u16(0x600 + 0x136, 1);
	q(0x600 + 0xe8, BASE + 0xb00);
	i32(0xa00, 6);
	u16(0xa04 + 2, 1);
	u16(0xa04 + 4, 2);
	u16(0xa04 + 8, 0x50 << 2 | 1);
	i32(0xb00 + 0x3c, 10);
	q(0xb00 + 72 + 8, BASE + 0xc00);
	q(0xb00 + 72 + 16, BASE + 0xc40);
	sym(0xc00, "name");
	sym(0xc40, "Ljava/lang/String;");
	q(0x800 + 0x1c8, BASE + 0xa40);
	u16(0x800 + 0x136, 2);
	q(0x800 + 0xe8, BASE + 0xd00);
	i32(0xa40, 12);
	u16(0xa44 + 2, 1);
	u16(0xa44 + 4, 2);
	u16(0xa44 + 8, 0x10 << 2 | 1);
	u16(0xa44 + 12 + 2, 3);
	u16(0xa44 + 12 + 4, 4);
	u16(0xa44 + 12 + 8, 0x14 << 2 | 1);
	i32(0xd00 + 0x3c, 10);
	q(0xd00 + 72 + 8, BASE + 0xe00);
	q(0xd00 + 72 + 16, BASE + 0xe40);
	q(0xd00 + 72 + 24, BASE + 0xe80);
	q(0xd00 + 72 + 32, BASE + 0xec0);
	sym(0xe00, "value");
	sym(0xe40, "[B");
	sym(0xe80, "coder");
	sym(0xec0, "B");
	/* The thread list: two JavaThreads. */
	i32(0x400 + 4, 2);
	q(0x400 + 0x10, BASE + 0x440);
	q(0x440, BASE + 0x1000);
	q(0x448, BASE + 0x1100);
	for (int t = 0; t < 2; t++) {
		size_t jt = t ? 0x1100 : 0x1000, os = 0x1400 + 0x100 * (size_t)t;
		size_t obj = 0x1600 + 0x40 * (size_t)t, str = 0x1700 + 0x20 * (size_t)t;
		size_t arr = 0x1740 + 0x40 * (size_t)t;

		q(jt + 0x230, BASE + os);
		i32(os + 0xd0, 1234 + t);
		q(jt + 0x288, BASE + 0x1580 + 8 * (size_t)t);
		q(0x1580 + 8 * (size_t)t, BASE + obj);
		i32(obj + 0x50, (int32_t)str); /* narrow: BASE + str */
		i32(str + 0x10, (int32_t)arr);
		img[str + 0x14] = (uint8_t)t;
		if (!t) {
			i32(arr + 12, 4);
			memcpy(img + arr + 16, "main", 4);
		} else {
			i32(arr + 12, (int32_t)sizeof(utf16));
			memcpy(img + arr + 16, utf16, sizeof(utf16));
		}
	}
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	layout(&hc, mem);
	struct hotspot_threads ht = hotspot_jdk17_threads(&hc, BASE);
	CHECK(hotspot_threads__names(&ht, &tn, &n) == 0);
	CHECKF(n == 2 && tn[0].tid == 1234 && !strcmp(tn[0].name, "main") &&
	       tn[1].tid == 1235 && !strcmp(tn[1].name, "na\xc3\xafve \xe2\x82\xac"),
	       "%zu %s %s", n, n ? tn[0].name : "", n > 1 ? tn[1].name : "");
	free(tn);
	stacksnap_mem__free(mem);
	/* A list longer than a JVM has threads: refused. */
	i32(0x400 + 4, 1 << 30);
	mem = stacksnap_mem__new_copy(img, sizeof(img), BASE);
	hc.mem = ht.mem = mem;
	CHECK(hotspot_threads__names(&ht, &tn, &n) == -EPROTO && !tn && !n);
	stacksnap_mem__free(mem);
}

static void count_monitors(void *ctx, uint64_t obj, uint64_t owner)
{
	(void)obj;
	(void)owner;
	++*(size_t *)ctx;
}

/* Java's locks (hotspot_locks.c) over a JDK 17 memory image: two
 * JavaThreads (tids 100, 101); 100 waits to enter a monitor of an
 * Object, whose owner is a BasicLock on 101's stack (a stack lock a
 * contender inflated); the in-use list holds that monitor, linked to
 * itself (a list that comes back: the walk stops). Then JDK 25's owners:
 * an id, anonymous with the object on 101's lock stack, the deflater. */
#define LBASE 0x100000ull
static uint8_t limg[0x6000];

static void lq(size_t off, uint64_t v) { memcpy(limg + off, &v, 8); }
static void ld(size_t off, uint32_t v) { memcpy(limg + off, &v, 4); }

static void monitor_owners(void)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_threads ht;
	struct hotspot_locks hl;
	struct hotspot_jthread *ts = NULL;
	uint64_t obj = 0, owner = 0, stack1 = LBASE + 0x5800;
	size_t n = 0, seen = 0;
	const char *why = NULL;
	char name[64];

	memset(limg, 0, sizeof(limg));
	lq(0x08, LBASE + 0x100);			/* the ThreadsList */
	ld(0x100 + 4, 2);
	lq(0x100 + 0x10, LBASE + 0x200);
	lq(0x200, LBASE + 0x1000);
	lq(0x208, LBASE + 0x2000);
	lq(0x40, LBASE + 0x4000);			/* the in-use list */
	for (int i = 0; i < 2; i++) {
		size_t jt = i ? 0x2000 : 0x1000;

		lq(jt + 0x230, LBASE + 0x3000 + 0x100 * (uint64_t)i);	/* OSThread */
		ld(0x3000 + 0x100 * (size_t)i + 0xd0, 100 + (uint32_t)i);
		lq(jt + 0x250, i ? stack1 + 0x800 : LBASE + 0x5000);	/* stack */
		lq(jt + 0x258, 0x800);
	}
	lq(0x1000 + 0x308, LBASE + 0x4000);		/* 100 waits to enter */
	lq(0x4000 + 8, LBASE + 0x4100);			/* _object: a slot */
	lq(0x4100, LBASE + 0x4800);			/* the Object */
	lq(0x4000 + 0x40, stack1 + 0x100);		/* a BasicLock of 101 */
	lq(0x4000 + 0x80, LBASE + 0x4000);		/* _next_om: itself */
	lq(0x4800, 2);					/* mark: inflated */
	lq(0x4808, LBASE + 0x4a00);			/* its Klass* */
	lq(0x4a00 + 0x18, LBASE + 0x4b00);		/* Klass::_name */
	memcpy(limg + 0x4b04, "\x10\x00java/lang/Object", 18);
	mem = stacksnap_mem__new_copy(limg, sizeof(limg), LBASE);
	CHECK(mem != NULL);
	if (!mem)
		return;
	hotspot_jdk17_code(&hc, mem, LBASE);
	ht = hotspot_jdk17_threads(&hc, LBASE);
	ht.prepared = true;
	ht.klass_read = true;
	ht.ck_base = LBASE + 0x20;	/* uncompressed: the Klass* itself */
	ht.klass_name = 0x18;
	ht.ck_shift = LBASE + 0x28;
	hl = hotspot_jdk17_locks(&ht, LBASE, LBASE + 0x4800, LBASE + 0x4900, false);
	CHECK(hotspot_locks__threads(&hl, &ts, &n) == 0 && n == 2);
	if (n == 2) {
		CHECK(ts[0].tid == 100 && ts[0].pending == LBASE + 0x4000 && !ts[0].waiting);
		CHECK(ts[1].tid == 101 && ts[1].stack_lo == stack1 &&
		      ts[1].stack_hi == stack1 + 0x800);
		CHECK(hotspot_locks__monitor(&hl, ts[0].pending, &obj, &owner) == 0);
		CHECK_EQ_U64(obj, LBASE + 0x4800);
		CHECK(hotspot_locks__owner(&hl, owner, obj, ts, n, &why) == 1);
		CHECK(hotspot_locks__owner(&hl, 0, obj, ts, n, &why) == -1 &&
		      strstr(why, "released"));
		CHECK(hotspot_locks__owner(&hl, LBASE + 0x100, obj, ts, n, &why) == -1 &&
		      strstr(why, "no thread"));
		CHECK(hotspot_locks__class_name(&hl, obj, name, sizeof(name)) == 0 &&
		      !strcmp(name, "java.lang.Object"));
		CHECK(hotspot_locks__each_monitor(&hl, count_monitors, &seen) == -EPROTO &&
		      seen >= 1 && seen <= 2);
		/* JDK 25: owners are ids; anonymous is on a lock stack. */
		hl = hotspot_jdk17_locks(&ht, LBASE, LBASE + 0x4800, LBASE + 0x4900, true);
		ts[0].owner_id = 7;
		ts[1].owner_id = 8;
		CHECK(hotspot_locks__owner(&hl, 8, obj, ts, n, &why) == 1);
		CHECK(hotspot_locks__owner(&hl, 1, obj, ts, n, &why) == -1 &&
		      strstr(why, "anonymous"));
		ts[1].lock_stack[0] = obj;
		ts[1].nlock_stack = 1;
		CHECK(hotspot_locks__owner(&hl, 1, obj, ts, n, &why) == 1);
		CHECK(hotspot_locks__owner(&hl, 2, obj, ts, n, &why) == -1 &&
		      strstr(why, "deflated"));
	}
	free(ts);
	stacksnap_mem__free(mem);
}

TEST_MAIN("jit_hotspot", TEST(names), TEST(corrupt), TEST(method_state),
	  TEST(thread_names), TEST(monitor_owners))
