/* hotspot_threads.c - the Java names of a JVM's threads, read as the
 * Serviceability Agent reads them: the VM's list of JavaThreads
 * (ThreadsSMRSupport::_java_thread_list), each one's OS thread id and
 * java.lang.Thread object (_threadObj), the object's `name` String and
 * the String's bytes (compact strings: byte[] value and coder), with
 * the field offsets found in the classes' own field tables and
 * references decoded as the JVM's flags say (compressed oops). */
#define _GNU_SOURCE
#include "runtime/java/hotspot_threads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

#define FIELD(var, type, name)                                               \
	do {                                                                 \
		const struct hotspot_field *f_ =                             \
			hotspot_structs__field(hs, type, name);              \
		if (!f_)                                                     \
			return -ENOENT;                                      \
		var = f_->is_static ? f_->address : f_->offset;              \
	} while (0)

/* JVMFlags a JVM may have, at most; a thread list's length. */
#define HOTSPOT_MAX_FLAGS 4096
#define HOTSPOT_MAX_THREADS 100000

static int rd(struct stacksnap_mem *mem, uint64_t addr, void *v, size_t n)
{
	return mem_read(mem, addr, v, n) ? -EFAULT : 0;
}

/* The first byte of a JVM flag's value (JVMFlag::flags, by name): a
 * bool, or an int flag's low byte. */
static int flag_byte(struct hotspot_threads *ht, const char *name, uint8_t *out)
{
	uint64_t flags, nflags;
	size_t want = strlen(name) + 1;

	if (rd(ht->mem, ht->flags_addr, &flags, 8) ||
	    rd(ht->mem, ht->nflags_addr, &nflags, 8))
		return -EFAULT;
	if (nflags > HOTSPOT_MAX_FLAGS)
		return -EPROTO;
	for (uint64_t i = 0; i < nflags; i++) {
		uint64_t e = flags + i * ht->flag_size, np, addr;
		char buf[64];
		uint8_t v;

		if (rd(ht->mem, e + ht->flag_name, &np, 8) || !np ||
		    rd(ht->mem, np, buf, want))
			continue;
		if (memcmp(buf, name, want))
			continue;
		if (rd(ht->mem, e + ht->flag_addr, &addr, 8) || rd(ht->mem, addr, &v, 1))
			return -EFAULT;
		*out = v;
		return 0;
	}
	return -ENOENT;
}

/* A bool JVM flag's value. */
static int flag_bool(struct hotspot_threads *ht, const char *name, bool *out)
{
	uint8_t v;
	int err = flag_byte(ht, name, &v);

	if (!err)
		*out = v != 0;
	return err;
}

int hotspot_threads__init(struct hotspot_threads *ht, const struct hotspot_structs *hs,
			  struct hotspot_code *hc)
{
	int64_t v;
	const struct hotspot_type *t;

