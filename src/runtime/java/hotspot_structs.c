/* hotspot_structs.c - reads HotSpot's vmStructs tables from a live JVM
 * into name -> offset/size/value tables. */
#define _GNU_SOURCE
#include "runtime/java/hotspot_structs.h"

#include <errno.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "elf/elf_image.h"
#include "mem/mem.h"

/* The exported variables, by what they hold. */
struct layout_symbols {
	uint64_t structs, types, ints, longs; /* pointers to the arrays */
	/* VMStructEntry */
	uint64_t s_type_name, s_field_name, s_type_string, s_is_static,
		s_offset, s_address, s_stride;
	/* VMTypeEntry */
	uint64_t t_type_name, t_super_name, t_size, t_stride;
	/* VMIntConstantEntry, VMLongConstantEntry */
	uint64_t i_name, i_value, i_stride, l_name, l_value, l_stride;
};

static const struct {
	const char *name;
	size_t at;
} wanted[] = {
#define W(sym, f) { sym, offsetof(struct layout_symbols, f) }
	W("gHotSpotVMStructs", structs),
	W("gHotSpotVMTypes", types),
	W("gHotSpotVMIntConstants", ints),
	W("gHotSpotVMLongConstants", longs),
	W("gHotSpotVMStructEntryTypeNameOffset", s_type_name),
	W("gHotSpotVMStructEntryFieldNameOffset", s_field_name),
	W("gHotSpotVMStructEntryTypeStringOffset", s_type_string),
	W("gHotSpotVMStructEntryIsStaticOffset", s_is_static),
	W("gHotSpotVMStructEntryOffsetOffset", s_offset),
	W("gHotSpotVMStructEntryAddressOffset", s_address),
	W("gHotSpotVMStructEntryArrayStride", s_stride),
	W("gHotSpotVMTypeEntryTypeNameOffset", t_type_name),
	W("gHotSpotVMTypeEntrySuperclassNameOffset", t_super_name),
	W("gHotSpotVMTypeEntrySizeOffset", t_size),
	W("gHotSpotVMTypeEntryArrayStride", t_stride),
	W("gHotSpotVMIntConstantEntryNameOffset", i_name),
	W("gHotSpotVMIntConstantEntryValueOffset", i_value),
	W("gHotSpotVMIntConstantEntryArrayStride", i_stride),
	W("gHotSpotVMLongConstantEntryNameOffset", l_name),
	W("gHotSpotVMLongConstantEntryValueOffset", l_value),
	W("gHotSpotVMLongConstantEntryArrayStride", l_stride),
#undef W
};
#define NWANTED (sizeof(wanted) / sizeof(wanted[0]))

/* The link-time addresses of the wanted symbols in img's .dynsym;
 * found[i] says which were. */
static void find_dynsyms(const struct elf_image *img, uint64_t addr[NWANTED],
			 bool found[NWANTED])
{
	struct elf_symbols it;
	struct elf_symbol sym;

	elf_symbols__init(&it, img, SHT_DYNSYM);
	while (elf_symbols__next(&it, &sym)) {
		const char *name;

		if (!sym.value || !(name = elf_symbols__name(&it, &sym)) ||
		    strncmp(name, "gHotSpotVM", 10))
			continue;
		for (size_t k = 0; k < NWANTED; k++) {
			if (!strcmp(name, wanted[k].name)) {
				addr[k] = sym.value;
				found[k] = true;
			}
		}
	}
}

static int read_u64(struct stacksnap_mem *mem, uint64_t addr, uint64_t *v)
{
	return mem_read(mem, addr, v, sizeof(*v));
}

/* A NUL-terminated string of at most HOTSPOT_MAX_NAME bytes at addr:
 * *out malloc'ed, NULL for a NULL pointer. */
