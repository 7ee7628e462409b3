/* v8_layout.c - reads V8's v8dbg_* post-mortem constants (from a node
 * binary's .dynsym, or from text) into a struct v8_layout and checks that
 * the layout is one the frame naming can read. */
#define _GNU_SOURCE
#include <errno.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/elf_image.h"
#include "runtime/v8/v8_layout.h"

#define UNSET INT64_MIN

/* The constants read, by their name after "v8dbg_". */
static const struct {
	const char *name;
	size_t at;
} wanted[] = {
#define W(n, f) { n, offsetof(struct v8_layout, f) }
	W("HeapObjectTag", heap_object_tag),
	W("HeapObjectTagMask", heap_object_tag_mask),
	W("SmiTagMask", smi_tag_mask),
	W("SmiShiftSize", smi_shift_size),
	W("TaggedSize", tagged_size),
	W("SystemPointerSize", pointer_size),
	W("off_fp_context", fp_context),
	W("off_fp_function", fp_function),
	W("off_fp_bytecode_array", fp_bytecode_array),
	W("off_fp_bytecode_offset", fp_bytecode_offset),
	W("class_HeapObject__map__Map", off_map),
	W("class_Map__instance_type__uint16_t", off_map_instance_type),
	W("class_JSFunction__shared__SharedFunctionInfo", off_function_shared),
	W("class_SharedFunctionInfo__name_or_scope_info__Object",
	  off_shared_name_or_scope_info),
	W("class_SharedFunctionInfo__script_or_debug_info__HeapObject",
	  off_shared_script_or_debug_info),
	W("class_SharedFunctionInfo__function_data__Object",
	  off_shared_function_data),
	W("class_Script__name__Object", off_script_name),
	W("class_Script__line_ends__Object", off_script_line_ends),
	W("class_Script__source__Object", off_script_source),
	W("class_String__length__int32_t", off_string_length),
	W("class_SeqOneByteString__chars__char", off_seq_one_byte_chars),
	W("class_SeqTwoByteString__chars__char", off_seq_two_byte_chars),
	W("class_ConsString__first__String", off_cons_first),
	W("class_ConsString__second__String", off_cons_second),
	W("class_SlicedString__parent__String", off_sliced_parent),
	W("class_SlicedString__offset__SMI", off_sliced_offset),
	W("class_ThinString__actual__String", off_thin_actual),
	W("class_ExternalString__resource__Object", off_external_resource),
	W("class_FixedArrayBase__length__SMI", off_fixed_array_length),
	W("class_FixedArray__data__uintptr_t", off_fixed_array_data),
	W("class_BytecodeArray__data__uintptr_t", off_bytecode_array_data),
	W("class_UncompiledData__inferred_name__String",
	  off_uncompiled_inferred_name),
	W("FirstNonstringType", first_nonstring_type),
	W("StringRepresentationMask", string_repr_mask),
	W("StringEncodingMask", string_enc_mask),
	W("OneByteStringTag", one_byte_tag),
	W("SeqStringTag", seq_tag),
	W("ConsStringTag", cons_tag),
	W("SlicedStringTag", sliced_tag),
	W("ThinStringTag", thin_tag),
	W("ExternalStringTag", external_tag),
	W("type_JSFunction__JS_FUNCTION_TYPE", type_js_function),
	W("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", type_shared),
	W("type_ScopeInfo__SCOPE_INFO_TYPE", type_scope_info),
	W("type_Script__SCRIPT_TYPE", type_script),
	W("type_FixedArray__FIXED_ARRAY_TYPE", type_fixed_array),
	W("type_ByteArray__BYTE_ARRAY_TYPE", type_byte_array),
	W("type_BytecodeArray__BYTECODE_ARRAY_TYPE", type_bytecode_array),
	W("FirstContextType", first_context_type),
	W("LastContextType", last_context_type),
	W("type_UncompiledDataWithoutPreparseData__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_TYPE",
	  type_uncompiled[0]),
	W("type_UncompiledDataWithPreparseData__UNCOMPILED_DATA_WITH_PREPARSE_DATA_TYPE",
	  type_uncompiled[1]),
	W("type_UncompiledDataWithoutPreparseDataWithJob__UNCOMPILED_DATA_WITHOUT_PREPARSE_DATA_WITH_JOB_TYPE",
	  type_uncompiled[2]),
	W("type_UncompiledDataWithPreparseDataAndJob__UNCOMPILED_DATA_WITH_PREPARSE_DATA_AND_JOB_TYPE",
	  type_uncompiled[3]),
	W("scopeinfo_idx_ncontextlocals", scopeinfo_idx_ncontextlocals),
	W("scopeinfo_idx_first_vars", scopeinfo_idx_first_vars),
	W("type_Code__CODE_TYPE", type_code),
	W("CodeKindFieldMask", code_kind_mask),
	W("CodeKindFieldShift", code_kind_shift),
	W("CodeKindBaseline", code_kind_baseline),
	W("class_Code__source_position_table__ByteArray",
	  off_code_source_positions),
	W("class_Code__deoptimization_data__FixedArray", off_code_deopt_data),
	W("class_Code__bytecode_offset_table__ByteArray",
	  off_code_bytecode_offsets),
	W("DeoptimizationDataInliningPositionsIndex",
	  deopt_inlining_positions_index),
	W("DeoptimizationDataLiteralArrayIndex", deopt_literal_array_index),
	W("type_InstructionStream__INSTRUCTION_STREAM_TYPE", type_istream),
	W("class_InstructionStream__instruction_start__uintptr_t",
	  off_istream_body),
#undef W
};
#define NWANTED (sizeof(wanted) / sizeof(wanted[0]))