	memset(ht, 0, sizeof(*ht));
	ht->hc = hc;
	ht->mem = hc->mem;
	FIELD(ht->thread_list, "ThreadsSMRSupport", "_java_thread_list");
	FIELD(ht->tl_length, "ThreadsList", "_length");
	FIELD(ht->tl_threads, "ThreadsList", "_threads");
	/* JavaThread::_osthread (JDK 17), Thread::_osthread (25). */
	FIELD(ht->jt_osthread, hotspot_structs__field(hs, "JavaThread", "_osthread") ?
	      "JavaThread" : "Thread", "_osthread");
	FIELD(ht->jt_thread_obj, "JavaThread", "_threadObj");
	FIELD(ht->handle_obj, "OopHandle", "_obj");
	FIELD(ht->os_thread_id, "OSThread", "_thread_id");
	FIELD(ht->thread_klass,
	      "vmClasses", "_klasses[static_cast<int>(vmClassID::Thread_klass_knum)]");
	FIELD(ht->string_klass,
	      "vmClasses", "_klasses[static_cast<int>(vmClassID::String_klass_knum)]");
	FIELD(ht->ik_constants, "InstanceKlass", "_constants");
	FIELD(ht->klass_name, "Klass", "_name");
	{
		const struct hotspot_field *vt =
			hotspot_structs__field(hs, "JavaThread", "_vthread");
		const struct hotspot_field *b =
			hotspot_structs__field(hs, "CompressedKlassPointers", "_base");
		const struct hotspot_field *sh =
			hotspot_structs__field(hs, "CompressedKlassPointers", "_shift");

		/* JDK 17: CompressedKlassPointers::_narrow_klass._base. */
		if (!b)
			b = hotspot_structs__field(hs, "CompressedKlassPointers",
						   "_narrow_klass._base");
		if (!sh)
			sh = hotspot_structs__field(hs, "CompressedKlassPointers",
						    "_narrow_klass._shift");
		if (b && b->is_static && sh && sh->is_static) {
			ht->ck_base = b->address;
			ht->ck_shift = sh->address;
			if (vt && !vt->is_static)
				ht->jt_vthread = vt->offset;
		}
	}
	/* CompressedOops::_base (JDK 25), _narrow_oop._base (17). */
	FIELD(ht->oop_base, "CompressedOops",
	      hotspot_structs__field(hs, "CompressedOops", "_base") ? "_base"
								   : "_narrow_oop._base");
	FIELD(ht->oop_shift, "CompressedOops",
	      hotspot_structs__field(hs, "CompressedOops", "_shift") ? "_shift"
								    : "_narrow_oop._shift");
	/* Compact object headers (optional: JDK 24+). */
	{
		const struct hotspot_field *h =
			hotspot_structs__field(hs, "ObjectMonitor", "_metadata");

		if (!h)
			h = hotspot_structs__field(hs, "ObjectMonitor", "_header");
		if (hotspot_structs__constant(hs, "markWord::klass_shift",
					      &ht->mark_klass_shift) &&
		    h && !h->is_static) {
			ht->om_header = h->offset;
			ht->om_header_ok = true;
		}
	}
	FIELD(ht->flags_addr, "JVMFlag", "flags");
	FIELD(ht->nflags_addr, "JVMFlag", "numFlags");
	FIELD(ht->flag_addr, "JVMFlag", "_addr");
	FIELD(ht->flag_name, "JVMFlag", "_name");
	if (!(t = hotspot_structs__type(hs, "JVMFlag")) || !t->size)
		return -ENOENT;
	ht->flag_size = t->size;
	if (hotspot_structs__field(hs, "InstanceKlass", "_fieldinfo_stream")) {
		FIELD(ht->ik_fieldinfo_stream, "InstanceKlass", "_fieldinfo_stream");
		FIELD(ht->u2_data, "Array<u1>", "_data");
		if (!hotspot_structs__constant(hs, "FieldInfo::FieldFlags::_ff_initialized",
					       &ht->ff_initialized) ||
		    !hotspot_structs__constant(hs, "FieldInfo::FieldFlags::_ff_generic",
					       &ht->ff_generic) ||
		    !hotspot_structs__constant(hs, "FieldInfo::FieldFlags::_ff_contended",
					       &ht->ff_contended))
			return -ENOENT;
		if (ht->ff_initialized < 0 || ht->ff_initialized > 31 ||
		    ht->ff_generic < 0 || ht->ff_generic > 31 ||
		    ht->ff_contended < 0 || ht->ff_contended > 31)
			return -EPROTO;
		return 0;
	}
	FIELD(ht->ik_fields, "InstanceKlass", "_fields");
	FIELD(ht->ik_java_fields, "InstanceKlass", "_java_fields_count");
	FIELD(ht->u2_data, "Array<u2>", "_data");
	if (!hotspot_structs__constant(hs, "FieldInfo::field_slots", &ht->fi_slots) ||
	    !hotspot_structs__constant(hs, "FieldInfo::name_index_offset", &ht->fi_name) ||
	    !hotspot_structs__constant(hs, "FieldInfo::signature_index_offset", &ht->fi_sig) ||
	    !hotspot_structs__constant(hs, "FieldInfo::low_packed_offset", &ht->fi_low) ||
	    !hotspot_structs__constant(hs, "FieldInfo::high_packed_offset", &ht->fi_high) ||
	    !hotspot_structs__constant(hs, "FIELDINFO_TAG_SIZE", &ht->tag_size) ||
	    !hotspot_structs__constant(hs, "FIELDINFO_TAG_OFFSET", &v))
		return -ENOENT;
	ht->tag_offset = v;
	if (ht->fi_slots <= 0 || ht->fi_slots > 16 || ht->tag_size < 0 || ht->tag_size > 8)
		return -EPROTO;
	return 0;
}

