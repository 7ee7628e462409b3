/* py_resolve.c - names captured Python frames after the thaw: reads the
 * code objects (immutable once created) with their qualified names, file
 * names and line tables, caches them by address for the capture, and
 * turns each frame's instruction position into a line. */
#include "runtime/python/python.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

#define PY_MAX_STR 4096		/* characters of a name or file name */
#define PY_MAX_LINETABLE (1 << 20)

/* A code object as read. Invariant: ok implies qualname, name and file
 * are non-NULL strings owned here, and linetable holds linetable_len
 * bytes (possibly 0). */
struct py_code {
	uint64_t addr;
	uint64_t qualname_obj, file_obj, linetable_obj; /* as read: recheck */
	bool ok;
	char *qualname, *name, *file;
	int firstlineno;
	int firsttraceable;	/* in code units, -1 unknown */
	uint8_t *linetable;
	size_t linetable_len;
};

void py_resolver__init(struct py_resolver *r, const struct py_runtime *rt,
		       struct stacksnap_mem *mem)
{
	memset(r, 0, sizeof(*r));
	r->rt = rt;
	r->mem = mem;
}

static void code_free(struct py_code *c)
{
	if (!c)
		return;
	free(c->qualname);
	free(c->name);
	free(c->file);
	free(c->linetable);
	free(c);
}

void py_resolver__free(struct py_resolver *r)
{
	for (size_t i = 0; i < r->nslots; i++)
		code_free(r->slots[i]);
	free(r->slots);
	for (size_t i = 0; i < r->nretired; i++)
		code_free(r->retired[i]);
	free(r->retired);
	r->retired = NULL;
	r->nretired = 0;
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i]);
	free(r->names);
	r->names = NULL;
	r->nnames = r->cap_names = 0;
	r->slots = NULL;
	r->nslots = r->nused = 0;
}

