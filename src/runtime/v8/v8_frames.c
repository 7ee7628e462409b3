/* v8_frames.c - names one V8 JavaScript frame from its slots and the heap
 * objects they point at (JSFunction, SharedFunctionInfo, ScopeInfo,
 * Script, strings, BytecodeArray and its source position table), with the
 * offsets of struct v8_layout. Nothing here trusts what it reads: every
 * object's map is checked for the expected instance type before a field
 * is read, every length is bounded, every walk has a budget. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"
#include "runtime/v8/v8_frames.h"

static int rd(struct stacksnap_mem *mem, uint64_t addr, uint64_t *v)
{
	return mem_read(mem, addr, v, sizeof(*v)) ? -EFAULT : 0;
}

static bool is_heap(const struct v8_layout *l, uint64_t v)
{
	return (v & (uint64_t)l->heap_object_tag_mask) == (uint64_t)l->heap_object_tag &&
		v > 4096;
}

static bool is_smi(const struct v8_layout *l, uint64_t v)
{
	return !(v & (uint64_t)l->smi_tag_mask);
}

static int64_t smi_value(const struct v8_layout *l, uint64_t v)
{
	return (int64_t)v >> l->smi_shift;
}

/* Field off of the heap object obj (tagged). */
static int field(const struct v8_layout *l, struct stacksnap_mem *mem,
		 uint64_t obj, int64_t off, uint64_t *v)
{
	return rd(mem, obj - (uint64_t)l->heap_object_tag + (uint64_t)off, v);
}

/* The instance type of obj (tagged): -1 for a value that is no heap
 * object or whose map does not read as one. */
static int64_t instance_type(const struct v8_layout *l, struct stacksnap_mem *mem,
			     uint64_t obj)
{
	uint64_t map;
	uint16_t type;

	if (!is_heap(l, obj) || field(l, mem, obj, l->off_map, &map) ||
	    !is_heap(l, map) ||
	    mem_read(mem, map - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_map_instance_type, &type, sizeof(type)))
		return -1;
	return type;
}

/* Where the characters of a sequential or external string s (of
 * instance type type) start: in the object, or, for an external string,
 * at the data pointer V8 caches after its resource (an "uncached" one
 * has none: its characters are behind a C++ resource's virtual call). */
static int string_chars(const struct v8_layout *l, struct stacksnap_mem *mem,
			uint64_t s, int64_t type, uint64_t *base)
{
	int64_t repr = type & l->string_repr_mask;
	bool one = (type & l->string_enc_mask) == l->one_byte_tag;

	if (repr == l->seq_tag) {
		*base = s - (uint64_t)l->heap_object_tag +
			(uint64_t)(one ? l->off_seq_one_byte_chars
				       : l->off_seq_two_byte_chars);
		return 0;
	}
	if (repr != l->external_tag || l->off_external_resource < 0 ||
	    (type & l->uncached_external_mask))
		return -ENOTSUP;
	if (rd(mem, s - (uint64_t)l->heap_object_tag +
	       (uint64_t)l->off_external_resource + 8, base))
		return -EFAULT;
	return *base ? 0 : -ENOTSUP;
}

/* A string being copied out: at most V8_MAX_NAME - 1 bytes, and a budget
 * of parts (cons, sliced, thin) followed. */
struct str_out {
	char *buf;
	size_t len, cap;
	unsigned parts;
};

static void put_utf8(struct str_out *o, unsigned c)
{
	char b[3];
	size_t n;

	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	}
	if (o->len + n < o->cap) {
		memcpy(o->buf + o->len, b, n);
		o->len += n;
	}
}

/* Appends characters [start, start + count) of string s. */
static int append_string(const struct v8_layout *l, struct stacksnap_mem *mem,
			 uint64_t s, int64_t start, int64_t count,
			 struct str_out *o)
{
	int64_t type, repr;
	int32_t length;
	uint64_t a, b;