/* Whether the Symbol at index idx of pool cp (length cp_len) is text. */
static bool pool_symbol_is(struct hotspot_threads *ht, uint64_t cp, int32_t cp_len,
			   uint32_t idx, const char *text)
{
	char buf[64];
	uint64_t sym;

	return idx && idx < (uint32_t)cp_len &&
	       !rd(ht->mem, cp + ht->hc->cp_size + 8 * (uint64_t)idx, &sym, 8) &&
	       !hotspot_code__symbol(ht->hc, sym, buf, sizeof(buf)) &&
	       !strcmp(buf, text);
}

/* JDK 21+: the field's offset from the class's FieldInfo stream. */
static int field_offset_stream(struct hotspot_threads *ht, uint64_t ik,
			       uint64_t cp, int32_t cp_len, const char *name,
			       const char *sig, uint64_t *off)
{
	uint64_t arr, at, end;
	int32_t len;
	uint32_t njava, ninjected;

	if (rd(ht->mem, ik + ht->ik_fieldinfo_stream, &arr, 8) || !arr ||
	    rd(ht->mem, arr, &len, 4))
		return -EFAULT;
	if (len <= 0 || len > (1 << 24))
		return -EPROTO;
	at = arr + ht->u2_data;
	end = at + (uint64_t)len;
	if (hotspot_code__unsigned5(ht->hc, &at, &njava) ||
	    hotspot_code__unsigned5(ht->hc, &at, &ninjected))
		return -EFAULT;
	if (njava > 65535)
		return -EPROTO;
	for (uint32_t i = 0; i < njava && at < end; i++) {
		uint32_t v[5], extra;

		for (int k = 0; k < 5; k++)
			if (hotspot_code__unsigned5(ht->hc, &at, &v[k]))
				return -EFAULT;
		/* name, signature, offset, access flags, field flags */
		for (int64_t bit = 0; bit < 32; bit++) {
			if (!(v[4] & (1u << bit)) ||
			    (bit != ht->ff_initialized && bit != ht->ff_generic &&
			     bit != ht->ff_contended))
				continue;
			if (hotspot_code__unsigned5(ht->hc, &at, &extra))
				return -EFAULT;
		}
		if (pool_symbol_is(ht, cp, cp_len, v[0], name) &&
		    pool_symbol_is(ht, cp, cp_len, v[1], sig)) {
			*off = v[2];
			return 0;
		}
	}
	return -ENOENT;
}

