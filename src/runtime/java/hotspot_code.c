/* hotspot_code.c - names Java code from HotSpot's code cache and method
 * metadata, read through the offsets of its vmStructs tables. */
#define _GNU_SOURCE
#include "runtime/java/hotspot_code.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

/* Bounds against corrupt or changing structures. */
#define HOTSPOT_MAX_HEAPS 16
#define HOTSPOT_MAX_SEGMENT_WALK (1u << 20)
#define HOTSPOT_MAX_SYMBOL 1024

/* Notes the first entry the tables lack (said in the warning). */
static void note_missing(struct hotspot_code *hc, const char *type,
			 const char *name)
{
	log_info(hc->log, "HotSpot: vmStructs has no %s%s%s", type,
		 name ? "::" : "", name ? name : "");
	if (!hc->missing[0])
		snprintf(hc->missing, sizeof(hc->missing), "%s%s%s", type,
			 name ? "::" : "", name ? name : "");
}

static int field(const struct hotspot_structs *hs, const char *type,
		 const char *name, uint64_t *out, struct hotspot_code *hc)
{
	const struct hotspot_field *f = hotspot_structs__field(hs, type, name);

	if (!f) {
		note_missing(hc, type, name);
		return -EPROTO;
	}
	*out = f->is_static ? f->address : f->offset;
	return 0;
}

static int type_size(const struct hotspot_structs *hs, const char *type,
		     uint64_t *out, struct hotspot_code *hc)
{
	const struct hotspot_type *t = hotspot_structs__type(hs, type);

	if (!t) {
		note_missing(hc, type, NULL);
		return -EPROTO;
	}
	*out = t->size;
	return 0;
}

/* The bytes of a field by its vmStructs type string: 2 or 4 for the
 * integer types the tables give the fields read here, 0 otherwise. */
static unsigned type_width(const char *t)
{
	static const char *const two[] = { "u2", "int16_t", "uint16_t", "jshort",
					    "short", "unsigned short" };
	static const char *const four[] = { "u4", "int", "int32_t", "uint32_t",
					     "jint", "juint", "uint" };

	for (size_t i = 0; t && i < sizeof(two) / sizeof(two[0]); i++)
		if (!strcmp(t, two[i]))
			return 2;
	for (size_t i = 0; t && i < sizeof(four) / sizeof(four[0]); i++)
		if (!strcmp(t, four[i]))
			return 4;
	return 0;
}

int hotspot_code__init(struct hotspot_code *hc, const struct hotspot_structs *hs,
		       struct stacksnap_mem *mem, const struct log_sink *log)
{
	int64_t last_sp = 0;
	uint64_t header = 0, used = 0;
	int err = 0;

