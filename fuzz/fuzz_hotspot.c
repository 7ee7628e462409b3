/* fuzz_hotspot.c - libFuzzer target for the HotSpot code naming
 * (src/runtime/java/hotspot_code.c), which follows pointers through a
 * JVM's memory: the input is that memory (a copy source at a fixed base,
 * every other read fails), read with a fixed plausible layout; the code
 * cache lookup, the interpreter frame's Method* and the method naming,
 * and the threads' Java names (hotspot_threads.c) must end, bounded,
 * without reading past the bytes or looping. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_frames.h"
#include "runtime/java/hotspot_threads.h"
#include "stacksnap.h"
/* JDK 17's layout, as the unit test has it */
#include "../tests/unit/hotspot_jdk17.h"

#define BASE 0x10000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stacksnap_mem *mem;
	struct hotspot_code hc;
	struct hotspot_blob blob;
	uint64_t pcs[4], method = 0;
	char name[512];

	if (size < 32)
		return 0;
	memcpy(pcs, data, sizeof(pcs));
	if (!(mem = stacksnap_mem__new_copy(data, size, BASE)))
		return 0;
	/* JDK 17's offsets (as a live JVM's tables give them), statics at
	 * the start of the bytes. */
	hotspot_jdk17_code(&hc, mem, BASE + 8 * (data[0] & 3));
	hc.blob_frame_size = 0x1c;
	/* Scope descriptors: offsets inside the same bytes. */
	hc.scopes_ok = true;
	hc.blob_code_begin = 0x20;
	hc.nm_scopes_data = 0x28;
	hc.nm_scopes_pcs = 0x30;
	hc.nm_dependencies = 0x34;
	hc.nm_metadata = 0x38;
	hc.pcdesc_size = 16;
	hc.pcdesc_pc = 0;
	hc.pcdesc_scope = 4;
	/* Deoptimization and frame-complete fields (the stepper's). */
	hc.deopt_ok = true;
	hc.cm_deopt_handler = 0x40;
	hc.cm_deopt_mh_handler = 0x48;
	hc.nm_orig_pc_offset = 0x50;
	hc.blob_frame_complete = 0x14;
	/* Half the inputs: JDK 25's encodings and code cache (offsets from
	   the blob, scopes in immutable data, metadata in mutable data; its
	   tables' offsets). */
	if (data[1] & 1) {
		hc.offsets23 = true;
		hc.vm_major = 25;
		hc.u5_excludes_zero = true;
		hc.blob_code_offset = 0x24;
		hc.blob_mutable_data = 0x10;
		hc.blob_mutable_size = 0x30;
		hc.blob_relocation_size = 0x1c;
		hc.nm_immutable_data = 0x60;
		hc.nm_immutable_size = 0xa0;
		hc.nm_scopes_data = 0xc8;
		hc.nm_scopes_pcs = 0xc4;
		hc.cm_method = 0x50;
		hc.cm_deopt_handler = 0xb0;
		hc.cm_deopt_mh_handler = 0xb4;
		hc.nm_orig_pc_offset = 0xd0;
		hc.blob_frame_complete = 0x36;
		hc.blob_frame_complete_width = 2;
		hc.cm_flags = 0x1c;
		hc.cm_flags_width = 4;
	}
	for (int i = 0; i < 4; i++) {
		if (hotspot_code__blob(&hc, BASE + pcs[i] % (size + 64), &blob) == 0) {
			if (strlen(blob.name) >= sizeof(blob.name))
				abort();
			method = blob.method;
		}
		if (!method)
			hotspot_code__interpreter_method(&hc, NULL, BASE + pcs[i] % (size + 64),
							 &method);
		{
			int bci = -1, line;
			char file[64];

			hotspot_code__interpreter_bci(&hc, NULL, BASE + pcs[i] % (size + 64),
						      method, &bci);
			if (hotspot_code__line(&hc, method, bci < 0 ? (int)(pcs[i] & 0xff) : bci,
					       &line, file, sizeof(file)) == 0 &&
			    strlen(file) >= sizeof(file))
				abort();
		}
		if (hotspot_code__method_name(&hc, method, name, sizeof(name)) == 0 &&
		    strlen(name) >= sizeof(name))
			abort();
		method = BASE + pcs[(i + 1) & 3] % (size + 64);
		hotspot_code__method_name(&hc, method, name, sizeof(name));
		/* A whole frame named as the dump names it. */
		{
			struct hotspot_frame fr;

			if (hotspot_frame__name(&hc, NULL, BASE + pcs[i] % (size + 64),
						BASE + pcs[(i + 2) & 3] % (size + 64),
						&fr) == 0 &&
			    (!fr.function[0] ||
			     strlen(fr.function) >= sizeof(fr.function) ||
			     strlen(fr.file) >= sizeof(fr.file)))
				abort();
		}
	}
	{
		uint64_t methods[8];
		int bcis[8];

		if (hotspot_code__scopes(&hc, BASE + pcs[0] % (size + 64),
					 BASE + pcs[1] % (size + 64), pcs[2] & 1,
					 methods, bcis, 8) > 8)
			abort();
	}
	{
		uint64_t ranges[4][2];

		if (hotspot_code__heap_ranges(&hc, ranges, 4) > 4)
			abort();
	}
	/* The threads' Java names: JDK 17's offsets, statics in the first
	 * bytes; flags, the thread list, the objects wherever the bytes
	 * point. */
	{
		struct hotspot_threads ht = hotspot_jdk17_threads(&hc, BASE);
		struct hotspot_thread_name *names;
		size_t n;

		/* JDK 25: the FieldInfo stream, virtual threads, class
		   pointers decoded (statics in the first bytes). */
		if (data[1] & 1) {
			ht.ik_fieldinfo_stream = 0x1c0;
			ht.ff_initialized = 0;
			ht.ff_generic = 2;
			ht.ff_contended = 4;
			ht.jt_vthread = 0x468;
			ht.ck_base = BASE + 0x40;
			ht.ck_shift = BASE + 0x48;
			ht.klass_name = 0x18;
		}

		if (hotspot_threads__names(&ht, &names, &n) == 0) {
			for (size_t i = 0; i < n; i++)
				if (strlen(names[i].name) > HOTSPOT_MAX_THREAD_NAME)
					abort();
			free(names);
		}
	}
	stacksnap_mem__free(mem);
	return 0;
}