/* Constants whose absence is not fatal (set to -1, which no type or
 * representation equals): the uncompiled-data types only give a lazily
 * compiled function its inferred name, the external string's resource
 * only the characters of scripts node keeps outside the heap, the Code
 * constants only the lines of optimized frames. */
static bool optional(const char *name)
{
	return !strncmp(name, "type_UncompiledData", 19) ||
		!strcmp(name, "class_UncompiledData__inferred_name__String") ||
		!strcmp(name, "class_ExternalString__resource__Object") ||
		!strcmp(name, "ExternalStringTag") ||
		!strcmp(name, "type_Code__CODE_TYPE") ||
		!strncmp(name, "CodeKind", 8) ||
		!strncmp(name, "class_Code__", 12) ||
		!strncmp(name, "type_InstructionStream", 22) ||
		!strncmp(name, "class_InstructionStream__", 25) ||
		!strncmp(name, "DeoptimizationData", 18);
}

static int64_t *slot(struct v8_layout *l, size_t at)
{
	return (int64_t *)((char *)l + at);
}

void v8_layout__init(struct v8_layout *l)
{
	memset(l, 0, sizeof(*l));
	for (size_t k = 0; k < NWANTED; k++)
		*slot(l, wanted[k].at) = UNSET;
	l->off_bytecode_source_positions = 32;
	l->uncached_external_mask = 0x10;
	l->off_function_code = 48;
	l->off_code_instruction_start = 40;
	l->off_code_flags = 48;
	l->off_code_instruction_size = 56;
	l->off_istream_code = 8;
	l->inlining_position_size = 16;
	l->flag_saved_class_var = 10;
	l->flag_function_var = 12;
	l->flag_inferred_name = 14;
	l->max_inlined_local_names = 75;
}

void v8_layout__set(struct v8_layout *l, const char *name, int64_t value)
{
	l->nsymbols++;
	for (size_t k = 0; k < NWANTED; k++)
		if (!strcmp(name, wanted[k].name)) {
			*slot(l, wanted[k].at) = value;
			return;
		}
}

int v8_layout__check(struct v8_layout *l, const char **missing)
{
	*missing = NULL;
	for (size_t k = 0; k < NWANTED; k++) {
		int64_t v = *slot(l, wanted[k].at);

		if (v == UNSET) {
			if (optional(wanted[k].name)) {
				*slot(l, wanted[k].at) = -1;
				continue;
			}
			*missing = wanted[k].name;
			return -ENOENT;
		}
		if (v < -4096 || v > 4096) {
			/* Masks and types are small too, save the unused
			   upper instance types. */
			*missing = wanted[k].name;
			return -EPROTO;
		}
	}
	/* Pointer compression (4-byte tagged fields) and 31-bit Smis are
	   other layouts: their reads are not written. */
	if (l->tagged_size != 8 || l->pointer_size != 8 ||
	    l->smi_shift_size != 31 || l->smi_tag_mask != 1) {
		*missing = "TaggedSize";
		return -ENOTSUP;
	}
	l->smi_shift = 32;
	if (l->heap_object_tag_mask < 1 || l->heap_object_tag_mask > 7 ||
	    (l->heap_object_tag & ~l->heap_object_tag_mask) ||
	    l->off_bytecode_array_data < 0 || l->scopeinfo_idx_first_vars < 1 ||
	    l->scopeinfo_idx_ncontextlocals < 0 ||
	    l->first_context_type > l->last_context_type) {
		*missing = "HeapObjectTagMask";
		return -EPROTO;
	}
	return 0;
}