	memset(hc, 0, sizeof(*hc));
	hc->mem = mem;
	hc->log = log;
	err |= field(hs, "CodeCache", "_heaps", &hc->heaps, hc);
	err |= field(hs, "GrowableArrayBase", "_len", &hc->ga_len, hc);
	err |= field(hs, "GrowableArray<int>", "_data", &hc->ga_data, hc);
	err |= field(hs, "CodeHeap", "_memory", &hc->heap_memory, hc);
	err |= field(hs, "CodeHeap", "_segmap", &hc->heap_segmap, hc);
	err |= field(hs, "CodeHeap", "_log2_segment_size",
		     &hc->heap_log2_segment, hc);
	err |= field(hs, "VirtualSpace", "_low", &hc->vs_low, hc);
	err |= field(hs, "VirtualSpace", "_high", &hc->vs_high, hc);
	err |= type_size(hs, "HeapBlock", &hc->block_size, hc);
	err |= field(hs, "HeapBlock", "_header", &header, hc);
	err |= field(hs, "HeapBlock::Header", "_used", &used, hc);
	err |= field(hs, "CodeBlob", "_name", &hc->blob_name, hc);
	err |= field(hs, "CodeBlob", "_size", &hc->blob_size, hc);
	/* JDK 17-22 have CompiledMethod (nmethod's base), 23+ not. */
	hc->offsets23 = !hotspot_structs__type(hs, "CompiledMethod");
	{
		const struct hotspot_field *mv = hotspot_structs__field(
			hs, "Abstract_VM_Version", "_vm_major_version");
		int32_t major = 0;

		if (!mv || !mv->is_static ||
		    mem_read(mem, mv->address, &major, 4) || major < 1 || major > 1000) {
			note_missing(hc, "Abstract_VM_Version", "_vm_major_version");
			err = -EPROTO;
		}
		hc->vm_major = major;
		hc->u5_excludes_zero = major >= 20;
	}
	err |= field(hs, hc->offsets23 ? "nmethod" : "CompiledMethod", "_method",
		     &hc->cm_method, hc);
	{
		const struct hotspot_field *fs =
			hotspot_structs__field(hs, "CodeBlob", "_frame_size");

		hc->blob_frame_size = fs && !fs->is_static ? fs->offset : 0;
		fs = hotspot_structs__field(hs, "CodeBlob", "_frame_complete_offset");
		hc->blob_frame_complete = fs && !fs->is_static ? fs->offset : 0;
		hc->blob_frame_complete_width = fs ? type_width(fs->type_string) : 0;
		if (hc->blob_frame_complete_width != 2 &&
		    hc->blob_frame_complete_width != 4)
			hc->blob_frame_complete = 0;
	}
	{
		/* Optional: without them compiled frames name one method
		   (not said as the missing entry). */
		int serr = 0;
		char missing[sizeof(hc->missing)];

		memcpy(missing, hc->missing, sizeof(missing));

		if (hc->offsets23) {
			serr |= field(hs, "CodeBlob", "_code_offset",
				      &hc->blob_code_offset, hc);
			serr |= field(hs, "CodeBlob", "_mutable_data",
				      &hc->blob_mutable_data, hc);
			serr |= field(hs, "CodeBlob", "_mutable_data_size",
				      &hc->blob_mutable_size, hc);
			serr |= field(hs, "CodeBlob", "_relocation_size",
				      &hc->blob_relocation_size, hc);
			serr |= field(hs, "nmethod", "_immutable_data",
				      &hc->nm_immutable_data, hc);
			serr |= field(hs, "nmethod", "_immutable_data_size",
				      &hc->nm_immutable_size, hc);
			serr |= field(hs, "nmethod", "_scopes_data_offset",
				      &hc->nm_scopes_data, hc);
		} else {
			serr |= field(hs, "CodeBlob", "_code_begin",
				      &hc->blob_code_begin, hc);
			serr |= field(hs, "CompiledMethod", "_scopes_data_begin",
				      &hc->nm_scopes_data, hc);
			serr |= field(hs, "nmethod", "_dependencies_offset",
				      &hc->nm_dependencies, hc);
			serr |= field(hs, "nmethod", "_metadata_offset",
				      &hc->nm_metadata, hc);
		}
		serr |= field(hs, "nmethod", "_scopes_pcs_offset", &hc->nm_scopes_pcs, hc);
		serr |= type_size(hs, "PcDesc", &hc->pcdesc_size, hc);
		serr |= field(hs, "PcDesc", "_pc_offset", &hc->pcdesc_pc, hc);
		serr |= field(hs, "PcDesc", "_scope_decode_offset", &hc->pcdesc_scope, hc);
		hc->scopes_ok = !serr && hc->pcdesc_size >= 8 && hc->pcdesc_size <= 64;
		memcpy(hc->missing, missing, sizeof(missing));
	}
	{
		/* JDK 17-22: pointers; 23+: ints from the blob's start. */
		const char *dt = hc->offsets23 ? "nmethod" : "CompiledMethod";
		const struct hotspot_field *d = hotspot_structs__field(hs, dt,
			hc->offsets23 ? "_deopt_handler_offset" : "_deopt_handler_begin");
		const struct hotspot_field *dm = hotspot_structs__field(hs, dt,
			hc->offsets23 ? "_deopt_mh_handler_offset"
				      : "_deopt_mh_handler_begin");
		const struct hotspot_field *o =
			hotspot_structs__field(hs, "nmethod", "_orig_pc_offset");

		hc->deopt_ok = d && !d->is_static && dm && !dm->is_static && o &&
			       !o->is_static;
		if (hc->deopt_ok) {
			hc->cm_deopt_handler = d->offset;
			hc->cm_deopt_mh_handler = dm->offset;
			hc->nm_orig_pc_offset = o->offset;
		}
	}
	{
		const struct hotspot_field *af =
			hotspot_structs__field(hs, "Method", "_access_flags");
		const struct hotspot_field *ms =
			hotspot_structs__field(hs, "InstanceKlass", "_methods");
		const struct hotspot_field *ad =
			hotspot_structs__field(hs, "Array<Klass*>", "_data");

		hc->check_ok = af && !af->is_static && ms && !ms->is_static && ad &&
			       !ad->is_static &&
			       hotspot_structs__constant(hs, "JVM_ACC_IS_OLD",
							 &hc->acc_is_old) &&
			       hotspot_structs__constant(hs, "JVM_ACC_IS_OBSOLETE",
							 &hc->acc_is_obsolete);
		const struct hotspot_field *head =
			hotspot_structs__field(hs, "ClassLoaderDataGraph", "_head");
		const struct hotspot_field *next =
			hotspot_structs__field(hs, "ClassLoaderData", "_next");
		const struct hotspot_field *kcld =
			hotspot_structs__field(hs, "Klass", "_class_loader_data");

		if (head && head->is_static && next && !next->is_static && kcld &&
		    !kcld->is_static) {
			hc->cldg_head = head->address;
			hc->cld_next = next->offset;
			hc->klass_cld = kcld->offset;
		}
		if (hc->check_ok) {
			hc->method_access_flags = af->offset;
			hc->ik_methods = ms->offset;
			/* Array<Method*>'s layout is Array<Klass*>'s (the
			   tables export only the latter's _data). */
			hc->array_ptr_data = ad->offset;
		}
	}
	err |= field(hs, "Method", "_constMethod", &hc->method_const, hc);
	err |= field(hs, "ConstMethod", "_constants", &hc->cm_constants, hc);
	err |= field(hs, "ConstMethod", "_name_index", &hc->cm_name_index, hc);
	err |= field(hs, "ConstMethod", "_signature_index",
		     &hc->cm_signature_index, hc);
	err |= type_size(hs, "ConstMethod", &hc->cm_size, hc);
	err |= field(hs, "ConstMethod", "_code_size", &hc->cm_code_size, hc);
	{
		/* JDK 17: u2 _flags, ConstMethod::_has_linenumber_table;
		   21+: u4 _flags._flags (ConstMethodFlags), its bit
		   ConstMethodFlags::_misc_has_linenumber_table. */
		const struct hotspot_field *cf =
			hotspot_structs__field(hs, "ConstMethod", "_flags");

		if (!cf)
			cf = hotspot_structs__field(hs, "ConstMethod", "_flags._flags");
		hc->cm_flags_width = cf && !cf->is_static ?
			type_width(cf->type_string) : 0;
		if (hc->cm_flags_width != 2 && hc->cm_flags_width != 4) {
			note_missing(hc, "ConstMethod", "_flags (2 or 4 bytes)");
			err = -EPROTO;
		} else {
			hc->cm_flags = cf->offset;
		}
	}
	err |= field(hs, "ConstantPool", "_source_file_name_index",
		     &hc->cp_source_file, hc);
	if (!hotspot_structs__constant(hs, "ConstMethod::_has_linenumber_table",
				       &hc->cm_has_lines) &&
	    !hotspot_structs__constant(hs,
				       "ConstMethodFlags::_misc_has_linenumber_table",
				       &hc->cm_has_lines)) {
		note_missing(hc, "ConstMethodFlags", "_misc_has_linenumber_table");
		err = -EPROTO;
	}
	err |= type_size(hs, "ConstantPool", &hc->cp_size, hc);
	err |= field(hs, "ConstantPool", "_pool_holder", &hc->cp_holder, hc);
	err |= field(hs, "ConstantPool", "_length", &hc->cp_length, hc);
	err |= field(hs, "Klass", "_name", &hc->klass_name, hc);
	err |= field(hs, "Symbol", "_length", &hc->sym_length, hc);
	err |= field(hs, "Symbol", "_body", &hc->sym_body, hc);
	/* x86's interpreter frame: sender sp, last sp, then the Method*
	 * (frame_x86.hpp), below rbp; the table gives the first two. */
	if (!hotspot_structs__constant(hs, "frame::interpreter_frame_last_sp_offset",
				       &last_sp)) {
		note_missing(hc, "frame", "interpreter_frame_last_sp_offset");
		err = -EPROTO;
	}
	hc->interp_method_slot = last_sp - 1;
	/* Above last sp: the sender's sp (its unextended sp). */
	hc->interp_sender_sp_slot = last_sp + 1;
	/* Then mirror, mdp, cache, locals, bcp. */
	hc->interp_bcp_slot = last_sp - 6;
	hc->block_used = header + used;
	return err ? -EPROTO : 0;
}

