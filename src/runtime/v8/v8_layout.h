/* v8_layout.h - V8's post-mortem metadata, the v8dbg_* constants a node
 * binary exports among its dynamic symbols (frame slot offsets, object
 * field offsets, instance types, Smi tagging), read into one layout. The
 * numbers are data from the binary the process runs, never compiled in;
 * the few V8 11 facts the metadata does not carry are named as such in
 * struct v8_layout. */
#ifndef SS_RUNTIME_V8_LAYOUT_H
#define SS_RUNTIME_V8_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

/* One build's layout. Invariant once v8_layout__check() accepted it:
 * tagged_size == 8 (no pointer compression), every offset is inside
 * [-4096, 4096], smi_shift is 32, every field a v8_frame__name() reads is
 * set. Offsets of heap objects are from the untagged address. */
struct v8_layout {
	/* Tagging. */
	int64_t heap_object_tag, heap_object_tag_mask, smi_tag_mask;
	int64_t smi_shift_size, tagged_size, pointer_size;
	unsigned smi_shift;	/* value = (int64_t)raw >> smi_shift */
	/* A JavaScript frame's slots, from its frame pointer. */
	int64_t fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
	/* Objects. */
	int64_t off_map, off_map_instance_type;
	int64_t off_function_shared;
	int64_t off_shared_name_or_scope_info, off_shared_script_or_debug_info,
		off_shared_function_data;
	int64_t off_script_name, off_script_line_ends, off_script_source;
	int64_t off_string_length, off_seq_one_byte_chars, off_seq_two_byte_chars;
	int64_t off_cons_first, off_cons_second;
	int64_t off_sliced_parent, off_sliced_offset, off_thin_actual;
	int64_t off_external_resource;
	int64_t off_fixed_array_length, off_fixed_array_data;
	int64_t off_bytecode_array_data; /* the header's size */
	int64_t off_uncompiled_inferred_name;
	/* String instance types. */
	int64_t first_nonstring_type, string_repr_mask, string_enc_mask,
		one_byte_tag, seq_tag, cons_tag, sliced_tag, thin_tag,
		external_tag;
	/* Instance types. */
	int64_t type_js_function, type_shared, type_scope_info, type_script,
		type_fixed_array, type_byte_array, type_bytecode_array,
		first_context_type, last_context_type;
	int64_t type_uncompiled[4];
	/* ScopeInfo's fixed slots (after the map, in tagged words). */
	int64_t scopeinfo_idx_ncontextlocals, scopeinfo_idx_first_vars;
	/* Optimized code (optional: -1 when absent, and compiled frames
	   then get no line). */
	int64_t type_code, code_kind_mask, code_kind_shift, code_kind_baseline;
	int64_t off_code_source_positions, off_code_deopt_data;
	int64_t deopt_inlining_positions_index, deopt_literal_array_index;
	/* The InstructionStream holding a Code's instructions (optional):
	   its instance type and where its instructions start (the header's
	   size); its Code is the tagged word after the map
	   (off_istream_code, 8: not in the metadata). What finds the Code
	   of a pc the function no longer runs (on-stack replacement). */
	int64_t type_istream, off_istream_body, off_istream_code;
	/* Not in the metadata; V8 11's layout (node 18-22), checked against
	   the types found where they are read: */
	int64_t off_bytecode_source_positions; /* BytecodeArray's
						  source_position_table (32) */
	/* An external string's characters: the pointer V8 caches after its
	   resource (resource + 8), absent in "uncached" external strings
	   (instance type bit 0x10). */
	int64_t uncached_external_mask;
	/* JSFunction's code (48, between feedback_cell and
	   prototype_or_initial_map); Code's instruction start (40, a raw
	   pointer), flags (48, u32, the kind in CodeKindFieldMask) and
	   instruction size (56, i32); an InliningPosition is 16 bytes (the
	   SourcePosition, the inlined function's literal index, padding). */
	int64_t off_function_code, off_code_instruction_start, off_code_flags,
		off_code_instruction_size, inlining_position_size;
	/* Baseline (Sparkplug) code: Code's bytecode offset table (its pcs
	   per bytecode) and each bytecode's size at each operand scale
	   (V8's Bytecodes::kBytecodeSizes, read from .symtab when needed:
	   not in the metadata). nbytecodes 0 (not read, or no such symbol):
	   baseline frames keep no line. */
	int64_t off_code_bytecode_offsets;
	unsigned nbytecodes;
	uint8_t bytecode_sizes[3][256];
	/* ScopeFlags bits: has_saved_class_variable (10), function_variable
	   (12, 2 bits), has_inferred_function_name (14); inlined local names
	   below 75. */
	unsigned flag_saved_class_var, flag_function_var, flag_inferred_name;
	int64_t max_inlined_local_names;
	size_t nsymbols;	/* v8dbg_* constants seen */
};

/* Starts a layout: the V8 11 facts set, everything else unset. */
void v8_layout__init(struct v8_layout *l);
/* Records one constant, v8dbg_<name> = value (name without the prefix);
 * names this reader does not use are ignored. */
void v8_layout__set(struct v8_layout *l, const char *name, int64_t value);
/* Whether the layout is one the frame naming can use: 0, -ENOENT naming
 * the first missing constant in *missing, -ENOTSUP (pointer compression,
 * or a Smi layout other than 64-bit Smis), -EPROTO (an offset out of
 * range). */
int v8_layout__check(struct v8_layout *l, const char **missing);

/* Reads the v8dbg_* constants of the ELF file at path (its .dynsym and
 * the bytes the symbols point at, in the file: .rodata, .data, or zero in
 * .bss) into l (after v8_layout__init). Returns 0, -ENOENT (no v8dbg
 * symbols), or -errno. */
int v8_layout__read_elf(const char *path, const struct log_sink *log,
			struct v8_layout *l);
/* Bytecodes::kBytecodeSizes from the image's .symtab into l (nbytecodes
 * set): what baseline frames' lines need, read only when one is met (the
 * symbol table's pages cost a dump ~2-3 ms). Returns 0, -ENOENT (no such
 * symbol: a stripped binary) or -errno. */
int v8_layout__read_bytecode_sizes(const char *path, const struct log_sink *log,
				   struct v8_layout *l);

/* Parses "name value" lines (the format of tests and the fuzz target):
 * at most len bytes, lines of at most 256 bytes. */
void v8_layout__parse_text(struct v8_layout *l, const char *text, size_t len);

#endif