static int rd(struct py_resolver *r, uint64_t addr, void *buf, size_t len)
{
	r->reads++;
	return mem_read(r->mem, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, int off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* u64_at for a field some versions lack (PY_OFF_NONE): 0 there. */
static uint64_t opt_u64_at(const uint8_t *b, int off)
{
	return off == PY_OFF_NONE ? 0 : u64_at(b, off);
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp > 0x10ffff)
		cp = 0xfffd;
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A str object as a malloc'ed UTF-8 string, or NULL. Only compact strings
 * (all that code objects hold: they are created once and never resized)
 * are read; the others give NULL. */
static char *read_str(struct py_resolver *r, uint64_t obj)
{
	const struct py_layout *l = r->rt->layout;
	uint8_t hdr[256];
	uint32_t state;
	int64_t length;
	unsigned kind;
	uint8_t *raw;
	char *out;
	size_t o = 0;

	if (!obj || (obj & 7) || (size_t)l->unicode_compact_size > sizeof(hdr) ||
	    rd(r, obj, hdr, (size_t)l->unicode_ascii_size))
		return NULL;
	memcpy(&state, hdr + l->unicode_state, 4);
	memcpy(&length, hdr + l->unicode_length, 8);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || length < 0 || length > PY_MAX_STR ||
	    (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if ((state >> 6) & 1) {		/* compact ASCII */
		out = malloc((size_t)length + 1);
		if (!out)
			return NULL;
		if (rd(r, obj + (uint64_t)l->unicode_ascii_size, out,
		       (size_t)length)) {
			free(out);
			return NULL;
		}
		out[length] = '\0';
		for (int64_t i = 0; i < length; i++)
			if ((unsigned char)out[i] >= 0x80 || !out[i])
				out[i] = '?';
		return out;
	}
	raw = malloc((size_t)length * kind + 1);
	out = malloc((size_t)length * 4 + 1);
	if (!raw || !out ||
	    rd(r, obj + (uint64_t)l->unicode_compact_size, raw,
	       (size_t)length * kind)) {
		free(raw);
		free(out);
		return NULL;
	}
	for (int64_t i = 0; i < length; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = raw[i];
		} else if (kind == 2) {
			uint16_t v;
			memcpy(&v, raw + 2 * i, 2);
			cp = v;
		} else {
			memcpy(&cp, raw + 4 * i, 4);
		}
		o += put_utf8(out + o, cp ? cp : '?');
	}
	out[o] = '\0';
	free(raw);
	return out;
}

/* A bytes object's contents, malloc'ed. */
static int read_bytes(struct py_resolver *r, uint64_t obj, uint8_t **out,
		      size_t *len)
{
	const struct py_layout *l = r->rt->layout;
	int64_t size;

	*out = NULL;
	*len = 0;
	if (!obj || (obj & 7) || rd(r, obj + (uint64_t)l->bytes_size, &size, 8))
		return -EFAULT;
	if (size < 0 || size > PY_MAX_LINETABLE)
		return -EINVAL;
	*out = malloc((size_t)size + 1);
	if (!*out)
		return -ENOMEM;
	if (size && rd(r, obj + (uint64_t)l->bytes_data, *out, (size_t)size)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	*len = (size_t)size;
	return 0;
}

/* Whether obj's type is PyCode_Type: its address where the image exports
 * it (a core may not hold the read-only tp_name string), else the type's
 * tp_name is "code". The first code type seen is remembered, so the name
 * is read once. */
static bool is_code(struct py_resolver *r, const uint8_t *co)
{
	const struct py_layout *l = r->rt->layout;
	uint64_t type = u64_at(co, l->ob_type), name;
	char buf[5];

	if (r->rt->code_type)
		return type == r->rt->code_type;
	if (r->code_type)
		return type == r->code_type;
	if (!type || rd(r, type + (uint64_t)l->type_name, &name, 8) || !name ||
	    rd(r, name, buf, sizeof(buf)) || memcmp(buf, "code", 5) != 0)
		return false;
	r->code_type = type;
	return true;
}

static struct py_code *load_code(struct py_resolver *r, uint64_t addr)
{
	const struct py_layout *l = r->rt->layout;
	struct py_code *c = calloc(1, sizeof(*c));
	uint8_t co[512];

	if (!c)
		return NULL;
	c->addr = addr;
	if ((size_t)l->code_size > sizeof(co) || !addr || (addr & 7) ||
	    rd(r, addr, co, (size_t)l->code_size) || !is_code(r, co))
		return c;
	memcpy(&c->firstlineno, co + l->code_firstlineno, 4);
	c->firsttraceable = -1;
	if (l->code_firsttraceable != PY_OFF_NONE)
		memcpy(&c->firsttraceable, co + l->code_firsttraceable, 4);
	c->qualname_obj = opt_u64_at(co, l->code_qualname);
	c->file_obj = u64_at(co, l->code_filename);
	c->linetable_obj = u64_at(co, l->code_linetable);
	if (l->code_qualname != PY_OFF_NONE)
		c->qualname = read_str(r, c->qualname_obj);
	c->name = read_str(r, u64_at(co, l->code_name));
	c->file = read_str(r, u64_at(co, l->code_filename));
	if (!c->qualname && c->name)
		c->qualname = strdup(c->name);
	if (!c->name && c->qualname)
		c->name = strdup(c->qualname);
	if (!c->file)
		c->file = strdup("?");
	read_bytes(r, u64_at(co, l->code_linetable), &c->linetable,
		   &c->linetable_len);
	c->ok = c->qualname && c->name && c->file;
	return c;
}

static size_t slot_of(uint64_t addr, size_t nslots)
{
	return (size_t)((addr >> 3) * 0x9e3779b97f4a7c15ull >> 20) &
	       (nslots - 1);
}

/* Whether the code object at c->addr is still the one c was read from:
 * the same type, first line and name, file and line table objects. */
static bool code_unchanged(struct py_resolver *r, const struct py_code *c)
{
	const struct py_layout *l = r->rt->layout;
	uint8_t co[512];
	int firstlineno;

	if (!c->ok || (size_t)l->code_size > sizeof(co) ||
	    rd(r, c->addr, co, (size_t)l->code_size) || !is_code(r, co))
		return false;
	memcpy(&firstlineno, co + l->code_firstlineno, 4);
	return firstlineno == c->firstlineno &&
	       opt_u64_at(co, l->code_qualname) == c->qualname_obj &&
	       u64_at(co, l->code_filename) == c->file_obj &&
	       u64_at(co, l->code_linetable) == c->linetable_obj;
}

/* r->slots[i], read again when it is no longer what is at its address
 * (r->recheck); NULL on -ENOMEM. */
static struct py_code *code_checked(struct py_resolver *r, size_t i)
{
	struct py_code *c = r->slots[i], *fresh, **grown;

	if (!r->recheck || code_unchanged(r, c))
		return c;
	if (!c->ok) {
		/* No frame points at an unread entry's names: replaced. */
		if (!(fresh = load_code(r, c->addr)))
			return NULL;
		code_free(c);
		return r->slots[i] = fresh;
	}
	grown = realloc(r->retired, (r->nretired + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	r->retired = grown;
	if (!(fresh = load_code(r, c->addr)))
		return NULL;
	r->retired[r->nretired++] = c;
	r->slots[i] = fresh;
	return fresh;
}

/* The cached code object at addr, read on first use; NULL on -ENOMEM. */
static struct py_code *code_at(struct py_resolver *r, uint64_t addr)
{
	size_t i;

	if (r->nused * 2 >= r->nslots) {
		size_t n = r->nslots ? r->nslots * 2 : 64;
		struct py_code **s = calloc(n, sizeof(*s));

		if (!s)
			return NULL;
		for (size_t k = 0; k < r->nslots; k++) {
			struct py_code *c = r->slots[k];

			if (!c)
				continue;
			for (i = slot_of(c->addr, n); s[i]; i = (i + 1) & (n - 1))
				;
			s[i] = c;
		}
		free(r->slots);
		r->slots = s;
		r->nslots = n;
	}
	for (i = slot_of(addr, r->nslots); r->slots[i];
	     i = (i + 1) & (r->nslots - 1))
		if (r->slots[i]->addr == addr)
			return code_checked(r, i);
	r->slots[i] = load_code(r, addr);
	if (r->slots[i])
		r->nused++;
	return r->slots[i];
}

int py_resolve__thread(struct py_resolver *r, const struct py_capture *cap,
		       const struct py_raw_thread *t, struct py_frame **out,
		       size_t *n, const char **end)
{
	const struct py_layout *l = r->rt->layout;
	struct py_frame *frames;
	size_t nf = 0;

	*out = NULL;
	*n = 0;
	*end = NULL;
	if (!t->nframes)
		return 0;
	frames = calloc(t->nframes, sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	for (size_t i = 0; i < t->nframes; i++) {
		const struct py_raw_frame *rf = &cap->frames[t->first + i];
		struct py_code *c;
		struct py_frame *f;
		int64_t lasti;
		int line = -1;

		/* 3.12+: the eval loop's entry shim ends the frames of the C
		   call before it; CPython never shows it. */
		if (l->owner_cstack != PY_OFF_NONE && rf->owner == l->owner_cstack) {
			if (nf)
				frames[nf - 1].entry = true;
			continue;
		}
		c = code_at(r, rf->code);
		if (!c) {
			free(frames);
			return -ENOMEM;
		}
		if (!c->ok && r->keep_unknown) {
			/* Named after the capture: freed since, perhaps. */
			f = &frames[nf++];
			f->function = f->name = "<unknown code object>";
			f->file = "?";
			f->code = rf->code;
			f->lasti = -2;
			f->entry = rf->is_entry;
			continue;
		}
		if (!c->ok) {
			*end = "code object unreadable";
			break;
		}
		/* _PyInterpreterFrame_LASTI: code units from the first
		   instruction; prev_instr starts one unit before it. Before
		   3.11 f_lasti itself, in bytes or (3.10) code units, -1
		   before the first instruction. */
		if (l->frame_lasti != PY_OFF_NONE) {
			int64_t li = (int64_t)rf->instr;

			lasti = li < 0 ? -1 : li * l->lasti_unit / 2;
		} else {
			uint64_t first = rf->code + (uint64_t)l->code_adaptive;

			lasti = ((int64_t)(rf->instr - first)) / 2;
		}
		if (lasti < -1 || lasti > (1 << 28))
			lasti = -1;
		/* _PyFrame_IsIncomplete: a frame still running its prologue
		   (before RESUME); tracebacks and sys._getframe skip it. */
		if (c->firsttraceable >= 0 && rf->owner != l->owner_generator &&
		    lasti < c->firsttraceable) {
			if (rf->is_entry && nf)
				frames[nf - 1].entry = true;
			continue;
		}
		f = &frames[nf++];
		f->function = c->qualname;
		f->name = c->name;
		f->file = c->file;
		f->code = rf->code;
		f->lasti = lasti < 0 ? -2 : (int)(lasti * 2);
		f->entry = rf->is_entry;
		if (py_linetable__line_of((enum py_lines)l->linetable_kind,
					  c->linetable, c->linetable_len,
					  c->firstlineno,
					  lasti < 0 ? -1 : (int)(lasti * 2),
					  &line) == 0 && line > 0)
			f->line = (unsigned)line;
	}
	/* The outermost frame of a thread ends its outermost C call. */
	if (nf && !*end)
		frames[nf - 1].entry = true;
	*out = frames;
	*n = nf;
	return 0;
}

int py_resolve__tid(struct py_resolver *r, const struct py_capture *cap,
		    uint64_t tid, struct py_frame **out, size_t *n,
		    const char **end, bool *holds_gil)
{
	struct py_frame *all = NULL;
	size_t nall = 0;

	*out = NULL;
	*n = 0;
	*end = NULL;
	*holds_gil = false;
	for (size_t i = 0; i < cap->nthreads; i++) {
		const struct py_raw_thread *t = &cap->threads[i];
		struct py_frame *f, *grown;
		const char *e;
		size_t nf;
		int err;

		if (t->native_tid != tid)
			continue;
		*holds_gil |= t->holds_gil;
		if (*end)
			continue;	/* frames past a cut would be misplaced */
		err = py_resolve__thread(r, cap, t, &f, &nf, &e);
		if (err) {
			free(all);
			return err;
		}
		grown = nf ? realloc(all, (nall + nf) * sizeof(*all)) : all;
		if (nf && !grown) {
			free(f);
			free(all);
			return -ENOMEM;
		}
		all = grown;
		if (nf)
			memcpy(all + nall, f, nf * sizeof(*f));
		nall += nf;
		free(f);
		*end = e ? e : t->end;
	}
	*out = all;
	*n = nall;
	return 0;
}

#define PY_TPFLAGS_MANAGED_DICT (1ul << 4)	/* 3.11, 3.12 */
#define PY_MAX_ATTRS 1024			/* entries of a keys object */

/* The value of the attribute called attr of obj, an instance whose
 * attributes live in a managed dict (3.11, 3.12: a values array shared
 * with its type's keys, or a dict once materialized). 0 when not found. */
static uint64_t managed_attr(struct py_resolver *r, uint64_t obj, const char *attr)
{
	const struct py_layout *l = r->rt->layout;
	uint64_t type, flags, values, dict, keys, vals;
	uint8_t kh[32], *entries;
	int64_t nentries;
	size_t esize, koff, voff;
	uint64_t found = 0;

	if (!obj || (obj & 7) || rd(r, obj + (uint64_t)l->ob_type, &type, 8) ||
	    !type || rd(r, type + (uint64_t)l->type_flags, &flags, 8) ||
	    !(flags & PY_TPFLAGS_MANAGED_DICT) ||
	    rd(r, obj + (uint64_t)(int64_t)l->managed_dict, &dict, 8))
		return 0;
	if (l->managed_values != PY_OFF_NONE) {
		if (rd(r, obj + (uint64_t)(int64_t)l->managed_values, &values, 8))
			return 0;
	} else if (dict & 1) {	/* 3.12: the values array, tagged */
		values = dict + 1;
		dict = 0;
	} else {
		values = 0;
	}
	if (dict) {
		if (rd(r, dict + (uint64_t)l->dict_keys, &keys, 8) ||
		    rd(r, dict + (uint64_t)l->dict_values, &vals, 8))
			return 0;
	} else {
		if (!values || rd(r, type + (uint64_t)l->type_cached_keys, &keys, 8))
			return 0;
		vals = values;
	}
	if (!keys || rd(r, keys, kh, sizeof(kh)))
		return 0;
	memcpy(&nentries, kh + 24, 8);
	if (kh[9] > 20 || nentries <= 0 || nentries > PY_MAX_ATTRS)
		return 0;
	esize = kh[10] == 0 ? 24 : 16;	/* DICT_KEYS_GENERAL: with hashes */
	koff = kh[10] == 0 ? 8 : 0;
	voff = koff + 8;
	entries = malloc((size_t)nentries * esize);
	if (!entries)
		return 0;
	if (rd(r, keys + 32 + (1ull << kh[9]), entries, (size_t)nentries * esize)) {
		free(entries);
		return 0;
	}
	for (int64_t i = 0; i < nentries && !found; i++) {
		uint64_t key = u64_at(entries, (int)(i * (int64_t)esize + (int64_t)koff));
		char *name = key ? read_str(r, key) : NULL;

		if (name && !strcmp(name, attr)) {
			if (vals)
				rd(r, vals + 8 * (uint64_t)i, &found, 8);
			else
				found = u64_at(entries, (int)(i * (int64_t)esize + (int64_t)voff));
		}
		free(name);
	}
	free(entries);
	return found;
}

/* The value of the attribute called attr of obj, an instance whose
 * attributes live in its __dict__ at tp_dictoffset (before 3.11): a dict
 * whose keys object holds dk_nentries 24-byte entries (hash, key, value)
 * after dk_size indexes of 1, 2, 4 or 8 bytes; a split dict (instances of
 * one class share the keys) keeps the values in ma_values instead. 0 when
 * not found. */
static uint64_t dict_attr(struct py_resolver *r, uint64_t obj, const char *attr)
{
	const struct py_layout *l = r->rt->layout;
	uint64_t type, dict, keys, vals, found = 0;
	int64_t dictoff, dk_size, nentries;
	uint8_t *entries;
	size_t ix;

	if (!obj || (obj & 7) || rd(r, obj + (uint64_t)l->ob_type, &type, 8) ||
	    !type || rd(r, type + (uint64_t)l->type_dictoffset, &dictoff, 8) ||
	    dictoff <= 0 || dictoff > 4096 ||
	    rd(r, obj + (uint64_t)dictoff, &dict, 8) || !dict || (dict & 7) ||
	    rd(r, dict + (uint64_t)l->dict_keys, &keys, 8) ||
	    rd(r, dict + (uint64_t)l->dict_values, &vals, 8) || !keys ||
	    rd(r, keys + (uint64_t)l->dictkeys_size, &dk_size, 8) ||
	    rd(r, keys + (uint64_t)l->dictkeys_nentries, &nentries, 8))
		return 0;
	if (dk_size <= 0 || dk_size > (1 << 20) || (dk_size & (dk_size - 1)) ||
	    nentries <= 0 || nentries > PY_MAX_ATTRS || nentries > dk_size)
		return 0;
	ix = dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2 : 4;
	entries = malloc((size_t)nentries * 24);
	if (!entries)
		return 0;
	if (rd(r, keys + (uint64_t)l->dictkeys_indices + (uint64_t)dk_size * ix,
	       entries, (size_t)nentries * 24)) {
		free(entries);
		return 0;
	}
	for (int64_t i = 0; i < nentries && !found; i++) {
		uint64_t key = u64_at(entries, (int)(i * 24 + 8));
		char *name = key ? read_str(r, key) : NULL;

		if (name && !strcmp(name, attr)) {
			if (vals)
				rd(r, vals + 8 * (uint64_t)i, &found, 8);
			else
				found = u64_at(entries, (int)(i * 24 + 16));
		}
		free(name);
	}
	free(entries);
	return found;
}

/* Whether code object c is threading.Thread._bootstrap (before 3.11, with
 * no qualified name: _bootstrap of a threading.py). */
static bool is_bootstrap(const struct py_code *c)
{
	size_t n = strlen(c->file);

	if (!strcmp(c->qualname, "Thread._bootstrap"))
		return true;
	return !strcmp(c->qualname, "_bootstrap") && n >= 12 &&
	       !strcmp(c->file + n - 12, "threading.py");
}

const char *py_resolve__thread_name(struct py_resolver *r,
				    const struct py_capture *cap,
				    const struct py_raw_thread *t)
{
	const struct py_layout *l = r->rt->layout;
	const struct py_raw_frame *f;
	struct py_code *c;
	uint64_t name_obj;
	char *name, **grown;

	if (!t->nframes || l->frame_localsplus == PY_OFF_NONE ||
	    l->type_flags == PY_OFF_NONE)
		return NULL;
	/* The outermost frame, past 3.12+'s C-stack shim. */
	f = &cap->frames[t->first + t->nframes - 1];
	if (l->owner_cstack != PY_OFF_NONE && f->owner == l->owner_cstack) {
		if (t->nframes < 2)
			return NULL;
		f--;
	}
	c = code_at(r, f->code);
	if (!c || !c->ok || !is_bootstrap(c))
		return NULL;
	name_obj = l->type_dictoffset != PY_OFF_NONE
			   ? dict_attr(r, f->local0, "_name")
			   : managed_attr(r, f->local0, "_name");
	if (!name_obj || !(name = read_str(r, name_obj)))
		return NULL;
	if (r->nnames == r->cap_names) {
		size_t n = r->cap_names ? 2 * r->cap_names : 16;

		grown = realloc(r->names, n * sizeof(*grown));
		if (!grown) {
			free(name);
			return NULL;
		}
		r->names = grown;
		r->cap_names = n;
	}
	r->names[r->nnames++] = name;
	return name;
}

const char *py_resolve__tid_name(struct py_resolver *r,
				 const struct py_capture *cap, uint64_t tid)
{
	for (size_t k = cap->nthreads; k-- > 0;)
		if (cap->threads[k].native_tid == tid)
			return py_resolve__thread_name(r, cap, &cap->threads[k]);
	return NULL;
}