static int rd64(struct hotspot_code *hc, uint64_t addr, uint64_t *v)
{
	return mem_read(hc->mem, addr, v, 8) ? -EFAULT : 0;
}

/* The start of the allocated block holding p in one CodeHeap, as
 * CodeHeap::find_start walks the segment map: each segment's byte says
 * how many segments back to step (0: the block's first, 0xff: unused). */
static int heap_find(struct hotspot_code *hc, uint64_t heap, uint64_t pc,
		     uint64_t *blob)
{
	uint64_t low, high, seg_low, idx;
	int32_t log2;
	uint8_t used;

	if (rd64(hc, heap + hc->heap_memory + hc->vs_low, &low) ||
	    rd64(hc, heap + hc->heap_memory + hc->vs_high, &high) ||
	    rd64(hc, heap + hc->heap_segmap + hc->vs_low, &seg_low) ||
	    mem_read(hc->mem, heap + hc->heap_log2_segment, &log2, 4))
		return -EFAULT;
	if (pc < low || pc >= high)
		return -ENOENT;
	if (log2 < 4 || log2 > 16)
		return -EPROTO;
	idx = (pc - low) >> log2;
	for (unsigned steps = 0;; steps++) {
		uint8_t b;

		if (steps > HOTSPOT_MAX_SEGMENT_WALK)
			return -EPROTO;
		if (mem_read(hc->mem, seg_low + idx, &b, 1))
			return -EFAULT;
		if (b == 0xff)
			return -ENOENT;
		if (!b)
			break;
		if (b > idx)
			return -EPROTO;
		idx -= b;
	}
	/* The HeapBlock header, then the blob. */
	if (mem_read(hc->mem, low + (idx << log2) + hc->block_used, &used, 1))
		return -EFAULT;
	if (!used)
		return -ENOENT;
	*blob = low + (idx << log2) + hc->block_size;
	return 0;
}