int hotspot_threads__field_offset(struct hotspot_threads *ht, uint64_t ik,
				  const char *name, const char *sig, uint64_t *off)
{
	struct hotspot_code *hc = ht->hc;
	uint64_t fields, cp;
	uint16_t n;
	int32_t len, cp_len;

	if (!ik)
		return -EFAULT;
	if (ht->ik_fieldinfo_stream) {
		if (rd(ht->mem, ik + ht->ik_constants, &cp, 8) ||
		    rd(ht->mem, cp + hc->cp_length, &cp_len, 4))
			return -EFAULT;
		return field_offset_stream(ht, ik, cp, cp_len, name, sig, off);
	}
	if (rd(ht->mem, ik + ht->ik_fields, &fields, 8) ||
	    rd(ht->mem, ik + ht->ik_java_fields, &n, 2) ||
	    rd(ht->mem, ik + ht->ik_constants, &cp, 8) ||
	    rd(ht->mem, fields, &len, 4) ||
	    rd(ht->mem, cp + hc->cp_length, &cp_len, 4))
		return -EFAULT;
	if (len < 0 || (int64_t)n * ht->fi_slots > len)
		return -EPROTO;
	for (uint16_t i = 0; i < n; i++) {
		uint16_t fi[16];
		char fname[64], fsig[64];
		uint64_t nsym, ssym;

		if (rd(ht->mem, fields + ht->u2_data + 2 * (uint64_t)i * ht->fi_slots,
		       fi, 2 * (size_t)ht->fi_slots))
			return -EFAULT;
		if (!fi[ht->fi_name] || fi[ht->fi_name] >= cp_len ||
		    !fi[ht->fi_sig] || fi[ht->fi_sig] >= cp_len)
			continue; /* an injected field: a VM symbol's index */
		if (rd(ht->mem, cp + hc->cp_size + 8 * (uint64_t)fi[ht->fi_name], &nsym, 8) ||
		    rd(ht->mem, cp + hc->cp_size + 8 * (uint64_t)fi[ht->fi_sig], &ssym, 8) ||
		    hotspot_code__symbol(hc, nsym, fname, sizeof(fname)) ||
		    strcmp(fname, name) ||
		    hotspot_code__symbol(hc, ssym, fsig, sizeof(fsig)) || strcmp(fsig, sig))
			continue;
		uint32_t packed = (uint32_t)fi[ht->fi_high] << 16 | fi[ht->fi_low];

		if ((packed & ((1u << ht->tag_size) - 1)) != (uint32_t)ht->tag_offset)
			return -EPROTO;
		*off = packed >> ht->tag_size;
		return 0;
	}
	return -ENOENT;
}

/* The offset of an instance field (name, signature) of the class at
 * *klass_addr (a vmClasses static). */
static int field_offset(struct hotspot_threads *ht, uint64_t klass_addr,
			const char *name, const char *sig, uint64_t *off)
{
	uint64_t ik;

	if (rd(ht->mem, klass_addr, &ik, 8) || !ik)
		return -EFAULT;
	return hotspot_threads__field_offset(ht, ik, name, sig, off);
}

/* What reading names needs once per JVM: the reference width and
 * decoding, the array header, the field offsets. */
int hotspot_threads__prepare(struct hotspot_threads *ht)
{
	bool ccp = false;
	int32_t shift = 0;

	if (ht->prepared)
		return ht->prepare_err;
	ht->prepared = true;
	ht->prepare_err = -EPROTO;
	if (flag_bool(ht, "UseCompressedOops", &ht->compressed_oops) ||
	    flag_bool(ht, "UseCompressedClassPointers", &ccp) ||
	    rd(ht->mem, ht->oop_base, &ht->narrow_base, 8) ||
	    rd(ht->mem, ht->oop_shift, &shift, 4) || shift < 0 || shift > 8)
		return ht->prepare_err;
	ht->narrow_shift = shift;
	ht->ccp = ccp;
	/* Compact object headers (JDK 24+) keep the narrow klass in the
	   mark word's high bits (markWord::klass_shift): read there, and
	   from the displaced mark of an inflated monitor without the
	   ObjectMonitorTable. */
	{
		bool compact = false, table = false;

		if (flag_bool(ht, "UseCompactObjectHeaders", &compact))
			compact = false;
		if (flag_bool(ht, "UseObjectMonitorTable", &table))
			table = false;
		ht->compact = compact;
		ht->monitor_table = table;
		ht->klass_read = ht->ck_base &&
				 (!compact || (ht->mark_klass_shift > 0 &&
					       ht->mark_klass_shift < 64 && ht->om_header_ok));
		ht->klass_ok = ht->jt_vthread && ht->klass_read;
	}
	/* arrayOopDesc: the mark word, the klass (narrow: 4 bytes; none with
	   compact headers), the length; the elements from the next 8-byte
	   boundary for bytes (compact headers: right after the length). */
	ht->array_length = ht->compact ? 8 : ccp ? 12 : 16;
	ht->array_data = ht->compact ? 12 : ccp ? 16 : 24;
	if (field_offset(ht, ht->thread_klass, "name", "Ljava/lang/String;",
			 &ht->thread_name) ||
	    field_offset(ht, ht->string_klass, "value", "[B", &ht->string_value) ||
	    field_offset(ht, ht->string_klass, "coder", "B", &ht->string_coder))
		return ht->prepare_err;
	ht->prepare_err = 0;
	return 0;
}

