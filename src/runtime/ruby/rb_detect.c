/* rb_detect.c - the Ruby VM in a process: libruby's exported symbols
 * (ruby_version, ruby_current_vm_ptr, the TLS variable ruby_current_ec,
 * rb_vm_exec), the TLS module id the dynamic linker gave libruby (its
 * R_X86_64_DTPMOD64 GOT slot), and the layouts per version. */
#include "runtime/ruby/ruby.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "base/maps_line.h"
#include "elf/elf_image.h"

/* Ruby 3.1 (x86_64, no USE_RVARGC: Debian's 3.1.2). From 3.1's vm_core.h,
 * iseq.h, internal/string.h and include/ruby/internal/core/r{string,array}.h
 * as published, each checked against a running ruby 3.1.2 (docs/ruby.md):
 * Debian ships no DWARF for libruby-3.1 (no -dbgsym reachable). */
static const struct rb_layout layout_31 = {
	.version = "3.1",
	.ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16,
	/* pc, sp, iseq, self, ep, block_code, __bp__, jit_return */
	.cfp_size = 64, .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32,
	/* flags, wrapper, body */
	.iseq_body = 16,
	/* type, iseq_size, iseq_encoded, param (48 bytes), location
	   {pathobj, base_label, label, first_lineno, node_id,
	   code_location}, insns_info {body, positions, size,
	   succ_index_table} */
	.body_iseq_size = 4, .body_iseq_encoded = 8,
	.body_pathobj = 64, .body_label = 80, .body_first_lineno = 88,
	.body_insns_body = 120, .body_insns_positions = 128,
	.body_insns_size = 136, .body_insns_succ = 144,
	.insn_entry_size = 12,	/* line_no, node_id, events */
	.str_embed_ary = 16, .str_heap_len = 16, .str_heap_ptr = 24,
	.str_noembed = 1u << 13,	/* RSTRING_NOEMBED = FL_USER1 */
	.str_embed_len_shift = 14, .str_embed_len_mask = 0x1f,
	.ary_embed_ary = 16, .ary_heap_ptr = 32,
	.ary_embed = 1u << 13,		/* RARRAY_EMBED_FLAG = FL_USER1 */
	/* rb_vm_t: self, ractor {set (list_head), cnt, blocking_cnt,
	   main_ractor, main_thread}; rb_thread_t: lt_node, self, ractor,
	   vm, ec, last_status, calling, top_self, top_wrapper, thread_id */
	.vm_main_thread = 40, .th_vm = 32, .th_thread_id = 80,
	/* glibc 2.36 x86_64 (its _thread_db_pthread_tid: {32, 1, 720}) */
	.pthread_tid = 0x2d0,
	/* rb_control_frame_t.ep[-2] (VM_ENV_DATA_INDEX_ME_CREF);
	   rb_method_entry_t: flags, defined_class, def, called_id, owner;
	   rb_method_definition_t: type..complemented_count (8 bytes),
	   body (a union of 24: cfunc {func, invoker, argc}), original_id */
	.ep_me_cref = 16, .me_def = 16, .def_original_id = 32,
	/* symbol.c: tLAST_OP_ID, ID_SCOPE_SHIFT, ID_ENTRY_UNIT, and each
	   entry [str, sym]; RArray's heap length and embedded length */
	.id_last_op = 0xa9, .id_scope_shift = 4, .id_entry_unit = 512,
	.ary_heap_len = 16, .ary_embed_len_shift = 15, .ary_embed_len_mask = 3,
};

const struct rb_layout *rb_layout__find(const char *version)
{
	return !strncmp(version, "3.1.", 4) ? &layout_31 : NULL;
}

bool rb_image_candidate(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libruby", 7) && strstr(base, ".so");
}

struct rb_syms {
	struct elf_symbol version, vm_ptr, exec, ec, id2str;
	bool has_version, has_vm_ptr, has_exec, has_ec, has_id2str;
	size_t ec_index;		/* ruby_current_ec's symbol index */
};