/* Where the code of the blob at start begins: a pointer (JDK 17-22)
 * or an offset from the blob (23+). */
static int code_begin(struct hotspot_code *hc, uint64_t start, uint64_t *begin)
{
	int32_t off;

	if (!hc->offsets23)
		return rd64(hc, start + hc->blob_code_begin, begin);
	if (mem_read(hc->mem, start + hc->blob_code_offset, &off, 4))
		return -EFAULT;
	if (off <= 0)
		return -EPROTO;
	*begin = start + (uint64_t)off;
	return 0;
}

static int read_cstr(struct hotspot_code *hc, uint64_t addr, char *buf,
		     size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (mem_read(hc->mem, addr + i, buf + i, 1))
			return -EFAULT;
		if (!buf[i])
			return 0;
	}
	buf[len - 1] = 0;
	return 0;
}

int hotspot_code__blob(struct hotspot_code *hc, uint64_t pc,
		       struct hotspot_blob *out)
{
	uint64_t heaps, data, name;
	int32_t n, size;
	int err = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (rd64(hc, hc->heaps, &heaps) || !heaps ||
	    mem_read(hc->mem, heaps + hc->ga_len, &n, 4) ||
	    rd64(hc, heaps + hc->ga_data, &data))
		return -EFAULT;
	if (n < 0 || n > HOTSPOT_MAX_HEAPS)
		return -EPROTO;
	for (int i = 0; i < n && err == -ENOENT; i++) {
		uint64_t heap;

		if (rd64(hc, data + 8 * (uint64_t)i, &heap))
			return -EFAULT;
		err = heap_find(hc, heap, pc, &out->start);
	}
	if (err)
		return err;
	if (mem_read(hc->mem, out->start + hc->blob_size, &size, 4) ||
	    rd64(hc, out->start + hc->blob_name, &name) ||
	    read_cstr(hc, name, out->name, sizeof(out->name)))
		return -EFAULT;
	if (size <= 0 || pc - out->start >= (uint64_t)size)
		return -ENOENT; /* in the heap block's padding */
	out->size = (uint64_t)size;
	if (hc->blob_frame_size &&
	    mem_read(hc->mem, out->start + hc->blob_frame_size, &out->frame_size, 4))
		return -EFAULT;
	/* Where the frame is built (CodeBlob::is_frame_complete_at): a
	   running thread's pc past it has its frame's full size. */
	if (hc->blob_frame_complete && hc->scopes_ok) {
		int32_t off = 0;
		int16_t off16 = 0;
		uint64_t begin;
		bool two = hc->blob_frame_complete_width == 2;

		if (!(two ? mem_read(hc->mem, out->start + hc->blob_frame_complete,
				     &off16, 2)
			  : mem_read(hc->mem, out->start + hc->blob_frame_complete,
				     &off, 4)) &&
		    !code_begin(hc, out->start, &begin) && (off = two ? off16 : off) > 0 &&
		    begin > out->start && begin - out->start < (uint64_t)size)
			out->frame_complete = begin + (uint64_t)off;
	}
	out->is_interpreter = !strcmp(out->name, "Interpreter");
	/* Compiled methods are "nmethod", native methods' compiled
	 * wrappers "native nmethod" (both nmethods, with a Method*). */
	if ((!strcmp(out->name, "nmethod") ||
	     !strcmp(out->name, "native nmethod")) &&
	    rd64(hc, out->start + hc->cm_method, &out->method))
		return -EFAULT;
	out->orig_pc_offset = -1;
	if (hc->deopt_ok && hc->offsets23 && !strcmp(out->name, "nmethod")) {
		int32_t d, dm;

		if (mem_read(hc->mem, out->start + hc->cm_deopt_handler, &d, 4) ||
		    mem_read(hc->mem, out->start + hc->cm_deopt_mh_handler, &dm, 4) ||
		    mem_read(hc->mem, out->start + hc->nm_orig_pc_offset,
			     &out->orig_pc_offset, 4))
			return -EFAULT;
		out->deopt_handler = d > 0 && d < size ? out->start + (uint64_t)d : 0;
		out->deopt_mh_handler = dm > 0 && dm < size ? out->start + (uint64_t)dm : 0;
	} else if (hc->deopt_ok && !strcmp(out->name, "nmethod") &&
	    (rd64(hc, out->start + hc->cm_deopt_handler, &out->deopt_handler) ||
	     rd64(hc, out->start + hc->cm_deopt_mh_handler, &out->deopt_mh_handler) ||
	     mem_read(hc->mem, out->start + hc->nm_orig_pc_offset,
		      &out->orig_pc_offset, 4)))
		return -EFAULT;
	return 0;
}

