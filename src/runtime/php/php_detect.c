/* php_detect.c - the Zend engine in a process: the PHP binary's exported
 * symbols (executor_globals, execute_ex), its version and thread safety
 * read from the strings the build puts in .rodata, and the layouts per
 * version. */
#define _GNU_SOURCE
#include "runtime/php/php.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "base/maps_line.h"
#include "dwarf/cfi.h"
#include "elf/elf_image.h"

/* PHP 8.2 (x86_64, non-ZTS: Debian 12's php8.2 8.2.x). From 8.2's
 * Zend/zend_globals.h, zend_compile.h and zend_types.h as published,
 * each checked against the running php8.2 8.2.36 (docs/php.md): Debian
 * ships no DWARF for php8.2 (no -dbgsym). */
static const struct php_layout layout_82 = {
	.version = "8.2",
	/* uninitialized_zval, error_zval, symtable_cache[32],
	   symtable_cache_limit, symtable_cache_ptr, symbol_table,
	   included_files, bailout, error_reporting, exit_status,
	   function_table, class_table, zend_constants, vm_stack_top,
	   vm_stack_end, vm_stack, vm_stack_page_size,
	   current_execute_data */
	.eg_vm_stack_top = 456, .eg_vm_stack_end = 464, .eg_vm_stack = 472,
	.eg_current_execute_data = 488,
	.vm_page_end = 8,		/* top, end, prev */
	/* opline, call, return_value, func, This {value, u1.type_info,
	   u2}, prev_execute_data, symbol_table, run_time_cache,
	   extra_named_params */
	.ex_opline = 0, .ex_func = 24, .ex_call_info = 40, .ex_prev = 48,
	.ex_size = 56,
	/* common: type, arg_flags[3], fn_flags, function_name, scope,
	   prototype, num_args, required_num_args, arg_info, attributes,
	   T, run_time_cache (8.2 moved the last two into the common part);
	   then zend_op_array: cache_size, last_var, last, opcodes,
	   static_variables_ptr, static_variables, vars, refcount,
	   last_live_range, last_try_catch, live_range, try_catch_array,
	   filename, line_start ... */
	.fn_common_size = 72,
	.fn_type = 0, .fn_name = 8, .fn_scope = 16,
	.op_last = 80, .op_opcodes = 88, .op_filename = 152, .op_size = 160,
	/* handler, op1, op2, result, extended_value, lineno, opcode */
	.opline_size = 32, .opline_extended_value = 20, .opline_lineno = 24,
	.opline_opcode = 28,
	.ce_name = 8,			/* type, name */
	/* gc {refcount, type_info}, h, len, val[] */
	.str_type_info = 4, .str_len = 16, .str_val = 24,
};

const struct php_layout *php_layout__find(const char *version)
{
	return !strncmp(version, "8.2.", 4) ? &layout_82 : NULL;
}

bool php_image_candidate(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "php", 3) || !strncmp(base, "libphp", 6);
}

/* The bytes of the section named name, or NULL. */
static const uint8_t *section_bytes(const struct elf_image *img, const char *name,
				    size_t *len)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(img->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(img->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(n = elf_strptr(img->elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name))
			continue;
		if (sh.sh_offset > img->size || sh.sh_size > img->size - sh.sh_offset)
			return NULL;
		*len = sh.sh_size;
		return img->bytes + sh.sh_offset;
	}
	return NULL;
}

/* The version main.c builds into its X-Powered-By header
 * ("X-Powered-By: PHP/8.2.36"), and the module build id's thread safety
 * ("API20220829,NTS" or ",TS"): *zts 1, 0, or -1 (not found). */