int hotspot_threads__read_ref(struct hotspot_threads *ht, uint64_t addr, uint64_t *ref)
{
	uint32_t narrow;

	if (!ht->compressed_oops)
		return rd(ht->mem, addr, ref, 8);
	if (rd(ht->mem, addr, &narrow, 4))
		return -EFAULT;
	*ref = narrow ? ht->narrow_base + ((uint64_t)narrow << ht->narrow_shift) : 0;
	return 0;
}

/* Appends code point c as UTF-8. */
static size_t put_utf8(char *out, size_t at, size_t cap, uint32_t c)
{
	if (c < 0x80 && at + 1 < cap) {
		out[at++] = (char)c;
	} else if (c < 0x800 && at + 2 < cap) {
		out[at++] = (char)(0xc0 | c >> 6);
		out[at++] = (char)(0x80 | (c & 0x3f));
	} else if (c >= 0x800 && at + 3 < cap) {
		out[at++] = (char)(0xe0 | c >> 12);
		out[at++] = (char)(0x80 | (c >> 6 & 0x3f));
		out[at++] = (char)(0x80 | (c & 0x3f));
	}
	return at;
}

/* A java.lang.String's text as UTF-8 (cut to fit), from its value array
 * by its coder: LATIN1 bytes or UTF-16 units (a surrogate as '?'). */
static int read_string(struct hotspot_threads *ht, uint64_t str, char *out,
		       size_t cap)
{
	uint64_t value;
	int32_t len;
	uint8_t coder, bytes[HOTSPOT_MAX_THREAD_NAME * 2];
	size_t at = 0, n;

	if (hotspot_threads__read_ref(ht, str + ht->string_value, &value) || !value ||
	    rd(ht->mem, str + ht->string_coder, &coder, 1) ||
	    rd(ht->mem, value + ht->array_length, &len, 4))
		return -EFAULT;
	if (len < 0 || coder > 1)
		return -EPROTO;
	n = (size_t)len < sizeof(bytes) ? (size_t)len : sizeof(bytes);
	if (n && rd(ht->mem, value + ht->array_data, bytes, n))
		return -EFAULT;
	for (size_t i = 0; coder == 0 && i < n; i++)
		at = put_utf8(out, at, cap, bytes[i]);
	for (size_t i = 0; coder == 1 && i + 1 < n; i += 2) {
		uint32_t u = bytes[i] | (uint32_t)bytes[i + 1] << 8;

		at = put_utf8(out, at, cap, u >= 0xd800 && u < 0xe000 ? '?' : u);
	}
	out[at] = 0;
	return 0;
}

int hotspot_threads__klass(struct hotspot_threads *ht, uint64_t obj, uint64_t *klass)
{
	uint64_t base;
	uint32_t narrow;
	int32_t shift;

	*klass = 0;
	if (!ht->klass_read)
		return -ENOTSUP;
	if (ht->compact) {
		uint64_t mark;

		if (rd(ht->mem, obj, &mark, 8))
			return -EFAULT;
		/* An inflated monitor's mark points at it (lock bits 10); its
		   header keeps the object's mark. */
		if ((mark & 3) == 2 && !ht->monitor_table &&
		    rd(ht->mem, (mark & ~3ull) + ht->om_header, &mark, 8))
			return -EFAULT;
		if ((mark & 3) == 2 && !ht->monitor_table)
			return -EPROTO;
		if (rd(ht->mem, ht->ck_base, &base, 8) ||
		    rd(ht->mem, ht->ck_shift, &shift, 4) || shift < 0 || shift > 32)
			return -EFAULT;
		narrow = (uint32_t)(mark >> ht->mark_klass_shift);
		*klass = narrow ? base + ((uint64_t)narrow << shift) : 0;
		return *klass ? 0 : -EFAULT;
	}
	if (ht->ccp) {
		if (rd(ht->mem, obj + 8, &narrow, 4) || !narrow ||
		    rd(ht->mem, ht->ck_base, &base, 8) ||
		    rd(ht->mem, ht->ck_shift, &shift, 4) || shift < 0 || shift > 32)
			return -EFAULT;
		*klass = base + ((uint64_t)narrow << shift);
	} else if (rd(ht->mem, obj + 8, klass, 8)) {
		return -EFAULT;
	}
	return *klass ? 0 : -EFAULT;
}