int hotspot_code__heap_ranges(struct hotspot_code *hc, uint64_t (*ranges)[2],
			      size_t max)
{
	uint64_t heaps, data;
	int32_t n;
	size_t k = 0;

	if (rd64(hc, hc->heaps, &heaps) || !heaps ||
	    mem_read(hc->mem, heaps + hc->ga_len, &n, 4) ||
	    rd64(hc, heaps + hc->ga_data, &data))
		return -EFAULT;
	if (n < 0 || n > HOTSPOT_MAX_HEAPS)
		return -EPROTO;
	for (int i = 0; i < n && k < max; i++) {
		uint64_t heap, low, high;

		if (rd64(hc, data + 8 * (uint64_t)i, &heap) ||
		    rd64(hc, heap + hc->heap_memory + hc->vs_low, &low) ||
		    rd64(hc, heap + hc->heap_memory + hc->vs_high, &high))
			return -EFAULT;
		if (low < high) {
			ranges[k][0] = low;
			ranges[k][1] = high;
			k++;
		}
	}
	return (int)k;
}

int hotspot_code__interpreter_method(struct hotspot_code *hc,
				     struct stacksnap_mem *slots, uint64_t fp,
				     uint64_t *method)
{
	return mem_read(slots ? slots : hc->mem,
			fp + (uint64_t)(hc->interp_method_slot * 8), method, 8)
		? -EFAULT : 0;
}

int hotspot_code__interpreter_bci(struct hotspot_code *hc,
				  struct stacksnap_mem *slots, uint64_t fp,
				  uint64_t method, int *bci)
{
	uint64_t bcp, cm;
	uint16_t code_size;

	*bci = -1;
	if (mem_read(slots ? slots : hc->mem,
		     fp + (uint64_t)(hc->interp_bcp_slot * 8), &bcp, 8) ||
	    rd64(hc, method + hc->method_const, &cm) ||
	    mem_read(hc->mem, cm + hc->cm_code_size, &code_size, 2))
		return -EFAULT;
	/* The bytecodes follow the ConstMethod. */
	if (bcp >= cm + hc->cm_size && bcp < cm + hc->cm_size + code_size)
		*bci = (int)(bcp - (cm + hc->cm_size));
	return 0;
}

/* HotSpot's UNSIGNED5 integers (CompressedReadStream::read_int): bytes
 * below 192 end a number, each later byte weighs 64 times more, at most
 * five bytes. */
static int read_unsigned5(struct hotspot_code *hc, uint64_t *at, uint32_t *v)
{
	uint32_t sum = 0;
	unsigned shift = 0;

	for (int i = 0; i < 5; i++) {
		uint8_t b;

		if (mem_read(hc->mem, (*at)++, &b, 1))
			return -EFAULT;
		if (hc->u5_excludes_zero) {
			if (!b)
				return -EPROTO;
			b--; /* then L = 191: b < 191 ends */
		}
		sum += (uint32_t)b << shift;
		if (b < 192 - hc->u5_excludes_zero || i == 4) {
			*v = sum;
			return 0;
		}
		shift += 6;
	}
	return -EPROTO;
}

int hotspot_code__unsigned5(struct hotspot_code *hc, uint64_t *at, uint32_t *v)
{
	return read_unsigned5(hc, at, v);
}

static int read_signed5(struct hotspot_code *hc, uint64_t *at, int32_t *v)
{
	uint32_t u = 0;
	int err = read_unsigned5(hc, at, &u);

	*v = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
	return err;
}

/* A Symbol's bytes into buf (NUL-terminated); '/' as '.' when dots. */
static int read_symbol(struct hotspot_code *hc, uint64_t sym, char *buf,
		       size_t len, bool dots)
{
	uint16_t n;

	if (!sym || mem_read(hc->mem, sym + hc->sym_length, &n, 2))
		return -EFAULT;
	if (n >= len || n > HOTSPOT_MAX_SYMBOL)
		return -EPROTO;
	if (mem_read(hc->mem, sym + hc->sym_body, buf, n))
		return -EFAULT;
	buf[n] = 0;
	if (memchr(buf, 0, n))
		return -EPROTO;
	for (size_t i = 0; dots && i < n; i++)
		if (buf[i] == '/')
			buf[i] = '.';
	return 0;
}

static int read_symbol(struct hotspot_code *hc, uint64_t sym, char *buf,
		       size_t len, bool dots);

int hotspot_code__symbol(struct hotspot_code *hc, uint64_t sym, char *buf,
			 size_t len)
{
	return read_symbol(hc, sym, buf, len, false);
}