	if (count <= 0 || o->len + 1 >= o->cap)
		return 0;
	if (++o->parts > V8_MAX_STRING_PARTS)
		return -ELOOP;
	type = instance_type(l, mem, s);
	if (type < 0 || type >= l->first_nonstring_type)
		return -EPROTO;
	if (mem_read(mem, s - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_string_length, &length, sizeof(length)))
		return -EFAULT;
	if (length < 0 || start < 0 || start > length || count > length - start)
		return -EPROTO;
	repr = type & l->string_repr_mask;
	if (repr == l->seq_tag || repr == l->external_tag) {
		bool one = (type & l->string_enc_mask) == l->one_byte_tag;
		uint64_t base;

		if (string_chars(l, mem, s, type, &base))
			return -ENOTSUP;
		/* Never more characters than the output can take. */
		int64_t n = count < (int64_t)o->cap ? count : (int64_t)o->cap;

		for (int64_t i = 0; i < n && o->len + 1 < o->cap; i++) {
			if (one) {
				uint8_t c;

				if (mem_read(mem, base + (uint64_t)(start + i), &c, 1))
					return -EFAULT;
				put_utf8(o, c);
			} else {
				uint16_t c;

				if (mem_read(mem, base + 2 * (uint64_t)(start + i), &c, 2))
					return -EFAULT;
				put_utf8(o, c);
			}
		}
		return 0;
	}
	if (repr == l->cons_tag) {
		int32_t first_len;
		int64_t take;
		int err;

		if (field(l, mem, s, l->off_cons_first, &a) ||
		    field(l, mem, s, l->off_cons_second, &b) ||
		    mem_read(mem, a - (uint64_t)l->heap_object_tag +
			     (uint64_t)l->off_string_length, &first_len,
			     sizeof(first_len)))
			return -EFAULT;
		if (first_len < 0 || first_len > length)
			return -EPROTO;
		take = start < first_len ? first_len - start : 0;
		if (take > count)
			take = count;
		if (take && (err = append_string(l, mem, a, start, take, o)))
			return err;
		return append_string(l, mem, b, start + take - first_len > 0 ?
				     start + take - first_len : 0, count - take, o);
	}
	if (repr == l->sliced_tag) {
		if (field(l, mem, s, l->off_sliced_parent, &a) ||
		    field(l, mem, s, l->off_sliced_offset, &b))
			return -EFAULT;
		if (!is_smi(l, b) || smi_value(l, b) < 0 ||
		    smi_value(l, b) > (1ll << 31))
			return -EPROTO;
		return append_string(l, mem, a, smi_value(l, b) + start, count, o);
	}
	if (repr == l->thin_tag) {
		if (field(l, mem, s, l->off_thin_actual, &a))
			return -EFAULT;
		return append_string(l, mem, a, start, count, o);
	}
	return -ENOTSUP;
}

/* The string s into buf (cap bytes, NUL-terminated): 0, or -errno with
 * buf holding what was read. */
static int read_string(const struct v8_layout *l, struct stacksnap_mem *mem,
		       uint64_t s, char *buf, size_t cap)
{
	struct str_out o = { .buf = buf, .cap = cap };
	int32_t length;
	int err;

	buf[0] = 0;
	if (instance_type(l, mem, s) >= l->first_nonstring_type)
		return -EPROTO;
	if (mem_read(mem, s - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_string_length, &length, sizeof(length)))
		return -EFAULT;
	err = append_string(l, mem, s, 0, length, &o);
	buf[o.len] = 0;
	return err;
}

/* Slot i (after the map) of a ScopeInfo. */
static int scope_slot(const struct v8_layout *l, struct stacksnap_mem *mem,
		      uint64_t si, int64_t i, uint64_t *v)
{
	return field(l, mem, si, l->off_map + 8 * (1 + i), v);
}

/* A function's name as V8 keeps it in its ScopeInfo: the function
 * variable's name (a named function), else the name V8 inferred from the
 * assignment (`Module.prototype._compile = function`). */
static int scope_info_name(const struct v8_layout *l, struct stacksnap_mem *mem,
			   uint64_t si, char *buf, size_t cap)
{
	uint64_t flags_raw, ncl_raw, name;
	int64_t flags, ncl, idx;

	buf[0] = 0;
	if (scope_slot(l, mem, si, 0, &flags_raw) ||
	    scope_slot(l, mem, si, l->scopeinfo_idx_ncontextlocals, &ncl_raw))
		return -EFAULT;
	if (!is_smi(l, flags_raw) || !is_smi(l, ncl_raw))
		return -EPROTO;
	flags = smi_value(l, flags_raw);
	ncl = smi_value(l, ncl_raw);
	if (ncl < 0 || ncl > (1 << 20))
		return -EPROTO;
	idx = l->scopeinfo_idx_first_vars +
		(ncl < l->max_inlined_local_names ? ncl : 1) + ncl +
		(flags >> l->flag_saved_class_var & 1);
	if (flags >> l->flag_function_var & 3) {
		if (scope_slot(l, mem, si, idx, &name))
			return -EFAULT;
		if (is_heap(l, name))
			read_string(l, mem, name, buf, cap);
		idx += 2;
	}
	if (!buf[0] && (flags >> l->flag_inferred_name & 1)) {
		if (scope_slot(l, mem, si, idx, &name))
			return -EFAULT;
		if (is_heap(l, name))
			read_string(l, mem, name, buf, cap);
	}
	return 0;
}