/* The symbols wanted, from .dynsym (libruby exports them all; one table,
 * so the running count is the symbol index relocations use). */
static void find_syms(const struct elf_image *img, struct rb_syms *s)
{
	struct elf_symbols it;
	struct elf_symbol sym;
	const char *name;

	elf_symbols__init(&it, img, SHT_DYNSYM);
	for (size_t i = 0; elf_symbols__next(&it, &sym); i++) {
		if (sym.shndx == SHN_UNDEF || !(name = elf_symbols__name(&it, &sym)))
			continue;
		if (!strcmp(name, "ruby_version")) {
			s->version = sym;
			s->has_version = true;
		} else if (!strcmp(name, "ruby_current_vm_ptr")) {
			s->vm_ptr = sym;
			s->has_vm_ptr = true;
		} else if (!strcmp(name, "ruby_current_ec")) {
			s->ec = sym;
			s->has_ec = true;
			s->ec_index = i;
		} else if (!strcmp(name, "rb_vm_exec")) {
			s->exec = sym;
			s->has_exec = true;
		} else if (!strcmp(name, "rb_id2str")) {
			s->id2str = sym;
			s->has_id2str = true;
		}
	}
}

/* The GOT slot the dynamic linker fills with libruby's TLS module id for
 * ruby_current_ec (general-dynamic TLS: R_X86_64_DTPMOD64), link-time;
 * 0 when there is none. */
static uint64_t dtpmod_slot(Elf *elf, size_t ec_index)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;

			if (gelf_getrela(data, (int)i, &r) &&
			    GELF_R_TYPE(r.r_info) == R_X86_64_DTPMOD64 &&
			    GELF_R_SYM(r.r_info) == ec_index)
				return r.r_offset;
		}
	}
	return 0;
}

static int32_t s32_at(const uint8_t *b)
{
	int32_t v;

	memcpy(&v, b, 4);
	return v;
}

uint64_t rb_code_jmp(const uint8_t *code, size_t len, uint64_t vaddr)
{
	/* rb_id2str: the ID's serial, then a tail call (jmp rel32) of
	   get_id_serial_entry. */
	for (size_t i = 0; i + 5 <= len && i < 32; i++)
		if (code[i] == 0xe9)
			return vaddr + i + 5 + (uint64_t)(int64_t)s32_at(code + i + 1);
	return 0;
}

uint64_t rb_code_symbols(const uint8_t *code, size_t len, uint64_t vaddr)
{
	/* get_id_serial_entry: `cmp %edi, last_id(%rip)` (39 3d d32), then
	   within a few instructions `mov ids(%rip), %rdi` (48 8b 3d d32),
	   ids 16 bytes after last_id (rb_symbols_t: last_id, str_sym,
	   ids). */
	for (size_t i = 0; i + 6 <= len; i++) {
		uint64_t last;

		if (code[i] != 0x39 || code[i + 1] != 0x3d)
			continue;
		last = vaddr + i + 6 + (uint64_t)(int64_t)s32_at(code + i + 2);
		for (size_t j = i + 6; j + 7 <= len && j < i + 32; j++)
			if (code[j] == 0x48 && code[j + 1] == 0x8b && code[j + 2] == 0x3d &&
			    vaddr + j + 7 + (uint64_t)(int64_t)s32_at(code + j + 3) == last + 16)
				return last;
	}
	return 0;
}

/* Where Ruby's symbol table (rb_symbols_t ruby_global_symbols, not
 * exported) is: read from the code of rb_id2str, which is. Link-time; 0
 * when the code is not as expected (C methods then stay unnamed). */