int hotspot_code__line(struct hotspot_code *hc, uint64_t method, int bci,
		       int *line, char *file, size_t file_len)
{
	uint64_t cm, cp, at, sym;
	uint16_t code_size, file_idx;
	uint32_t flags = 0;
	int32_t cur_bci = 0, cur_line = 0, best_bci = 0, best_line = -1;

	*line = 0;
	if (file_len)
		file[0] = 0;
	if (rd64(hc, method + hc->method_const, &cm) ||
	    rd64(hc, cm + hc->cm_constants, &cp) ||
	    mem_read(hc->mem, cm + hc->cm_code_size, &code_size, 2) ||
	    mem_read(hc->mem, cm + hc->cm_flags, &flags,
		     hc->cm_flags_width == 4 ? 4 : 2))
		return -EFAULT;
	if (!mem_read(hc->mem, cp + hc->cp_source_file, &file_idx, 2) &&
	    file_idx && !rd64(hc, cp + hc->cp_size + 8 * (uint64_t)file_idx, &sym))
		read_symbol(hc, sym, file, file_len, false);
	if (!(flags & hc->cm_has_lines) || bci < 0 || bci >= code_size)
		return -ENOENT;
	/* The compressed table follows the bytecodes: (bci, line) deltas as
	 * one byte (5 + 3 bits), or 0xff and two signed UNSIGNED5 numbers;
	 * a 0 ends it (Method::line_number_from_bci). */
	at = cm + hc->cm_size + code_size;
	for (unsigned pairs = 0; pairs < 65536; pairs++) {
		uint8_t b;

		if (mem_read(hc->mem, at++, &b, 1))
			return -EFAULT;
		if (!b)
			break;
		if (b == 0xff) {
			int32_t db, dl;

			if (read_signed5(hc, &at, &db) || read_signed5(hc, &at, &dl))
				return -EFAULT;
			/* A corrupt table may run past int32: wrap (no signed
			   overflow); the bci then matches nothing. */
			cur_bci = (int32_t)((uint32_t)cur_bci + (uint32_t)db);
			cur_line = (int32_t)((uint32_t)cur_line + (uint32_t)dl);
		} else {
			cur_bci = (int32_t)((uint32_t)cur_bci + (b >> 3));
			cur_line = (int32_t)((uint32_t)cur_line + (b & 7));
		}
		if (cur_bci == bci) {
			*line = cur_line;
			return 0;
		}
		if (cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best_line = cur_line;
		}
	}
	if (best_line < 0)
		return -ENOENT;
	*line = best_line;
	return 0;
}

/* Methods a class may have, at most (a class file's limit); class
 * loaders a JVM may have, at most. */
