/* v8_node20.h - node 20's V8 layout, shared by the unit test of V8 frame
 * naming (tests/unit/test_v8_frames.c) and its fuzz target
 * (fuzz/fuzz_v8_frames.c), which lay out heap images as that node does:
 * its v8dbg_* constants in the text form v8_layout__parse_text reads. */
#ifndef SS_TESTS_V8_NODE20_H
#define SS_TESTS_V8_NODE20_H

#include <stddef.h>

#include "runtime/v8/v8_layout.h"

/* As node 20's .dynsym gives them (Debian's v20.x); one line keeps the
 * symbol's own v8dbg_ prefix, which the parser strips. */
static const char v8_node20[] =
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
	"v8dbg_type_JSFunction__JS_FUNCTION_TYPE 2066\n"
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
	"class_Code__bytecode_offset_table__ByteArray 24\n"
	"type_InstructionStream__INSTRUCTION_STREAM_TYPE 252\n"
	"class_InstructionStream__instruction_start__uintptr_t 16\n";

/* l set to node 20's layout; returns v8_layout__check's verdict (0, or
 * -errno with *missing naming a constant). */
static inline int v8_node20_layout(struct v8_layout *l, const char **missing)
{
	v8_layout__init(l);
	v8_layout__parse_text(l, v8_node20, sizeof(v8_node20) - 1);
	return v8_layout__check(l, missing);
}

#endif