static void read_version(const struct elf_image *img, char *version, size_t cap,
			 int *zts)
{
	static const char tag[] = "X-Powered-By: PHP/";
	const uint8_t *ro, *p, *q;
	size_t len = 0, n = 0;

	version[0] = '\0';
	*zts = -1;
	if (!(ro = section_bytes(img, ".rodata", &len))) {
		ro = img->bytes;
		len = img->size;
	}
	if ((p = memmem(ro, len, tag, sizeof(tag) - 1))) {
		p += sizeof(tag) - 1;
		while (p + n < ro + len && n + 1 < cap &&
		       ((p[n] >= '0' && p[n] <= '9') || p[n] == '.' ||
			(p[n] >= 'a' && p[n] <= 'z') || p[n] == '-' ||
			(p[n] >= 'A' && p[n] <= 'Z')))
			n++;
		memcpy(version, p, n);
		version[n] = '\0';
	}
	for (q = ro; (p = memmem(q, len - (size_t)(q - ro), "API20", 5)); q = p + 5) {
		size_t k = 5;

		while (p + k < ro + len && k < 16 && p[k] >= '0' && p[k] <= '9')
			k++;
		if (p + k + 3 < ro + len && !memcmp(p + k, ",NTS", 4)) {
			*zts = 0;
			break;
		}
		if (p + k + 2 < ro + len && !memcmp(p + k, ",TS", 3)) {
			*zts = 1;
			break;
		}
	}
}

struct php_syms {
	struct elf_symbol eg, exec, eg_offset;
	bool has_eg, has_exec, has_eg_offset;
};

static void find_syms(const struct elf_image *img, struct php_syms *s)
{
	struct elf_symbols it;
	struct elf_symbol sym;
	const char *name;

	elf_symbols__init(&it, img, SHT_DYNSYM);
	while (elf_symbols__next(&it, &sym)) {
		if (sym.shndx == SHN_UNDEF || !(name = elf_symbols__name(&it, &sym)))
			continue;
		if (!strcmp(name, "executor_globals")) {
			s->eg = sym;
			s->has_eg = true;
		} else if (!strcmp(name, "execute_ex")) {
			s->exec = sym;
			s->has_exec = true;
		} else if (!strcmp(name, "executor_globals_offset")) {
			s->eg_offset = sym;
			s->has_eg_offset = true;
		}
	}
}

/* Whether the code [start, end) (link-time) holds a rel32 jmp or jcc into
 * [lo, hi): read byte by byte, not decoded, so a hit may be an operand's
 * bytes; one that lands in the range asked for is what is looked for. */
static bool jumps_into(const struct elf_image *img, uint64_t start, uint64_t end,
		       uint64_t lo, uint64_t hi)
{
	const uint8_t *b;

	if (end <= start || end - start > (1u << 24) ||
	    elf_image__vaddr_bytes(img, start, end - start, &b) || !b)
		return false;
	for (uint64_t i = 0; i + 6 <= end - start; i++) {
		int32_t rel;
		uint64_t to;

		if (b[i] == 0xe9) {
			memcpy(&rel, b + i + 1, 4);
			to = start + i + 5 + (uint64_t)(int64_t)rel;
		} else if (b[i] == 0x0f && (b[i + 1] & 0xf0) == 0x80) {
			memcpy(&rel, b + i + 2, 4);
			to = start + i + 6 + (uint64_t)(int64_t)rel;
		} else {
			continue;
		}
		if (to >= lo && to < hi)
			return true;
	}
	return false;
}

/* The part of execute_ex GCC moved out for cold paths (execute_ex.cold,
 * named in no table of Debian's binary): its own FDE, the one GCC emits
 * right after the function's in .eh_frame, outside the function, and
 * the function jumps into it. *cold (link-time) stays 0, 0 otherwise. */