void v8_layout__parse_text(struct v8_layout *l, const char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		char line[257], *sp, *end;
		size_t n = 0;
		long long v;

		while (i < len && text[i] != '\n' && n < sizeof(line) - 1)
			line[n++] = text[i++];
		while (i < len && text[i] != '\n')
			i++;
		i++;
		line[n] = 0;
		if (!(sp = strchr(line, ' ')))
			continue;
		*sp = 0;
		errno = 0;
		v = strtoll(sp + 1, &end, 0);
		if (errno || end == sp + 1)
			continue;
		v8_layout__set(l, strncmp(line, "v8dbg_", 6) ? line : line + 6, v);
	}
}

/* The size bytes of a symbol at link address addr, from the file (none
 * for .bss). */
static int symbol_bytes(const struct elf_image *img, uint64_t addr,
			uint64_t size, uint8_t *out)
{
	const uint8_t *p;
	int err = elf_image__vaddr_bytes(img, addr, size, &p);

	if (err)
		return err;
	if (!p)
		return -EPROTO;
	memcpy(out, p, size);
	return 0;
}

/* V8's Bytecodes::kBytecodeSizes (uint8_t [3][count]), where the binary
 * keeps its symbol table: the sizes baseline frames' pcs are mapped to
 * bytecode offsets with. */
#define BYTECODE_SIZES_SYM "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"

static void read_bytecode_sizes(struct elf_image *img, struct v8_layout *l)
{
	struct elf_symbols it;
	struct elf_symbol sym;

	elf_symbols__init(&it, img, SHT_SYMTAB);
	while (elf_symbols__next(&it, &sym)) {
		const char *name;
		uint8_t bytes[3 * 256];
		size_t n;

		if (!sym.value || sym.size % 3 || sym.size > sizeof(bytes) ||
		    sym.size < 3 * 4 || !(name = elf_symbols__name(&it, &sym)) ||
		    strcmp(name, BYTECODE_SIZES_SYM) ||
		    symbol_bytes(img, sym.value, sym.size, bytes))
			continue;
		n = sym.size / 3;
		for (size_t k = 0; k < 3; k++)
			memcpy(l->bytecode_sizes[k], bytes + k * n, n);
		l->nbytecodes = (unsigned)n;
		return;
	}
}

/* The value of a 4- or 8-byte symbol at link address addr: its bytes in
 * the file, or 0 where the segment has no file bytes (.bss). */
static int symbol_value(const struct elf_image *img, uint64_t addr,
			uint64_t size, int64_t *v)
{
	const uint8_t *p;
	int err = elf_image__vaddr_bytes(img, addr, size, &p);

	if (err)
		return err;
	if (!p) {
		*v = 0;
	} else if (size == 4) {
		int32_t x;

		memcpy(&x, p, 4);
		*v = x;
	} else {
		memcpy(v, p, 8);
	}
	return 0;
}

int v8_layout__read_elf(const char *path, const struct log_sink *log,
			struct v8_layout *l)
{
	struct elf_image *img;
	struct elf_symbols it;
	struct elf_symbol sym;
	size_t seen = 0;
	int err = elf_image__open(path, log, &img);

	if (err)
		return err;
	elf_symbols__init(&it, img, SHT_DYNSYM);
	while (elf_symbols__next(&it, &sym)) {
		const char *name;
		int64_t v;

		if (!sym.value || (sym.size != 4 && sym.size != 8) ||
		    !(name = elf_symbols__name(&it, &sym)) || strncmp(name, "v8dbg_", 6) ||
		    symbol_value(img, sym.value, sym.size, &v))
			continue;
		v8_layout__set(l, name + 6, v);
		seen++;
	}
	elf_image__free(img);
	return seen ? 0 : -ENOENT;
}

int v8_layout__read_bytecode_sizes(const char *path, const struct log_sink *log,
				   struct v8_layout *l)
{
	struct elf_image *img;
	int err = elf_image__open(path, log, &img);

	if (err)
		return err;
	read_bytecode_sizes(img, l);
	elf_image__free(img);
	return l->nbytecodes ? 0 : -ENOENT;
}