int hotspot_threads__flag(struct hotspot_threads *ht, const char *name, int64_t *out)
{
	uint8_t v;
	int err = flag_byte(ht, name, &v);

	if (!err)
		*out = v;
	return err;
}

/* Whether the object at obj is a jdk.internal.misc.CarrierThread. */
static bool is_carrier(struct hotspot_threads *ht, uint64_t obj)
{
	uint64_t klass = 0, sym;
	char name[64];

	if (!ht->klass_ok || hotspot_threads__klass(ht, obj, &klass))
		return false;
	return klass && !rd(ht->mem, klass + ht->klass_name, &sym, 8) &&
	       !hotspot_code__symbol(ht->hc, sym, name, sizeof(name)) &&
	       !strcmp(name, "jdk/internal/misc/CarrierThread");
}

int hotspot_threads__list(struct hotspot_threads *ht, uint64_t *threads, uint32_t *n)
{
	uint64_t list;
	int err;

	if ((err = hotspot_threads__prepare(ht)))
		return err;
	if (rd(ht->mem, ht->thread_list, &list, 8) || !list ||
	    rd(ht->mem, list + ht->tl_length, n, 4) ||
	    rd(ht->mem, list + ht->tl_threads, threads, 8))
		return -EFAULT;
	return *n > HOTSPOT_MAX_THREADS ? -EPROTO : 0;
}

int hotspot_threads__thread(struct hotspot_threads *ht, uint64_t threads, uint32_t i,
			    uint64_t *jt, int32_t *tid, uint64_t *obj)
{
	uint64_t os, handle;

	*obj = 0;
	if (rd(ht->mem, threads + 8 * (uint64_t)i, jt, 8) || !*jt ||
	    rd(ht->mem, *jt + ht->jt_osthread, &os, 8) || !os ||
	    rd(ht->mem, os + ht->os_thread_id, tid, 4) || *tid <= 0)
		return -EFAULT;
	if (rd(ht->mem, *jt + ht->jt_thread_obj + ht->handle_obj, &handle, 8) || !handle ||
	    rd(ht->mem, handle, obj, 8))
		*obj = 0;
	return 0;
}

int hotspot_threads__names(struct hotspot_threads *ht,
			   struct hotspot_thread_name **out, size_t *nout)
{
	struct hotspot_thread_name *names;
	uint64_t threads;
	uint32_t n;
	size_t k = 0;
	int err;

	*out = NULL;
	*nout = 0;
	if ((err = hotspot_threads__list(ht, &threads, &n)))
		return err;
	if (!(names = calloc(n ? n : 1, sizeof(*names))))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t jt, obj, name;
		int32_t tid;

		/* A thread that does not read (exiting, no object yet) is
		   left out; the others still name theirs. */
		if (hotspot_threads__thread(ht, threads, i, &jt, &tid, &obj) || !obj ||
		    hotspot_threads__read_ref(ht, obj + ht->thread_name, &name) || !name ||
		    read_string(ht, name, names[k].name, sizeof(names[k].name)))
			continue;
		if (ht->jt_vthread) {
			uint64_t vh, vobj;

			names[k].mounted = !rd(ht->mem, jt + ht->jt_vthread + ht->handle_obj,
					       &vh, 8) && vh &&
					   !rd(ht->mem, vh, &vobj, 8) && vobj && vobj != obj;
			names[k].carrier = is_carrier(ht, obj);
		}
		names[k++].tid = tid;
	}
	*out = names;
	*nout = k;
	return 0;
}