static void find_cold(const struct elf_image *img, uint64_t start, uint64_t end,
		      uint64_t *cold)
{
	struct cfi_input in = { img->eh_frame.data, img->eh_frame.size,
				img->eh_frame.vaddr, 1 };
	struct cfi_entry e;
	struct cfi_cie cie;
	struct cfi_fde fde;
	bool next = false;

	cold[0] = cold[1] = 0;
	for (size_t off = 0; in.data && cfi_entry_read(&in, off, &e) == 1; off = e.next) {
		if (e.is_cie || cfi_fde_at(&in, e.off, &cie, &fde))
			continue;
		if (next) {
			if ((fde.pc_end <= start || fde.pc_begin >= end) &&
			    fde.pc_end - fde.pc_begin < (1u << 24) &&
			    jumps_into(img, start, end, fde.pc_begin, fde.pc_end)) {
				cold[0] = fde.pc_begin;
				cold[1] = fde.pc_end;
			}
			return;
		}
		next = fde.pc_begin == start;
	}
}

int php_runtime__detect_elf(const struct elf_image *img, const char *path,
			    uint64_t bias, struct php_runtime *rt)
{
	const struct php_layout *l;
	struct php_syms s = { 0 };
	int zts;

	memset(rt, 0, sizeof(*rt));
	find_syms(img, &s);
	if ((!s.has_eg && !s.has_eg_offset) || !s.has_exec)
		return -ENOENT;
	rt->found = true;
	snprintf(rt->path, sizeof(rt->path), "%s", path);
	read_version(img, rt->version, sizeof(rt->version), &zts);
	l = php_layout__find(rt->version);
	if (s.has_eg_offset || !s.has_eg || zts == 1) {
		snprintf(rt->note, sizeof(rt->note),
			 "PHP %s: thread-safe (ZTS) build: layout unknown, native frames only",
			 rt->version[0] ? rt->version : "?");
		return 0;
	}
	if (!l || zts != 0) {
		snprintf(rt->note, sizeof(rt->note),
			 "PHP %s: layout unknown, native frames only",
			 rt->version[0] ? rt->version : "?");
		return 0;
	}
	if (s.eg.size && s.eg.size < l->eg_current_execute_data + 8) {
		snprintf(rt->note, sizeof(rt->note),
			 "PHP %s: executor_globals of %llu bytes: layout unknown, "
			 "native frames only", rt->version, (unsigned long long)s.eg.size);
		return 0;
	}
	rt->eg = s.eg.value + bias;
	rt->exec_start = s.exec.value + bias;
	rt->exec_end = rt->exec_start + s.exec.size;
	find_cold(img, s.exec.value, s.exec.value + s.exec.size, rt->cold);
	if (rt->cold[0]) {
		rt->cold[0] += bias;
		rt->cold[1] += bias;
	}
	rt->layout = l;
	snprintf(rt->note, sizeof(rt->note), "PHP %s", rt->version);
	return 0;
}

int php_runtime__detect_pid(pid_t pid, const struct log_sink *log,
			    struct php_runtime *rt)
{
	char maps_path[64], line[4096 + 256];
	FILE *f;
	int err = -ENOENT;

	memset(rt, 0, sizeof(*rt));
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps_path, "re")))
		return -errno;
	/* The first mapping of a file is its lowest: the one load_bias
	   wants. Each candidate file is opened once. */
	char last[4096] = "";
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		struct elf_image *img;
		char full[4096 + 32];
		uint64_t bias;

		if (maps_line__parse(line, &ml) || !ml.path || ml.path[0] != '/' ||
		    !php_image_candidate(ml.path) || !strcmp(ml.path, last))
			continue;
		snprintf(last, sizeof(last), "%s", ml.path);
		snprintf(full, sizeof(full), "/proc/%d/root%s", (int)pid, ml.path);
		if (elf_image__open(full, log, &img))
			continue;
		err = elf_image__load_bias(img, ml.start, ml.offset, 0, &bias);
		if (!err)
			err = php_runtime__detect_elf(img, ml.path, bias, rt);
		elf_image__free(img);
		if (!err)
			break;
	}
	fclose(f);
	if (err)
		memset(rt, 0, sizeof(*rt));
	return err;
}