#define HOTSPOT_MAX_METHODS 65535
#define HOTSPOT_MAX_LOADERS (1u << 20)

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int hotspot_code__read_live_loaders(struct hotspot_code *hc)
{
	uint64_t cld, *v = NULL;
	size_t n = 0, cap = 0;

	if (!hc->cldg_head)
		return -ENOENT;
	if (rd64(hc, hc->cldg_head, &cld))
		return -EFAULT;
	for (; cld; n++) {
		if (n == HOTSPOT_MAX_LOADERS) {
			free(v);
			return -EPROTO; /* a loop, or not the list */
		}
		if (n == cap) {
			uint64_t *nv = realloc(v, (cap = 2 * cap + 64) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n] = cld;
		if (rd64(hc, cld + hc->cld_next, &cld)) {
			free(v);
			return -EFAULT;
		}
	}
	qsort(v, n, sizeof(*v), u64_cmp);
	free(hc->live_clds);
	hc->live_clds = v ? v : calloc(1, sizeof(*v)); /* none alive: all stale */
	hc->nlive_clds = n;
	return hc->live_clds ? 0 : -ENOMEM;
}

void hotspot_code__free(struct hotspot_code *hc)
{
	free(hc->live_clds);
	hc->live_clds = NULL;
	hc->nlive_clds = 0;
}

/* Whether loader cld is among the live ones read last. */
static bool loader_alive(const struct hotspot_code *hc, uint64_t cld)
{
	return bsearch(&cld, hc->live_clds, hc->nlive_clds, sizeof(cld), u64_cmp);
}

enum hotspot_method_state hotspot_code__method_check(struct hotspot_code *hc,
						     uint64_t method)
{
	uint64_t cm, cp, holder, methods, buf[256];
	uint32_t flags;
	int32_t n;

	if (!hc->check_ok)
		return HOTSPOT_METHOD_UNCHECKED;
	if (mem_read(hc->mem, method + hc->method_access_flags, &flags, 4) ||
	    rd64(hc, method + hc->method_const, &cm) ||
	    rd64(hc, cm + hc->cm_constants, &cp) ||
	    rd64(hc, cp + hc->cp_holder, &holder) || !holder ||
	    rd64(hc, holder + hc->ik_methods, &methods) || !methods ||
	    mem_read(hc->mem, methods, &n, 4))
		return HOTSPOT_METHOD_UNCHECKED;
	/* After a collection: a class unloaded since the capture (its
	   loader gone) may have left this memory as it was. */
	if (hc->live_clds) {
		uint64_t cld;

		if (rd64(hc, holder + hc->klass_cld, &cld))
			return HOTSPOT_METHOD_UNCHECKED;
		if (!loader_alive(hc, cld))
			return HOTSPOT_METHOD_STALE;
	}
	if (flags & (uint64_t)(hc->acc_is_old | hc->acc_is_obsolete))
		return HOTSPOT_METHOD_OLD;
	if (n < 0 || n > HOTSPOT_MAX_METHODS)
		return HOTSPOT_METHOD_STALE;
	/* Current: among its holder's methods. */
	for (int32_t i = 0; i < n; i += 256) {
		size_t k = (size_t)(n - i < 256 ? n - i : 256);

		if (mem_read(hc->mem, methods + hc->array_ptr_data + 8 * (uint64_t)i,
			     buf, 8 * k))
			return HOTSPOT_METHOD_UNCHECKED;
		for (size_t m = 0; m < k; m++)
			if (buf[m] == method)
				return HOTSPOT_METHOD_CURRENT;
	}
	return HOTSPOT_METHOD_STALE;
}

int hotspot_code__method_name(struct hotspot_code *hc, uint64_t method,
			      char *buf, size_t len)
{
	uint64_t cm, cp, holder, klass_sym, name_sym, sig_sym;
	uint16_t name_idx, sig_idx;
	char klass[HOTSPOT_MAX_SYMBOL + 1], name[HOTSPOT_MAX_SYMBOL + 1],
		sig[HOTSPOT_MAX_SYMBOL + 1];
	int32_t cp_len;
	int err;

	if (!method || rd64(hc, method + hc->method_const, &cm) ||
	    rd64(hc, cm + hc->cm_constants, &cp) ||
	    mem_read(hc->mem, cm + hc->cm_name_index, &name_idx, 2) ||
	    mem_read(hc->mem, cm + hc->cm_signature_index, &sig_idx, 2) ||
	    rd64(hc, cp + hc->cp_holder, &holder) ||
	    rd64(hc, holder + hc->klass_name, &klass_sym))
		return -EFAULT;
	/* The pool's slots follow its header: a symbol's slot holds the
	 * Symbol*. ConstantPool::_length bounds the indexes. */
	if (mem_read(hc->mem, cp + hc->cp_length, &cp_len, 4))
		return -EFAULT;
	if (!name_idx || !sig_idx || name_idx >= cp_len || sig_idx >= cp_len)
		return -EPROTO;
	if (rd64(hc, cp + hc->cp_size + 8 * (uint64_t)name_idx, &name_sym) ||
	    rd64(hc, cp + hc->cp_size + 8 * (uint64_t)sig_idx, &sig_sym))
		return -EFAULT;
	if ((err = read_symbol(hc, klass_sym, klass, sizeof(klass), true)) ||
	    (err = read_symbol(hc, name_sym, name, sizeof(name), false)) ||
	    (err = read_symbol(hc, sig_sym, sig, sizeof(sig), false)))
		return err;
	/* A hidden class (a lambda's) is named "Outer$$Lambda$N+0xADDR";
	 * Java (and jstack) write the '+' as '/'. */
	char *plus = strrchr(klass, '+');
	if (plus && !strncmp(plus, "+0x", 3))
		*plus = '/';
	if ((size_t)snprintf(buf, len, "%s.%s%s", klass, name, sig) >= len)
		return -ENOSPC;
	return 0;
}

/* PcDescs an nmethod may have; scope offsets it may use. */
#define HOTSPOT_MAX_PCDESCS (1u << 20)

/* Where an nmethod keeps its PcDescs [pcs, pcs_end), its scope data
 * [data, data_end) and its metadata [meta, meta_end): all inside the
 * blob before the PcDescs (JDK 17-22); in its immutable and mutable data
 * (23+). */
struct nm_sections {
	uint64_t code, pcs, pcs_end, data, data_end, meta, meta_end;
};

static int nm_sections(struct hotspot_code *hc, uint64_t nm, struct nm_sections *s)
{
	int32_t pcs_off, data_off, a, b;
	uint64_t p;

	if (code_begin(hc, nm, &s->code) ||
	    mem_read(hc->mem, nm + hc->nm_scopes_pcs, &pcs_off, 4))
		return -EFAULT;
	if (!hc->offsets23) {
		if (rd64(hc, nm + hc->nm_scopes_data, &s->data) ||
		    mem_read(hc->mem, nm + hc->nm_dependencies, &a, 4) ||
		    mem_read(hc->mem, nm + hc->nm_metadata, &b, 4))
			return -EFAULT;
		if (pcs_off <= 0 || a < pcs_off || b <= 0 ||
		    s->data < nm + (uint64_t)b || s->data > nm + (uint64_t)pcs_off)
			return -EPROTO;
		s->pcs = nm + (uint64_t)pcs_off;
		s->pcs_end = nm + (uint64_t)a;
		s->meta = nm + (uint64_t)b;
		s->meta_end = s->data;
		s->data_end = s->pcs;
		return 0;
	}
	if (rd64(hc, nm + hc->nm_immutable_data, &p) ||
	    mem_read(hc->mem, nm + hc->nm_scopes_data, &data_off, 4) ||
	    mem_read(hc->mem, nm + hc->nm_immutable_size, &a, 4))
		return -EFAULT;
	if (!p || pcs_off < 0 || data_off < pcs_off || a < data_off)
		return -EPROTO;
	s->pcs = p + (uint64_t)pcs_off;
	s->pcs_end = s->data = p + (uint64_t)data_off;
	s->data_end = p + (uint64_t)a;
	if (rd64(hc, nm + hc->blob_mutable_data, &p) ||
	    mem_read(hc->mem, nm + hc->blob_relocation_size, &a, 4) ||
	    mem_read(hc->mem, nm + hc->blob_mutable_size, &b, 4))
		return -EFAULT;
	if (!p || a < 0 || b < a)
		return -EPROTO;
	s->meta = p + (uint64_t)a;
	s->meta_end = p + (uint64_t)b;
	return 0;
}

int hotspot_code__scopes(struct hotspot_code *hc, uint64_t nm, uint64_t ret,
			 bool near, uint64_t *methods, int *bcis, int max)
{
	int32_t pc_off = 0, decode = 0;
	uint64_t code_begin, data_begin, pcs, pcs_end, meta, target;
	uint64_t lo, hi;
	struct nm_sections sec;
	int n = 0, err;

	if (!hc->scopes_ok)
		return -ENOENT;
	if ((err = nm_sections(hc, nm, &sec)))
		return err;
	code_begin = sec.code;
	if (ret < code_begin || ret - code_begin > INT32_MAX)
		return -EPROTO;
	pcs = sec.pcs;
	pcs_end = sec.pcs_end;
	meta = sec.meta;
	data_begin = sec.data;
	target = ret - code_begin;
	/* PcDescs are sorted by pc offset: a binary search for the exact
	   one (the call's return address), as nmethod::find_pc_desc, or,
	   near, the first at or after target (pc_desc_near: a running
	   frame's pc between two debug points has the scopes of the next,
	   as AsyncGetCallTrace and JFR name it). */
	lo = 0;
	hi = (pcs_end - pcs) / hc->pcdesc_size;
	if (hi > HOTSPOT_MAX_PCDESCS)
		return -EPROTO;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (mem_read(hc->mem, pcs + mid * hc->pcdesc_size + hc->pcdesc_pc,
			     &pc_off, 4))
			return -EFAULT;
		if (pc_off < 0 || (uint64_t)pc_off < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first PcDesc at or after target. */
	if (lo >= (pcs_end - pcs) / hc->pcdesc_size ||
	    mem_read(hc->mem, pcs + lo * hc->pcdesc_size + hc->pcdesc_pc, &pc_off, 4) ||
	    (!near && (uint64_t)(int64_t)pc_off != target) ||
	    mem_read(hc->mem, pcs + lo * hc->pcdesc_size + hc->pcdesc_scope,
		     &decode, 4))
		return -ENOENT;
	if (decode <= 0)
		return -ENOENT;
	/* Each scope (ScopeDesc::decode_body): the sender's decode offset,
	   the method's metadata index, the bci + 1 (InvocationEntryBci is
	   -1), in UNSIGNED5; serialized_null (0) ends the chain. Offsets
	   must decrease (senders are written first), which bounds it. */
	while (decode > 0 && n < max) {
		uint64_t at = data_begin + (uint64_t)decode, method;
		uint32_t sender, index, bci1;

		if (data_begin + (uint64_t)decode >= sec.data_end)
			return -EPROTO;
		if (read_unsigned5(hc, &at, &sender) ||
		    read_unsigned5(hc, &at, &index) ||
		    read_unsigned5(hc, &at, &bci1))
			return -EFAULT;
		if (!index || meta + 8 * ((uint64_t)index - 1) >= sec.meta_end ||
		    rd64(hc, meta + 8 * ((uint64_t)index - 1), &method) || !method)
			return -EPROTO;
		methods[n] = method;
		bcis[n] = (int)bci1 - 1;
		n++;
		if (sender && (int32_t)sender >= decode)
			return -EPROTO;
		decode = (int32_t)sender;
	}
	return n;
}