static uint64_t find_symbol_table(const struct elf_image *img, const struct rb_syms *s)
{
	const uint8_t *code;
	uint64_t to;

	if (!s->has_id2str || s->id2str.size < 5 || s->id2str.size > 256 ||
	    elf_image__vaddr_bytes(img, s->id2str.value, s->id2str.size, &code) || !code ||
	    !(to = rb_code_jmp(code, s->id2str.size, s->id2str.value)) ||
	    elf_image__vaddr_bytes(img, to, 128, &code) || !code)
		return 0;
	return rb_code_symbols(code, 128, to);
}

int rb_runtime__detect_elf(const struct elf_image *img, const char *path,
			   uint64_t bias, struct stacksnap_mem *mem,
			   struct rb_runtime *rt)
{
	struct rb_syms s = { 0 };
	const uint8_t *v;
	uint64_t slot, vm = 0;

	memset(rt, 0, sizeof(*rt));
	find_syms(img, &s);
	if (!s.has_version || !s.has_vm_ptr)
		return -ENOENT;
	rt->found = true;
	snprintf(rt->path, sizeof(rt->path), "%s", path);
	if (s.version.size > 0 && s.version.size < sizeof(rt->version) &&
	    elf_image__vaddr_bytes(img, s.version.value, s.version.size,
				   &v) == 0 && v)
		memcpy(rt->version, v, s.version.size);
	rt->version[sizeof(rt->version) - 1] = '\0';
	if (!rb_layout__find(rt->version)) {
		snprintf(rt->note, sizeof(rt->note),
			 "Ruby %s: layout unknown, native frames only",
			 rt->version[0] ? rt->version : "?");
		return 0;
	}
	rt->vm_ptr_addr = s.vm_ptr.value + bias;
	if (s.has_exec) {
		rt->exec_start = s.exec.value + bias;
		rt->exec_end = rt->exec_start + s.exec.size;
	}
	slot = s.has_ec && GELF_ST_TYPE(s.ec.info) == STT_TLS ? dtpmod_slot(img->elf, s.ec_index) : 0;
	if (!slot || !s.has_exec ||
	    stacksnap_mem__read(mem, slot + bias, &rt->tls_modid, 8) ||
	    !rt->tls_modid || rt->tls_modid > 4096) {
		snprintf(rt->note, sizeof(rt->note),
			 "Ruby %s: ruby_current_ec or rb_vm_exec not found, native frames only",
			 rt->version);
		return 0;
	}
	rt->ec_tls_off = s.ec.value;
	if ((rt->symbols = find_symbol_table(img, &s)))
		rt->symbols += bias;
	if (stacksnap_mem__read(mem, rt->vm_ptr_addr, &vm, 8) || !vm) {
		snprintf(rt->note, sizeof(rt->note),
			 "Ruby %s: VM not started, native frames only", rt->version);
		return 0;
	}
	rt->layout = rb_layout__find(rt->version);
	snprintf(rt->note, sizeof(rt->note), "Ruby %s", rt->version);
	return 0;
}

int rb_runtime__detect_pid(pid_t pid, struct stacksnap_mem *mem,
			   const struct log_sink *log, struct rb_runtime *rt)
{
	char maps_path[64], line[4096 + 256];
	FILE *f;
	int err = -ENOENT;

	memset(rt, 0, sizeof(*rt));
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps_path, "re")))
		return -errno;
	/* The first mapping of libruby is its lowest: the one load_bias
	   wants. */
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		struct elf_image *img;
		char full[4096 + 32];
		uint64_t bias;

		if (maps_line__parse(line, &ml) || !ml.path || ml.path[0] != '/' ||
		    !rb_image_candidate(ml.path))
			continue;
		snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, ml.path);
		if (elf_image__open(full, log, &img))
			break;
		err = elf_image__load_bias(img, ml.start, ml.offset, 0, &bias);
		if (!err)
			err = rb_runtime__detect_elf(img, ml.path, bias, mem, rt);
		elf_image__free(img);
		break;
	}
	fclose(f);
	if (err)
		memset(rt, 0, sizeof(*rt));
	return err;
}
