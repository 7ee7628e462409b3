/* fuzz_v8_frames.c - libFuzzer target for the V8 frame naming
 * (src/runtime/v8/v8_frames.c), which follows tagged pointers through a
 * node process's heap, and for the v8dbg constants' text form
 * (v8_layout.c): the input is that heap (a copy source at a fixed base,
 * every other read fails), read with node 20's layout, from a frame
 * pointer its first two bytes pick and at a pc its third byte picks
 * (base + 16 * byte; a baseline Code's pcs are walked beside its
 * bytecodes); the naming must end, bounded,
 * without reading past the bytes or looping. The same bytes are also
 * parsed as "name value" lines into a layout of their own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/v8/v8_frames.h"
#include "runtime/v8/v8_layout.h"
#include "stacksnap.h"

#define BASE 0x10000ull

/* Node 20's v8dbg constants (Debian's v20.x), as its .dynsym gives them. */
static const char node20[] =
	"HeapObjectTag 1\nHeapObjectTagMask 3\nSmiTagMask 1\nSmiShiftSize 31\n"
	"TaggedSize 8\nSystemPointerSize 8\noff_fp_context -8\n"
	"off_fp_function -16\noff_fp_bytecode_array -32\n"
	"off_fp_bytecode_offset -40\nclass_HeapObject__map__Map 0\n"
	"class_Map__instance_type__uint16_t 12\n"
	"class_JSFunction__shared__SharedFunctionInfo 24\n"
	"class_SharedFunctionInfo__name_or_scope_info__Object 16\n"
	"class_SharedFunctionInfo__script_or_debug_info__HeapObject 32\n"
	"class_SharedFunctionInfo__function_data__Object 8\n"
	"class_Script__name__Object 16\nclass_Script__line_ends__Object 56\n"
	"class_Script__source__Object 8\n"
	"class_ExternalString__resource__Object 16\nExternalStringTag 2\n"
	"class_String__length__int32_t 12\n"
	"class_SeqOneByteString__chars__char 16\n"
	"class_SeqTwoByteString__chars__char 16\n"
	"class_ConsString__first__String 16\nclass_ConsString__second__String 24\n"
	"class_SlicedString__parent__String 16\nclass_SlicedString__offset__SMI 24\n"
	"class_ThinString__actual__String 16\n"
	"class_FixedArrayBase__length__SMI 8\nclass_FixedArray__data__uintptr_t 16\n"
	"class_BytecodeArray__data__uintptr_t 54\n"
	"class_UncompiledData__inferred_name__String 8\n"
	"FirstNonstringType 128\nStringRepresentationMask 7\n"
	"StringEncodingMask 8\nOneByteStringTag 8\nSeqStringTag 0\n"
	"ConsStringTag 1\nSlicedStringTag 3\nThinStringTag 5\n"
	"type_JSFunction__JS_FUNCTION_TYPE 2066\n"
	"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE 262\n"
	"type_ScopeInfo__SCOPE_INFO_TYPE 261\ntype_Script__SCRIPT_TYPE 167\n"
	"type_FixedArray__FIXED_ARRAY_TYPE 175\n"
	"type_ByteArray__BYTE_ARRAY_TYPE 190\n"
	"type_BytecodeArray__BYTECODE_ARRAY_TYPE 191\n"
	"FirstContextType 205\nLastContextType 214\n"
	"type_UncompiledDataWithoutPreparseData__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_TYPE 222\n"
	"type_UncompiledDataWithPreparseData__UNCOMPILED_DATA_WITH_PREPARSE_DATA_TYPE 220\n"
	"type_UncompiledDataWithoutPreparseDataWithJob__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_WITH_JOB_TYPE 223\n"
	"type_UncompiledDataWithPreparseDataAndJob__UNCOMPILED_DATA_WITH_PREPARSE_DATA_AND_JOB_TYPE 221\n"
	"scopeinfo_idx_ncontextlocals 2\nscopeinfo_idx_first_vars 3\n"
	"type_Code__CODE_TYPE 245\nCodeKindFieldMask 15\nCodeKindFieldShift 0\n"
	"CodeKindBaseline 11\nclass_Code__source_position_table__ByteArray 24\n"
	"class_Code__deoptimization_data__FixedArray 16\n"
	"DeoptimizationDataInliningPositionsIndex 7\n"
	"DeoptimizationDataLiteralArrayIndex 2\n"
	"class_Code__bytecode_offset_table__ByteArray 24\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct v8_layout l;
	static int ready;
	struct v8_layout scratch;
	struct stacksnap_mem *mem;
	static struct v8_frame out[4];
	int n;
	const char *missing;
	uint16_t slot;

	if (!ready) {
		v8_layout__init(&l);
		v8_layout__parse_text(&l, node20, sizeof(node20) - 1);
		if (v8_layout__check(&l, &missing))
			abort();
		/* Baseline frames' bytecode sizes (node's come from its
		   .symtab): 198 bytecodes, 1 to 5 bytes, wider scaled. */
		l.nbytecodes = 198;
		for (unsigned k = 0; k < 3; k++)
			for (unsigned b = 0; b < 198; b++)
				l.bytecode_sizes[k][b] = (uint8_t)(b < 4 ? 1 : 1 + (b % 5) * (k + 1));
		ready = 1;
	}
	v8_layout__init(&scratch);
	v8_layout__parse_text(&scratch, (const char *)data, size);
	(void)v8_layout__check(&scratch, &missing);
	if (size < 64)
		return 0;
	memcpy(&slot, data, sizeof(slot));
	if (!(mem = stacksnap_mem__new_copy(data, size, BASE)))
		return 0;
	n = v8_frame__name(&l, mem, BASE + 8 * (uint64_t)(slot % (size / 8)),
			   BASE + data[2] * 16ull, out, 4);
	if (n > 4)
		abort();
	for (int i = 0; i < n; i++)
		if (strlen(out[i].function) >= sizeof(out[i].function) ||
		    strlen(out[i].file) >= sizeof(out[i].file) ||
		    out[i].inlined != (i + 1 < n))
			abort();
	stacksnap_mem__free(mem);
	return 0;
}
