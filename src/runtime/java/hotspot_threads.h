/* hotspot_threads.h - the Java names of a live JVM's threads (their
 * java.lang.Thread objects' names), read through the vmStructs tables
 * (hotspot_threads.c). */
#ifndef SS_RUNTIME_JAVA_HOTSPOT_THREADS_H
#define SS_RUNTIME_JAVA_HOTSPOT_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/java/hotspot_code.h"
#include "runtime/java/hotspot_structs.h"

/* Longest name kept (in UTF-8 bytes; longer ones are cut). */
#define HOTSPOT_MAX_THREAD_NAME 256

struct hotspot_thread_name {
	int32_t tid;		/* the OS thread's id */
	/* JDK 21+: a virtual thread is mounted on it (JavaThread::_vthread
	   is not its own object): its frames are on this stack; it is a
	   carrier of the virtual thread scheduler (its class
	   jdk.internal.misc.CarrierThread). */
	bool mounted, carrier;
	char name[HOTSPOT_MAX_THREAD_NAME + 1];
};

/* Offsets and statics from the tables (init), then, read once at the
 * first names (prepared): the reference decoding and the field offsets
 * of java.lang.Thread.name and String's value and coder. */
struct hotspot_threads {
	struct hotspot_code *hc;	/* its symbols, constant pools; not owned */
	struct stacksnap_mem *mem;	/* hc's */
	uint64_t thread_list, tl_length, tl_threads;
	uint64_t jt_osthread, jt_thread_obj, handle_obj, os_thread_id;
	uint64_t thread_klass, string_klass;	/* &InstanceKlass* statics */
	uint64_t ik_fields, ik_java_fields, ik_constants, u2_data;
	uint64_t oop_base, oop_shift;		/* statics' addresses */
	uint64_t flags_addr, nflags_addr, flag_addr, flag_name, flag_size;
	int64_t fi_slots, fi_name, fi_sig, fi_low, fi_high, tag_size, tag_offset;
	/* JDK 21+: InstanceKlass::_fieldinfo_stream (UNSIGNED5: the java
	   and injected field counts, then per field name index, signature
	   index, offset, access flags, field flags and the optional
	   initializer, generic signature, contention group their
	   FieldInfo::FieldFlags bits say; fieldInfo.hpp). 0: JDK 17. */
	uint64_t ik_fieldinfo_stream;
	int64_t ff_initialized, ff_generic, ff_contended;
	bool prepared;
	int prepare_err;
	bool compressed_oops;
	uint64_t narrow_base;
	int narrow_shift;
	uint64_t array_length, array_data;
	uint64_t thread_name, string_value, string_coder;
	/* JDK 21+ (0: none): JavaThread::_vthread; an object's class from
	   its header, the narrow klass decoded by CompressedKlassPointers'
	   _base and _shift (statics) with compressed class pointers; not
	   read (carrier false) with compact object headers. */
	uint64_t jt_vthread, ck_base, ck_shift, klass_name;
	bool klass_ok, ccp;
	bool klass_read;	/* an object's class can be read from its header
				   (compressed class pointers decoded, or
				   the mark word's with compact headers) */
	/* Compact object headers: the narrow klass is mark >>
	   mark_klass_shift; an inflated monitor's (without the
	   ObjectMonitorTable) mark is its ObjectMonitor's at om_header. */
	bool compact, monitor_table, om_header_ok;
	int64_t mark_klass_shift;
	uint64_t om_header;
};

/* Returns 0, or -ENOENT when the tables lack an entry names need. */
int hotspot_threads__init(struct hotspot_threads *ht, const struct hotspot_structs *hs,
			  struct hotspot_code *hc);
/* Every JavaThread's OS thread id and Java name, now (*out malloc'ed;
 * threads whose objects do not read are left out). Returns 0 or -errno
 * (the layout did not read: no names). */
/* What reading objects needs, read once (the reference decoding, the
 * field offsets names use): 0 or -errno, the same at every call. */
int hotspot_threads__prepare(struct hotspot_threads *ht);
/* The reference field at addr, decoded (compressed oops or not). */
int hotspot_threads__read_ref(struct hotspot_threads *ht, uint64_t addr, uint64_t *ref);
/* The Klass* of the object at obj, from its header (prepared first):
 * 0, -ENOTSUP (compact object headers, or no class pointer layout) or
 * -EFAULT. */
int hotspot_threads__klass(struct hotspot_threads *ht, uint64_t obj, uint64_t *klass);
/* The offset of the instance field (name, signature) declared by the
 * InstanceKlass ik (not its supers), from its field table: 0, -ENOENT
 * or -EFAULT / -EPROTO. */
int hotspot_threads__field_offset(struct hotspot_threads *ht, uint64_t ik,
				  const char *name, const char *sig, uint64_t *off);
/* A JVM flag's value's first byte (a bool, a small int flag such as
 * LockingMode): 0, -ENOENT (no such flag) or -errno. */
int hotspot_threads__flag(struct hotspot_threads *ht, const char *name, int64_t *out);
/* The VM's list of JavaThreads now: its array and length (prepared
 * first). 0 or -errno. */
int hotspot_threads__list(struct hotspot_threads *ht, uint64_t *threads, uint32_t *n);
/* Entry i of the list: the JavaThread, its OS thread id and its
 * java.lang.Thread (*obj 0 when it has none yet). 0, or -EFAULT for an
 * entry that does not read (an exiting thread). */
int hotspot_threads__thread(struct hotspot_threads *ht, uint64_t threads, uint32_t i,
			    uint64_t *jt, int32_t *tid, uint64_t *obj);
int hotspot_threads__names(struct hotspot_threads *ht,
			   struct hotspot_thread_name **out, size_t *n);

#endif
