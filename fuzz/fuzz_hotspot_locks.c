/* fuzz_hotspot_locks.c - libFuzzer target for the readers of Java's
 * locks (src/runtime/java/hotspot_locks.c), which follow a JVM's thread
 * list, ObjectMonitors, lock stacks, objects' headers, classes and
 * fields: the input is that memory (a copy source at a fixed base, every
 * other read fails), read with JDK 17's offsets (half the inputs: JDK
 * 25's lock stack, owner ids and stack lockers). Every walk must end,
 * bounded, without reading past the bytes or looping; the owner found
 * must be one of the threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_locks.h"
#include "runtime/java/hotspot_threads.h"
#include "stacksnap.h"
#include "../tests/unit/hotspot_jdk17.h"

#define BASE 0x10000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count_monitor(void *ctx, uint64_t obj, uint64_t owner)
{
	(void)obj;
	(void)owner;
	++*(size_t *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_threads ht;
	struct hotspot_locks hl;
	struct hotspot_jthread *ts = NULL;
	uint64_t words[4];
	size_t n = 0, seen = 0;
	char name[128];

	if (size < 64)
		return 0;
	memcpy(words, data + 32, sizeof(words));
	if (!(mem = stacksnap_mem__new_copy(data, size, BASE)))
		return 0;
	hotspot_jdk17_code(&hc, mem, BASE);
	ht = hotspot_jdk17_threads(&hc, BASE);
	/* Prepared as a JVM with compressed oops and class pointers. */
	ht.prepared = true;
	ht.compressed_oops = data[0] & 1;
	ht.ccp = data[0] & 2;
	ht.narrow_shift = 3;
	ht.klass_read = true;
	ht.ck_base = BASE + 0x20;
	ht.ck_shift = BASE + 0x28;
	ht.klass_name = 0x18;
	if (data[0] & 4) {
		/* Compact object headers: the klass in the mark word. */
		ht.compact = true;
		ht.monitor_table = data[0] & 8;
		ht.mark_klass_shift = 42;
		ht.om_header = 0;
		ht.om_header_ok = true;
	}
	hl = hotspot_jdk17_locks(&ht, BASE, BASE, BASE + size, data[1] & 1);
	hl.stack_locking = data[1] & 2;
	if (hotspot_locks__threads(&hl, &ts, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			uint64_t obj, owner, blocker, tobj, jt;
			const char *why;

			if (ts[i].nlock_stack > HOTSPOT_LOCK_STACK_MAX)
				abort();
			if (ts[i].pending &&
			    hotspot_locks__monitor(&hl, ts[i].pending, &obj, &owner) == 0) {
				int at = hotspot_locks__owner(&hl, owner, obj, ts, n, &why);

				if (at >= (int)n || (at < 0 && !why))
					abort();
			}
			if (ts[i].obj &&
			    hotspot_locks__park_blocker(&hl, ts[i].obj, &blocker) == 0 &&
			    blocker) {
				hotspot_locks__class_name(&hl, blocker, name, sizeof(name));
				if (hotspot_locks__exclusive_owner(&hl, blocker, &tobj) == 0 &&
				    tobj)
					hotspot_locks__eetop(&hl, tobj, &jt);
			}
		}
	}
	hotspot_locks__each_monitor(&hl, count_monitor, &seen);
	if (seen > HOTSPOT_MAX_MONITORS)
		abort();
	for (int i = 0; i < 4; i++) {
		uint64_t a = BASE + words[i] % (size + 64);

		hotspot_locks__stack_locked(&hl, a, BASE, BASE + size);
		if (hotspot_locks__class_name(&hl, a, name, sizeof(name)) == 0 &&
		    strlen(name) >= sizeof(name))
			abort();
		{
			uint64_t tobj;

			hotspot_locks__exclusive_owner(&hl, a, &tobj);
		}
	}
	free(ts);
	stacksnap_mem__free(mem);
	return 0;
}
