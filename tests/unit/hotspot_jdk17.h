/* hotspot_jdk17.h - JDK 17's HotSpot layout (the offsets a live JVM's
 * vmStructs give), shared by the unit test of HotSpot code naming
 * (tests/unit/test_jit_hotspot.c) and its fuzz target
 * (fuzz/fuzz_hotspot.c), which lay out memory images as that JVM does. */
#ifndef SS_TESTS_HOTSPOT_JDK17_H
#define SS_TESTS_HOTSPOT_JDK17_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_locks.h"
#include "runtime/java/hotspot_threads.h"

/* hc set to JDK 17's code cache, method and line table offsets over mem,
 * the CodeHeap array's pointer at heaps; everything else 0. */
static inline void hotspot_jdk17_code(struct hotspot_code *hc, struct stacksnap_mem *mem,
				      uint64_t heaps)
{
	memset(hc, 0, sizeof(*hc));
	hc->mem = mem;
	hc->heaps = heaps;
	hc->ga_data = 8;
	hc->heap_memory = 8;
	hc->heap_segmap = 0x78;
	hc->heap_log2_segment = 0x100;
	hc->vs_low = 0x10;
	hc->vs_high = 0x18;
	hc->block_size = 16;
	hc->block_used = 8;
	hc->blob_name = 0x60;
	hc->blob_size = 0xc;
	hc->cm_method = 0x70;
	hc->method_const = 8;
	hc->cm_constants = 8;
	hc->cm_name_index = 0x22;
	hc->cm_signature_index = 0x24;
	hc->cp_size = 72;
	hc->cp_holder = 0x18;
	hc->cp_length = 0x3c;
	hc->klass_name = 0x18;
	hc->sym_length = 4;
	hc->sym_body = 6;
	hc->interp_method_slot = -3;
	hc->interp_bcp_slot = -8;
	hc->cm_size = 48;
	hc->cm_code_size = 0x20;
	hc->cm_flags = 0x1c;
	hc->cm_has_lines = 1;
	hc->cp_source_file = 0x36;
}

/* JDK 17's thread list, thread and string field offsets over hc's mem,
 * the statics at base + 0x08 (the ThreadsList) to base + 0x38 (the flag
 * count): Thread's and String's klasses at + 0x10 and + 0x18, the
 * compressed references' base and shift at + 0x20 and + 0x28, the flags
 * at + 0x30. */
static inline struct hotspot_threads hotspot_jdk17_threads(struct hotspot_code *hc,
							   uint64_t base)
{
	return (struct hotspot_threads){
		.hc = hc, .mem = hc->mem,
		.thread_list = base + 0x08, .tl_length = 4, .tl_threads = 0x10,
		.jt_osthread = 0x230, .jt_thread_obj = 0x288, .handle_obj = 0,
		.os_thread_id = 0xd0,
		.thread_klass = base + 0x10, .string_klass = base + 0x18,
		.ik_fields = 0x1c8, .ik_java_fields = 0x136, .ik_constants = 0xe8,
		.u2_data = 4, .oop_base = base + 0x20, .oop_shift = base + 0x28,
		.flags_addr = base + 0x30, .nflags_addr = base + 0x38,
		.flag_addr = 0, .flag_name = 8, .flag_size = 24,
		.fi_slots = 6, .fi_name = 1, .fi_sig = 2, .fi_low = 4,
		.fi_high = 5, .tag_size = 2, .tag_offset = 1,
	};
}

/* JDK 17's lock offsets (the JavaThread's pending and waiting monitors
 * and stack, the ObjectMonitor's object, owner and next) over ht,
 * prepared: the in-use list's head at base + 0x40, the heap [heap_lo,
 * heap_hi), java.lang.Thread's parkBlocker @0x50 and eetop @0x58. With
 * jdk25, JDK 25's: the lock stack, owner ids, the stack locker, the
 * anonymous owner 1 and DEFLATER_MARKER 2. */
static inline struct hotspot_locks hotspot_jdk17_locks(struct hotspot_threads *ht,
							uint64_t base, uint64_t heap_lo,
							uint64_t heap_hi, bool jdk25)
{
	struct hotspot_locks hl = {
		.ht = ht, .mem = ht->mem,
		.jt_pending = 0x308, .jt_waiting = 0x318,
		.jt_stack_base = 0x250, .jt_stack_size = 0x258,
		.om_object = 8, .om_owner = 0x40, .om_next = 0x80,
		.in_use_head = base + 0x40, .klass_super = 0x78,
		.anonymous_owner = -1, .deflater_marker = -1, .lm_legacy = -1,
		.prepared = true, .heap_lo = heap_lo, .heap_hi = heap_hi,
		.thread_park_blocker = 0x50, .thread_eetop = 0x58,
	};

	if (jdk25) {
		hl.jt_lock_stack = 0x7d0;
		hl.ls_top = 0;
		hl.ls_base = 0x10;
		hl.jt_owner_id = 0x520;
		hl.om_stack_locker = 0xc0;
		hl.has_stack_locker = true;
		hl.anonymous_owner = 1;
		hl.deflater_marker = 2;
	}
	return hl;
}

#endif