static int read_str(struct stacksnap_mem *mem, uint64_t addr, char **out)
{
	char buf[HOTSPOT_MAX_NAME + 1];
	size_t n = 0;

	*out = NULL;
	if (!addr)
		return 0;
	/* Byte runs up to a page end, so an unreadable page after a short
	 * string at a page's end does not fail it. */
	while (n < HOTSPOT_MAX_NAME) {
		size_t chunk = MEM_PAGE - ((addr + n) & (MEM_PAGE - 1));

		if (chunk > HOTSPOT_MAX_NAME - n)
			chunk = HOTSPOT_MAX_NAME - n;
		if (mem_read(mem, addr + n, buf + n, chunk))
			return -EFAULT;
		if (memchr(buf + n, 0, chunk))
			break;
		n += chunk;
	}
	buf[HOTSPOT_MAX_NAME] = 0;
	if (strlen(buf) >= HOTSPOT_MAX_NAME)
		return -EPROTO;
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int cmp_field(const void *a, const void *b)
{
	const struct hotspot_field *x = a, *y = b;
	int c = strcmp(x->type, y->type);

	return c ? c : strcmp(x->field, y->field);
}

static int cmp_type(const void *a, const void *b)
{
	return strcmp(((const struct hotspot_type *)a)->name,
		      ((const struct hotspot_type *)b)->name);
}

static int cmp_constant(const void *a, const void *b)
{
	return strcmp(((const struct hotspot_constant *)a)->name,
		      ((const struct hotspot_constant *)b)->name);
}

static int read_fields(struct stacksnap_mem *mem, const struct layout_symbols *l,
		       struct hotspot_structs *hs)
{
	uint64_t base;
	int err;

	if ((err = read_u64(mem, l->structs, &base)))
		return err;
	for (size_t i = 0;; i++) {
		uint64_t e = base + i * l->s_stride, tn, fn, ts, off, addr;
		int32_t is_static = 0;
		struct hotspot_field *f;

		if (i >= HOTSPOT_MAX_ENTRIES)
			return -EPROTO;
		if ((err = read_u64(mem, e + l->s_type_name, &tn)))
			return err;
		if (!tn)
			return 0; /* the table's end */
		if ((err = read_u64(mem, e + l->s_field_name, &fn)) ||
		    (err = read_u64(mem, e + l->s_type_string, &ts)) ||
		    (err = mem_read(mem, e + l->s_is_static, &is_static, 4)) ||
		    (err = read_u64(mem, e + l->s_offset, &off)) ||
		    (err = read_u64(mem, e + l->s_address, &addr)))
			return err;
		if (!(f = VEC_PUSH(hs->fields, hs->nfields, hs->fields_cap)))
			return -ENOMEM;
		memset(f, 0, sizeof(*f));
		f->is_static = is_static != 0;
		f->offset = off;
		f->address = addr;
		if ((err = read_str(mem, tn, (char **)&f->type)) ||
		    (err = read_str(mem, fn, (char **)&f->field)) ||
		    (err = read_str(mem, ts, (char **)&f->type_string)))
			return err;
		if (!f->field)
			return -EPROTO;
	}
}

static int read_types(struct stacksnap_mem *mem, const struct layout_symbols *l,
		      struct hotspot_structs *hs)
{
	uint64_t base;
	int err;

	if ((err = read_u64(mem, l->types, &base)))
		return err;
	for (size_t i = 0;; i++) {
		uint64_t e = base + i * l->t_stride, tn, sn, size;
		struct hotspot_type *t;

		if (i >= HOTSPOT_MAX_ENTRIES)
			return -EPROTO;
		if ((err = read_u64(mem, e + l->t_type_name, &tn)))
			return err;
		if (!tn)
			return 0;
		if ((err = read_u64(mem, e + l->t_super_name, &sn)) ||
		    (err = read_u64(mem, e + l->t_size, &size)))
			return err;
		if (!(t = VEC_PUSH(hs->types, hs->ntypes, hs->types_cap)))
			return -ENOMEM;
		memset(t, 0, sizeof(*t));
		t->size = size;
		if ((err = read_str(mem, tn, (char **)&t->name)) ||
		    (err = read_str(mem, sn, (char **)&t->super)))
			return err;
	}
}

/* Int (value_size 4) or long (8) constants. */
static int read_constants(struct stacksnap_mem *mem, uint64_t table,
			  uint64_t name_off, uint64_t value_off, uint64_t stride,
			  size_t value_size, struct hotspot_structs *hs)
{
	uint64_t base;
	int err;

	if ((err = read_u64(mem, table, &base)))
		return err;
	for (size_t i = 0;; i++) {
		uint64_t e = base + i * stride, nn;
		int64_t v = 0;
		struct hotspot_constant *c;

		if (i >= HOTSPOT_MAX_ENTRIES)
			return -EPROTO;
		if ((err = read_u64(mem, e + name_off, &nn)))
			return err;
		if (!nn)
			return 0;
		if (value_size == 4) {
			int32_t v32;

			if ((err = mem_read(mem, e + value_off, &v32, 4)))
				return err;
			v = v32;
		} else if ((err = mem_read(mem, e + value_off, &v, 8))) {
			return err;
		}
		if (!(c = VEC_PUSH(hs->constants, hs->nconstants,
				   hs->constants_cap)))
			return -ENOMEM;
		c->value = v;
		if ((err = read_str(mem, nn, (char **)&c->name)))
			return err;
	}
}

int hotspot_structs__read(struct stacksnap_mem *mem, const char *jvm_path,
			  uint64_t map_start, uint64_t map_offset,
			  const struct log_sink *log, struct hotspot_structs *out)
{
	uint64_t link[NWANTED] = { 0 }, bias = 0;
	bool found[NWANTED] = { false };
	struct layout_symbols l;
	struct elf_image *img;
	int err;

	memset(out, 0, sizeof(*out));
	err = elf_image__open(jvm_path, log, &img);
	if (err)
		return err;
	find_dynsyms(img, link, found);
	err = elf_image__load_bias(img, map_start, map_offset, 0, &bias);
	elf_image__free(img);
	if (err)
		return err;
	for (size_t k = 0; k < NWANTED; k++) {
		if (!found[k]) {
			log_info(log, "%s: no %s: not a JVM with the "
				 "Serviceability Agent's tables", jvm_path,
				 wanted[k].name);
			return -ENOENT;
		}
		/* The array pointers are read through; the layout words are
		 * values (offsets, strides) read now. */
		uint64_t *slot = (uint64_t *)((char *)&l + wanted[k].at);

		if (k < 4) {
			*slot = link[k] + bias;
		} else if ((err = read_u64(mem, link[k] + bias, slot))) {
			log_warn(log, "%s: cannot read %s: %s", jvm_path,
				 wanted[k].name, strerror(-err));
			return err;
		}
	}
	/* Offsets inside an entry past its stride, or strides that are not
	 * an entry's size, are not the tables this reads. */
	if (!l.s_stride || l.s_stride > 256 || l.s_type_name >= l.s_stride ||
	    l.s_field_name >= l.s_stride || l.s_offset >= l.s_stride ||
	    l.s_address >= l.s_stride || l.s_is_static >= l.s_stride ||
	    l.s_type_string >= l.s_stride || !l.t_stride || l.t_stride > 256 ||
	    l.t_type_name >= l.t_stride || l.t_size >= l.t_stride ||
	    l.t_super_name >= l.t_stride || !l.i_stride || l.i_stride > 64 ||
	    !l.l_stride || l.l_stride > 64) {
		log_warn(log, "%s: vmStructs entry layout unexpected (stride "
			 "%llu): names from perf maps only", jvm_path,
			 (unsigned long long)l.s_stride);
		return -EPROTO;
	}
	err = read_fields(mem, &l, out);
	if (!err)
		err = read_types(mem, &l, out);
	if (!err)
		err = read_constants(mem, l.ints, l.i_name, l.i_value,
				     l.i_stride, 4, out);
	if (!err)
		err = read_constants(mem, l.longs, l.l_name, l.l_value,
				     l.l_stride, 8, out);
	if (err) {
		log_warn(log, "%s: reading the vmStructs tables: %s", jvm_path,
			 err == -EPROTO ? "entries that are not a table"
					: strerror(-err));
		hotspot_structs__free(out);
		return err;
	}
	qsort(out->fields, out->nfields, sizeof(*out->fields), cmp_field);
	qsort(out->types, out->ntypes, sizeof(*out->types), cmp_type);
	qsort(out->constants, out->nconstants, sizeof(*out->constants),
	      cmp_constant);
	log_debug(log, "%s: vmStructs: %zu fields, %zu types, %zu constants",
		  jvm_path, out->nfields, out->ntypes, out->nconstants);
	return 0;
}

void hotspot_structs__free(struct hotspot_structs *hs)
{
	for (size_t i = 0; i < hs->nfields; i++) {
		free((char *)hs->fields[i].type);
		free((char *)hs->fields[i].field);
		free((char *)hs->fields[i].type_string);
	}
	for (size_t i = 0; i < hs->ntypes; i++) {
		free((char *)hs->types[i].name);
		free((char *)hs->types[i].super);
	}
	for (size_t i = 0; i < hs->nconstants; i++)
		free((char *)hs->constants[i].name);
	free(hs->fields);
	free(hs->types);
	free(hs->constants);
	memset(hs, 0, sizeof(*hs));
}

const struct hotspot_field *hotspot_structs__field(const struct hotspot_structs *hs,
						   const char *type,
						   const char *field)
{
	struct hotspot_field key = { .type = type, .field = field };

	return bsearch(&key, hs->fields, hs->nfields, sizeof(key), cmp_field);
}

const struct hotspot_type *hotspot_structs__type(const struct hotspot_structs *hs,
						 const char *name)
{
	struct hotspot_type key = { .name = name };

	return bsearch(&key, hs->types, hs->ntypes, sizeof(key), cmp_type);
}

bool hotspot_structs__constant(const struct hotspot_structs *hs,
			       const char *name, int64_t *value)
{
	struct hotspot_constant key = { .name = name };
	const struct hotspot_constant *c =
		bsearch(&key, hs->constants, hs->nconstants, sizeof(key),
			cmp_constant);

	if (c)
		*value = c->value;
	return c != NULL;
}