static int function_name(const struct v8_layout *l, struct stacksnap_mem *mem,
			 uint64_t shared, char *buf, size_t cap)
{
	uint64_t v, data;
	int64_t type;

	buf[0] = 0;
	if (field(l, mem, shared, l->off_shared_name_or_scope_info, &v))
		return -EFAULT;
	type = instance_type(l, mem, v);
	if (type >= 0 && type < l->first_nonstring_type)
		return read_string(l, mem, v, buf, cap);
	if (type == l->type_scope_info)
		return scope_info_name(l, mem, v, buf, cap);
	/* No name kept: a lazily compiled function's uncompiled data has
	   the inferred one. */
	if (l->off_uncompiled_inferred_name < 0 ||
	    field(l, mem, shared, l->off_shared_function_data, &data))
		return 0;
	type = instance_type(l, mem, data);
	for (int i = 0; i < 4; i++)
		if (type >= 0 && type == l->type_uncompiled[i] &&
		    !field(l, mem, data, l->off_uncompiled_inferred_name, &v))
			return read_string(l, mem, v, buf, cap);
	return 0;
}

/* Reads an unsigned VLQ integer (base::VLQDecodeUnsigned). */
static bool vlq_unsigned(const uint8_t *b, size_t n, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t c;

	do {
		if (*i >= n || shift > 63)
			return false;
		c = b[(*i)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	*out = v;
	return true;
}

/* Reads a ZigZag VLQ integer of the source position table
 * (base::VLQDecode): the unsigned one, its bit 0 the sign. */
static bool vlq(const uint8_t *b, size_t n, size_t *i, int64_t *out)
{
	uint64_t v;

	if (!vlq_unsigned(b, n, i, &v))
		return false;
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return true;
}

/* A SourcePosition: bit 0 says external (not JavaScript); bits 1-30 the
 * script offset + 1; bits 31-46 the inlining id + 1 (0: the code's own
 * function). */
static int64_t position_offset(int64_t raw)
{
	return ((raw >> 1) & ((1ll << 30) - 1)) - 1;
}

static int64_t position_inlining(int64_t raw)
{
	return (raw >> 31) & 0xffff;
}

/* The raw SourcePosition V8 records for code offset off: that of the last
 * JavaScript entry at or before it (AbstractCode::SourcePosition),
 * entries counting from the function entry's offset, -1. Returns -1 when
 * none. */
static int64_t source_position(const uint8_t *b, size_t n, int64_t off)
{
	int64_t code = -1, raw = 0, best = -1, d;
	size_t i = 0;

	while (i < n) {
		if (!vlq(b, n, &i, &d))
			break;
		/* The sign says statement or expression; either counts. */
		code += d >= 0 ? d : -(d + 1);
		if (!vlq(b, n, &i, &d))
			break;
		raw += d;
		if (code > off)
			break;
		if (!(raw & 1) && raw >= 0)
			best = raw;
	}
	return best;
}

/* The bytes of ByteArray a (a malloc'ed copy of at most max bytes), or
 * NULL. */
static uint8_t *byte_array(const struct v8_layout *l, struct stacksnap_mem *mem,
			   uint64_t a, int64_t max, int64_t *n)
{
	uint64_t len_raw;
	uint8_t *bytes;

	if (instance_type(l, mem, a) != l->type_byte_array ||
	    field(l, mem, a, l->off_fixed_array_length, &len_raw) ||
	    !is_smi(l, len_raw))
		return NULL;
	*n = smi_value(l, len_raw);
	if (*n <= 0 || *n > max || !(bytes = malloc((size_t)*n)))
		return NULL;
	/* ByteArray's bytes follow its length, as FixedArray's words do. */
	if (mem_read(mem, a - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_fixed_array_data, bytes, (size_t)*n)) {
		free(bytes);
		return NULL;
	}
	return bytes;
}

/* The 1-based line of script offset pos from the script's source, for a
 * script whose line ends V8 has not computed (it does when a stack trace
 * or the debugger first needs a line): the line terminators before pos
 * counted as String::CalculateLineEnds finds them (\n, \r not before \n,
 * and U+2028/U+2029 in two-byte sources). The source must be flat
 * (sequential or external, behind at most a few thin or sliced strings):
 * V8 flattens a script's source when it compiles it. 0 when it is not. */
static unsigned count_lines(const struct v8_layout *l, struct stacksnap_mem *mem,
			    uint64_t script, int64_t pos)
{
	uint64_t src, base, v;
	int64_t type = -1, start = 0;
	int32_t length;
	unsigned line = 1;
	bool one, cr = false;

	if (field(l, mem, script, l->off_script_source, &src))
		return 0;
	for (int hops = 0; hops < 4; hops++) {
		int64_t repr;

		type = instance_type(l, mem, src);
		if (type < 0 || type >= l->first_nonstring_type)
			return 0;
		repr = type & l->string_repr_mask;
		if (repr == l->thin_tag) {
			if (field(l, mem, src, l->off_thin_actual, &src))
				return 0;
		} else if (repr == l->sliced_tag) {
			if (field(l, mem, src, l->off_sliced_offset, &v) ||
			    !is_smi(l, v) || smi_value(l, v) < 0 ||
			    smi_value(l, v) > V8_MAX_SOURCE ||
			    field(l, mem, src, l->off_sliced_parent, &src))
				return 0;
			start += smi_value(l, v);
		} else {
			break;
		}
	}
	if (mem_read(mem, src - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_string_length, &length, sizeof(length)) ||
	    string_chars(l, mem, src, type, &base) ||
	    start > V8_MAX_SOURCE || pos > V8_MAX_SOURCE ||
	    start + pos > length)
		return 0;
	one = (type & l->string_enc_mask) == l->one_byte_tag;
	for (int64_t done = 0; done < pos;) {
		uint8_t buf[4096];
		int64_t n = pos - done, unit = one ? 1 : 2;

		if (n > (int64_t)sizeof(buf) / unit)
			n = (int64_t)sizeof(buf) / unit;
		if (mem_read(mem, base + (uint64_t)((start + done) * unit), buf,
			     (size_t)(n * unit)))
			return 0;
		for (int64_t i = 0; i < n; i++) {
			unsigned c = one ? buf[i] : (unsigned)(buf[2 * i] |
							       buf[2 * i + 1] << 8);

			if ((c == '\n' && !cr) || c == '\r' ||
			    (!one && (c == 0x2028 || c == 0x2029)))
				line++;
			cr = c == '\r';
		}
		done += n;
	}
	return line;
}

/* The 1-based line of script offset pos: the first line whose end is at
 * or past it (Script::GetPositionInfo), by a bounded binary search over
 * the script's line ends; counted in the source where V8 has not
 * computed them. 0 when neither is there. */
static unsigned line_of(const struct v8_layout *l, struct stacksnap_mem *mem,
			uint64_t script, int64_t pos)
{
	uint64_t ends, len_raw, v;
	int64_t n, lo = 0, hi;

	if (pos < 0 || field(l, mem, script, l->off_script_line_ends, &ends))
		return 0;
	if (instance_type(l, mem, ends) != l->type_fixed_array)
		return count_lines(l, mem, script, pos);
	if (field(l, mem, ends, l->off_fixed_array_length, &len_raw) ||
	    !is_smi(l, len_raw))
		return 0;
	n = smi_value(l, len_raw);
	if (n <= 0 || n > V8_MAX_LINES)
		return 0;
	hi = n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (field(l, mem, ends, l->off_fixed_array_data + 8 * mid, &v) ||
		    !is_smi(l, v))
			return 0;
		if (smi_value(l, v) >= pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < n ? (unsigned)lo + 1 : 0;
}

/* The line of bytecode offset off in BytecodeArray ba, through its
 * source position table. */
static unsigned bytecode_line(const struct v8_layout *l, struct stacksnap_mem *mem,
			      uint64_t ba, int64_t off, uint64_t script)
{
	uint64_t spt;
	int64_t n, pos;
	uint8_t *bytes;

	if (field(l, mem, ba, l->off_bytecode_source_positions, &spt) ||
	    !(bytes = byte_array(l, mem, spt, V8_MAX_POSITIONS, &n)))
		return 0;
	pos = source_position(bytes, (size_t)n, off);
	free(bytes);
	return script && pos >= 0 ? line_of(l, mem, script, position_offset(pos)) : 0;
}

/* An interpreted frame's line: its bytecode array and offset slots hold
 * the BytecodeArray and a Smi inside it (a baseline frame holds its
 * feedback vector in the offset's slot; an optimized frame neither). */
static unsigned interpreted_line(const struct v8_layout *l,
				 struct stacksnap_mem *mem, uint64_t fp,
				 uint64_t shared, uint64_t script)
{
	uint64_t ba, raw, len_raw, data;
	int64_t off, len;

	if (rd(mem, fp + (uint64_t)l->fp_bytecode_array, &ba) ||
	    rd(mem, fp + (uint64_t)l->fp_bytecode_offset, &raw) ||
	    !is_smi(l, raw) ||
	    instance_type(l, mem, ba) != l->type_bytecode_array ||
	    field(l, mem, ba, l->off_fixed_array_length, &len_raw) ||
	    !is_smi(l, len_raw))
		return 0;
	/* The function's own bytecode, where it keeps it directly. */
	if (!field(l, mem, shared, l->off_shared_function_data, &data) &&
	    instance_type(l, mem, data) == l->type_bytecode_array && data != ba)
		return 0;
	/* The slot holds the offset from the tagged array pointer. */
	off = smi_value(l, raw) - (l->off_bytecode_array_data - l->heap_object_tag);
	len = smi_value(l, len_raw);
	if (off < 0 || off >= len)
		return 0;
	return bytecode_line(l, mem, ba, off, script);
}

/* The bytecode offset of baseline code offset pc_off (the pc looked up:
 * inside the call for a return address), as V8's BytecodeOffsetIterator
 * finds it: the table holds the code's length per step, the prologue's
 * (the function entry, -1) then one per bytecode in order, walked beside
 * the bytecodes (Wide and ExtraWide prefixes, and their DebugBreak
 * forms, 0-3, scale the one after them). -2 when pc_off is past the
 * table or a bytecode is not known. */
static int64_t baseline_offset(const struct v8_layout *l, const uint8_t *bc,
			       int64_t nbc, const uint8_t *tab, size_t ntab,
			       uint64_t pc_off)
{
	uint64_t end, d;
	size_t i = 0;
	int64_t at = 0;

	if (!vlq_unsigned(tab, ntab, &i, &end))
		return -2;
	if (pc_off < end)
		return -1;
	while (at < nbc) {
		unsigned scale = 0, pre = 0;
		uint8_t b = bc[at];

		if (b < 4) {
			scale = b == 0 || b == 2 ? 1 : 2;
			pre = 1;
			if (at + 1 >= nbc)
				return -2;
			b = bc[at + 1];
		}
		if (b >= l->nbytecodes || !l->bytecode_sizes[scale][b] ||
		    !vlq_unsigned(tab, ntab, &i, &d))
			return -2;
		end += d;
		if (pc_off < end)
			return at;
		at += pre + l->bytecode_sizes[scale][b];
	}
	return -2;
}

/* The Code a function runs now: its start, size and kind. */
static int function_code(const struct v8_layout *l, struct stacksnap_mem *mem,
			 uint64_t function, uint64_t *code, uint64_t *start,
			 int32_t *size, int64_t *kind)
{
	uint32_t flags;

	if (l->type_code < 0 || l->code_kind_mask < 0 || l->code_kind_shift < 0 ||
	    l->code_kind_baseline < 0 ||
	    field(l, mem, function, l->off_function_code, code) ||
	    instance_type(l, mem, *code) != l->type_code ||
	    field(l, mem, *code, l->off_code_instruction_start, start) ||
	    mem_read(mem, *code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_flags, &flags, sizeof(flags)) ||
	    mem_read(mem, *code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_instruction_size, size, sizeof(*size)))
		return -EFAULT;
	*kind = (int64_t)(flags >> (l->code_kind_shift & 31)) & l->code_kind_mask;
	return 0;
}

/* A baseline (Sparkplug) frame's line: when the function's current code
 * is the baseline Code holding pc, pc's bytecode offset from the Code's
 * bytecode offset table and the BytecodeArray its frame keeps in the
 * interpreter's slot (Sparkplug lays its frames out so), then that
 * offset's line as for an interpreted frame. */
static unsigned baseline_line(const struct v8_layout *l, struct stacksnap_mem *mem,
			      uint64_t fp, uint64_t function, uint64_t script,
			      uint64_t pc)
{
	uint64_t code, start, table, ba, len_raw;
	uint8_t *tab, *bc;
	int64_t kind, ntab, nbc, off;
	int32_t size;

	if (!pc || !l->nbytecodes || l->off_code_bytecode_offsets < 0 ||
	    function_code(l, mem, function, &code, &start, &size, &kind) ||
	    kind != l->code_kind_baseline || size <= 0 || pc < start ||
	    pc - start >= (uint64_t)size ||
	    rd(mem, fp + (uint64_t)l->fp_bytecode_array, &ba) ||
	    instance_type(l, mem, ba) != l->type_bytecode_array ||
	    field(l, mem, ba, l->off_fixed_array_length, &len_raw) ||
	    !is_smi(l, len_raw))
		return 0;
	nbc = smi_value(l, len_raw);
	if (nbc <= 0 || nbc > V8_MAX_POSITIONS ||
	    field(l, mem, code, l->off_code_bytecode_offsets, &table) ||
	    !(tab = byte_array(l, mem, table, V8_MAX_POSITIONS, &ntab)))
		return 0;
	if (!(bc = malloc((size_t)nbc)) ||
	    mem_read(mem, ba - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_bytecode_array_data, bc, (size_t)nbc)) {
		free(bc);
		free(tab);
		return 0;
	}
	off = baseline_offset(l, bc, nbc, tab, (size_t)ntab, pc - start);
	free(bc);
	free(tab);
	return off >= 0 ? bytecode_line(l, mem, ba, off, script) : 0;
}

static void name_shared(const struct v8_layout *l, struct stacksnap_mem *mem,
			uint64_t shared, struct v8_frame *out, uint64_t *script);

/* An optimized (Maglev, TurboFan) frame's line: the position of pc's
 * offset in the source position table of code (the Code holding pc:
 * checked here, no line otherwise). A position inside a function
 * inlined there is taken back, through the deoptimization data's
 * inlining positions, to the call in the frame's own function; the
 * functions inlined on the way (the deoptimization data's literals) go
 * to inl[], innermost first, each with its line: their count is
 * returned (0 when any of them does not read: the frame's own line
 * stays). *own_line: the line in the frame's own function, or 0. */
static size_t compiled_positions(const struct v8_layout *l,
				 struct stacksnap_mem *mem, uint64_t code,
				 uint64_t script, uint64_t pc,
				 struct v8_frame *inl, size_t max,
				 unsigned *own_line)
{
	uint64_t start, spt, deopt, positions, len_raw, literals = 0;
	uint32_t flags;
	int32_t size;
	int64_t kind, n, raw, nlit = 0;
	uint8_t *bytes;
	size_t ninl = 0;
	bool complete = true;

	*own_line = 0;
	if (!pc || l->type_code < 0 || l->code_kind_mask < 0 ||
	    l->code_kind_shift < 0 || l->code_kind_baseline < 0 ||
	    l->off_code_source_positions < 0 || l->off_code_deopt_data < 0 ||
	    l->deopt_inlining_positions_index < 0 ||
	    instance_type(l, mem, code) != l->type_code ||
	    field(l, mem, code, l->off_code_instruction_start, &start) ||
	    mem_read(mem, code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_flags, &flags, sizeof(flags)) ||
	    mem_read(mem, code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_instruction_size, &size, sizeof(size)))
		return 0;
	kind = (int64_t)(flags >> (l->code_kind_shift & 31)) & l->code_kind_mask;
	/* Optimized kinds follow baseline (interpreted, baseline, maglev,
	   turbofan); a baseline Code's table maps bytecode offsets. */
	if (kind <= l->code_kind_baseline || size <= 0 || pc < start ||
	    pc - start >= (uint64_t)size ||
	    field(l, mem, code, l->off_code_source_positions, &spt) ||
	    !(bytes = byte_array(l, mem, spt, V8_MAX_POSITIONS, &n)))
		return 0;
	raw = source_position(bytes, (size_t)n, (int64_t)(pc - start));
	free(bytes);
	if (raw < 0)
		return 0;
	if (position_inlining(raw)) {
		uint64_t dlen;

		if (field(l, mem, code, l->off_code_deopt_data, &deopt) ||
		    instance_type(l, mem, deopt) != l->type_fixed_array ||
		    field(l, mem, deopt, l->off_fixed_array_length, &len_raw) ||
		    !is_smi(l, len_raw) ||
		    smi_value(l, len_raw) <= l->deopt_inlining_positions_index ||
		    field(l, mem, deopt, l->off_fixed_array_data +
			  8 * l->deopt_inlining_positions_index, &positions) ||
		    !(bytes = byte_array(l, mem, positions, V8_MAX_POSITIONS, &n)))
			return 0;
		dlen = (uint64_t)smi_value(l, len_raw);
		/* The inlined functions, by the literal index each
		   InliningPosition names (a weak array: weak references
		   carry bit 1). */
		if (l->deopt_literal_array_index < 0 ||
		    (uint64_t)l->deopt_literal_array_index >= dlen ||
		    field(l, mem, deopt, l->off_fixed_array_data +
			  8 * l->deopt_literal_array_index, &literals) ||
		    field(l, mem, literals, l->off_fixed_array_length, &len_raw) ||
		    !is_smi(l, len_raw))
			complete = false;
		else
			nlit = smi_value(l, len_raw);
		/* Each inlined function's call, until the frame's own;
		   bounded by the entries (a chain cannot be longer). */
		for (int64_t hops = 0; position_inlining(raw); hops++) {
			int64_t at = (position_inlining(raw) - 1) * l->inlining_position_size;
			int32_t fid;
			uint64_t shared, iscript;

			if (hops > n / l->inlining_position_size || at + 12 > n) {
				raw = -1;
				break;
			}
			memcpy(&fid, bytes + at + 8, sizeof(fid));
			if (complete && ninl < max && fid >= 0 && fid < nlit &&
			    !field(l, mem, literals, l->off_fixed_array_data + 8 * (int64_t)fid,
				   &shared) &&
			    instance_type(l, mem, shared & ~(uint64_t)2) == l->type_shared) {
				name_shared(l, mem, shared & ~(uint64_t)2, &inl[ninl], &iscript);
				inl[ninl].line = iscript ?
					line_of(l, mem, iscript, position_offset(raw)) : 0;
				inl[ninl].inlined = true;
				ninl++;
			} else {
				complete = false;
			}
			memcpy(&raw, bytes + at, 8);
			if (raw < 0 || (raw & 1)) {
				raw = -1;
				break;
			}
		}
		free(bytes);
		if (raw < 0)
			return 0;
	}
	*own_line = script ? line_of(l, mem, script, position_offset(raw)) : 0;
	return complete ? ninl : 0;
}

/* The function and script names of shared into out; *script the Script
 * (0 when the function has none with a name). */
static void name_shared(const struct v8_layout *l, struct stacksnap_mem *mem,
			uint64_t shared, struct v8_frame *out, uint64_t *script)
{
	uint64_t name;

	memset(out, 0, sizeof(*out));
	function_name(l, mem, shared, out->function, sizeof(out->function));
	if (!out->function[0])
		strcpy(out->function, "<anonymous>");
	if (!field(l, mem, shared, l->off_shared_script_or_debug_info, script) &&
	    instance_type(l, mem, *script) == l->type_script &&
	    !field(l, mem, *script, l->off_script_name, &name) &&
	    is_heap(l, name))
		read_string(l, mem, name, out->file, sizeof(out->file));
	else
		*script = 0;
}

/* Bytes before a pc searched for the start of its InstructionStream
 * (an optimized function's code is far smaller), and read at a time (a
 * page). */
#define V8_MAX_CODE_SCAN (256u << 10)
#define V8_SCAN_CHUNK 4096u

/* Whether code (a tagged Code) is the Code whose instructions start at
 * start0 and hold pc; its kind into *kind. */
static bool code_holds(const struct v8_layout *l, struct stacksnap_mem *mem,
		       uint64_t code, uint64_t start0, uint64_t pc, int64_t *kind)
{
	uint64_t start;
	uint32_t flags;
	int32_t size;

	if (instance_type(l, mem, code) != l->type_code ||
	    field(l, mem, code, l->off_code_instruction_start, &start) ||
	    mem_read(mem, code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_flags, &flags, sizeof(flags)) ||
	    mem_read(mem, code - (uint64_t)l->heap_object_tag +
		     (uint64_t)l->off_code_instruction_size, &size, sizeof(size)) ||
	    (start0 && start != start0) || size <= 0 || pc < start ||
	    pc - start >= (uint64_t)size)
		return false;
	*kind = (int64_t)(flags >> (l->code_kind_shift & 31)) & l->code_kind_mask;
	return true;
}

/* The Code whose instructions hold pc, when the function's own code does
 * not (a loop its frame entered interpreted, replaced on the stack by
 * optimized code: the function's code is still the interpreter's): the
 * InstructionStream before pc, found by its map (a tagged word whose
 * map's instance type is INSTRUCTION_STREAM_TYPE, at an 8-byte boundary
 * at most V8_MAX_CODE_SCAN bytes back), whose Code (the word after the
 * map) must start its instructions right after that header and hold pc.
 * Returns 0 or -ENOENT. */
static int code_holding(const struct v8_layout *l, struct stacksnap_mem *mem,
			uint64_t pc, uint64_t *code, int64_t *kind)
{
	uint64_t buf[V8_SCAN_CHUNK / 8];
	uint64_t top = pc & ~7ull, low;

	if (l->type_istream < 0 || l->off_istream_body <= 0 ||
	    l->off_istream_body > 4096 || l->type_code < 0 ||
	    l->code_kind_mask < 0 || l->code_kind_shift < 0)
		return -ENOENT;
	low = top > V8_MAX_CODE_SCAN ? top - V8_MAX_CODE_SCAN : 0;
	while (top > low) {
		/* Page by page: a page that does not read ends the search
		   (the code space before it is not mapped). */
		uint64_t at = (top - 1) & ~(uint64_t)(V8_SCAN_CHUNK - 1);
		size_t nw;

		if (at < low)
			at = low;
		nw = (size_t)(top - at) / 8;
		if (mem_read(mem, at, buf, nw * 8))
			return -ENOENT;
		for (size_t i = nw; i-- > 0;) {
			uint64_t w = buf[i], base = at + 8 * i, c;

			if ((w & (uint64_t)l->heap_object_tag_mask) !=
			    (uint64_t)l->heap_object_tag ||
			    instance_type(l, mem, base + (uint64_t)l->heap_object_tag) !=
			    l->type_istream)
				continue;
			if (!rd(mem, base + (uint64_t)l->off_istream_code, &c) &&
			    code_holds(l, mem, c, base + (uint64_t)l->off_istream_body,
				       pc, kind)) {
				*code = c;
				return 0;
			}
			/* Not a stream holding pc (a word of code that looked
			   like one): on. */
		}
		top = at;
	}
	return -ENOENT;
}

/* The Code frame's pc is in: the function's current code when it holds
 * pc, else the one found around pc. Returns 0 or -ENOENT. */
static int frame_code(const struct v8_layout *l, struct stacksnap_mem *mem,
		      uint64_t function, uint64_t pc, uint64_t *code, int64_t *kind)
{
	if (!pc || l->type_code < 0 || l->code_kind_mask < 0 ||
	    l->code_kind_shift < 0)
		return -ENOENT;
	if (!field(l, mem, function, l->off_function_code, code) &&
	    code_holds(l, mem, *code, 0, pc, kind))
		return 0;
	return code_holding(l, mem, pc, code, kind);
}

int v8_frame__name(const struct v8_layout *l, struct stacksnap_mem *mem,
		   uint64_t fp, uint64_t pc, struct v8_frame *out, size_t max)
{
	uint64_t context, function, shared, script = 0, code;
	struct v8_frame own;
	int64_t type, kind;
	size_t n;

	if (!max)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (fp < 4096 || fp > UINT64_MAX - 4096)
		return -ENOENT;
	if (rd(mem, fp + (uint64_t)l->fp_context, &context) ||
	    rd(mem, fp + (uint64_t)l->fp_function, &function))
		return -EFAULT;
	/* A typed frame (stub, exit, entry) has a Smi marker where a
	   JavaScript frame has its context. */
	type = instance_type(l, mem, context);
	if (type < l->first_context_type || type > l->last_context_type)
		return -ENOENT;
	/* JSFunction and the function types after it (class constructors,
	   the promise and array constructors...). */
	type = instance_type(l, mem, function);
	if (type < l->type_js_function || type >= l->type_js_function + 32)
		return -ENOENT;
	if (field(l, mem, function, l->off_function_shared, &shared))
		return -EFAULT;
	if (instance_type(l, mem, shared) != l->type_shared)
		return -ENOENT;
	name_shared(l, mem, shared, &own, &script);
	n = 0;
	/* Optimized code holding pc names the frame (and what it inlined
	   there) first: a frame replaced on the stack (OSR) keeps its
	   interpreter slots, the offset of the loop it left. */
	if (frame_code(l, mem, function, pc, &code, &kind) == 0 &&
	    kind > l->code_kind_baseline && l->code_kind_baseline >= 0) {
		n = compiled_positions(l, mem, code, script, pc, out, max - 1,
				       &own.line);
		if (own.line) {
			out[n] = own;
			return (int)(n + 1);
		}
		n = 0;
	}
	own.line = interpreted_line(l, mem, fp, shared, script);
	own.interpreted = own.line != 0;
	if (!own.line)
		own.line = baseline_line(l, mem, fp, function, script, pc);
	out[n] = own;
	return (int)(n + 1);
}
