/* go_runtime.h - Go's goroutines: the runtime's structure layouts (from
 * the binary's DWARF where present, else per-version data), the list of
 * all goroutines (runtime.allgs) read bounded from a stopped process, and
 * each goroutine's stack unwound from its saved context (g.sched) or its
 * thread's registers with the pcsp rows (table/go_pcsp.h), named with the
 * pclntab (symbolize/gopclntab.h) as Go's own traceback names them. */
#ifndef SS_RUNTIME_GO_GO_RUNTIME_H
#define SS_RUNTIME_GO_GO_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "elf/elf_image.h"
#include "mem/mem.h"
#include "symbolize/gopclntab.h"
#include "table/go_pcsp.h"

/* Byte offsets of the fields read, in runtime.g and runtime.m. Invariant:
 * every offset + its field size <= g_size (m_size for m). */
struct go_layout {
	uint32_t g_size, m_size;
	uint32_t g_stack_lo, g_stack_hi, g_m, g_sched_sp, g_sched_pc,
		g_sched_bp, g_syscallsp, g_syscallpc, g_atomicstatus, g_goid,
		g_waitsince, g_waitreason, g_lockedm, g_gopc, g_startpc,
		g_labels;
	uint32_t m_procid, m_curg;
	/* What a goroutine waits on (go_waits.c): g.waiting (its sudog
	 * list), runtime.sudog, runtime.hchan, runtime.semaRoot. waits
	 * false: none of these are known (objects not read). Invariant:
	 * each offset + its field size <= its struct's size. */
	uint32_t waits;	/* 0 or 1 (a uint32_t: tests memcmp the offsets) */
	uint32_t g_waiting;
	uint32_t sudog_size, sudog_g, sudog_next, sudog_prev, sudog_elem,
		sudog_waitlink, sudog_c;
	uint32_t hchan_size, hchan_qcount, hchan_dataqsiz, hchan_closed,
		hchan_recvq, hchan_sendq, hchan_elemtype;
	uint32_t semroot_treap;
	/* runtime._type's tflag and str (its name's offset from the
	 * module's types): a channel's element type; type_str 0 unknown
	 * (no name read). */
	uint32_t type_tflag, type_str;
	const char *source;	/* "DWARF" or "go1.19 table" */
};

/* The runtime's goroutine states (runtime2.go); GO_GSCAN is a flag. */
enum go_gstatus {
	GO_GIDLE = 0, GO_GRUNNABLE = 1, GO_GRUNNING = 2, GO_GSYSCALL = 3,
	GO_GWAITING = 4, GO_GDEAD = 6, GO_GCOPYSTACK = 8, GO_GPREEMPTED = 9,
};
#define GO_GSCAN 0x1000

/* One Go executable. Invariant: pcln and rows describe img's code;
 * allgs is the link-time address of the runtime.allgs slice (0: not
 * found, no goroutines can be listed). */
struct go_runtime {
	const struct elf_image *img;	/* not owned */
	struct gopclntab pcln;
	struct go_pcsp_rows rows;
	struct go_layout layout;
	bool have_layout;
	uint64_t allgs;
	const char *allgs_source;	/* "symtab" or "runtime.forEachG" */
	/* runtime.semtable's link-time address and size (the symbol
	 * table's, else go_runtime__semtable_from_code and 251 cache
	 * lines; 0: not found, sync objects are not known). */
	uint64_t semtable, semtable_size;
	/* The module's type data [types, etypes), link-time (runtime.types,
	 * else the section holding it: .data.rel.ro in a PIE, .rodata);
	 * 0: element types are not named. */
	uint64_t types, etypes;
	/* funcID_wrapper, the last funcID of every Go version (its value
	 * moves as special functions come and go): the largest funcID of
	 * the table; 0 unknown (no wrapper is then marked). */
	uint8_t funcid_wrapper;
	char version[32];		/* "go1.19.8", or "" */
};

/* Opens the Go runtime of img: -ENOENT when img is not a Go program; a
 * Go program whose layout or goroutine list cannot be found still opens
 * (names and pcsp rows work; go_goroutines__read says why not). */
int go_runtime__open(struct go_runtime *rt, const struct elf_image *img,
		     const struct log_sink *log);
void go_runtime__close(struct go_runtime *rt);

/* runtime.allgs found without symbols, in runtime.forEachG's code (two
 * RIP-relative loads 8 bytes apart: the slice's pointer and length), or
 * 0. */
uint64_t go_runtime__allgs_from_code(const struct go_runtime *rt);

/* runtime.semtable found without symbols: the one address both
 * runtime.semacquire1 and runtime.semrelease1 load with a RIP-relative
 * LEA, or 0. */
uint64_t go_runtime__semtable_from_code(const struct go_runtime *rt);

/* The layout of the runtime's structures from DWARF (img or its debug
 * image) or from the version's table. 0, -ENOENT or -ENOTSUP (a version
 * without a table). */
int go_layout__from_dwarf(const struct elf_image *img, struct go_layout *l,
			  const struct log_sink *log);
int go_layout__for_version(const char *version, struct go_layout *l);

/* The wait reason's text as Go 1.19 prints it, or NULL. */
const char *go_wait_reason(uint8_t reason);
/* The status as the runtime's dump prints it: the wait reason of a
 * waiting goroutine, else the state's name. */
const char *go_status_name(uint32_t status, uint8_t reason);

/* What a waiting goroutine waits on (go_waits.c): a channel (its
 * hchan), each channel of a select, or a sync object (from the
 * semaphore the runtime parks it on). */
struct go_wait_object {
	uint64_t addr;
	const char *type;	/* "chan", "sync.Mutex", "sync.RWMutex",
				   "sync.WaitGroup", "semaphore" */
	int64_t capacity;	/* a channel's buffer (hchan.dataqsiz); -1
				   not a channel */
	int64_t queued;		/* hchan.qcount */
	bool closed;
	uint32_t receivers, senders; /* goroutines in recvq / sendq */
	bool counts_cut;	/* a queue longer than GO_MAX_WAITQ */
	char elem_type[64];	/* a channel's element type ("int"), "" */
};
#define GO_MAX_WAIT_OBJECTS 16	/* channels of one select read */
#define GO_MAX_WAITQ 4096	/* sudogs of one channel queue counted */
#define GO_MAX_SEMA_NODES 65536	/* sudogs of runtime.semtable walked */

struct go_gframe {
	uint64_t pc;		/* the frame's pc (a return address but for
				   the innermost frame) */
	uint64_t sp;
	const char *function;	/* strings point into the pclntab */
	const char *file;
	int32_t line;
	bool inlined;
	uint64_t entry;
	uint8_t funcid;		/* the pclntab's (gopclntab.h go_frame) */
};

/* One goroutine as read during the freeze. */
struct goroutine {
	uint64_t g;		/* its address */
	int64_t goid;
	uint32_t status;	/* raw atomicstatus (GO_GSCAN may be set) */
	uint8_t waitreason;
	int64_t waitsince;	/* nanotime() when it blocked, 0 unknown */
	uint64_t sched_pc, sched_sp, sched_bp;
	uint64_t syscallpc, syscallsp;
	uint64_t stack_lo, stack_hi;
	uint64_t gopc, startpc;
	uint64_t m;		/* the M running it, 0 */
	int32_t tid;		/* that M's thread (m.procid), 0 */
	bool locked;		/* locked to its thread (g.lockedm) */
	uint64_t labels_ptr;	/* g.labels: its profiler labels, 0 none */
	char **labels;		/* key, value, ... (2 * nlabels strings,
				   sorted by key): go_goroutine__read_labels */
	size_t nlabels;
	struct go_gframe *frames;
	size_t nframes;
	const char *end;	/* why its stack ends early, NULL when it
				   ended at the goroutine's start */
	/* The rbp rule checked live: callers whose frame pointer the walk
	 * recovered from a callee's slot, and of those how many did not
	 * hold the caller's own CFA - 16 (Go's frame-pointer chain). */
	unsigned fp_checked, fp_mismatch;
	/* What it waits on (go_goroutines__read_waits): g.waiting as read,
	 * then objs; obj_unknown says why none is known when it waits for
	 * another goroutine but no object was read. */
	uint64_t waiting;
	struct go_wait_object *objs;	/* GO_MAX_WAIT_OBJECTS of them, malloc'ed
					   by read_waits for a goroutine that
					   waits on one (go_goroutines__free) */
	size_t nobjs;
	const char *obj_unknown;
};

/* Caps on what a corrupt or racing list can make us read. */
#define GO_MAX_GOROUTINES (1u << 20)
#define GO_MAX_FRAMES 1024
#define GO_MAX_LABELS 64
#define GO_MAX_LABEL_LEN 256
#define GO_MAX_STACK (1ull << 30)	/* runtime.maxstacksize on 64-bit */

/* Reads the goroutine list from mem (a stopped process: bias is what to
 * add to link-time addresses), skipping dead ones, up to max. *out is
 * malloc'ed (go_goroutines__free). 0, -ENOENT (no list known), -EFAULT (a
 * read failed), -EINVAL (a list that makes no sense: a length beyond its
 * capacity or GO_MAX_GOROUTINES). */
int go_goroutines__read(const struct go_runtime *rt, struct stacksnap_mem *mem,
			uint64_t bias, size_t max, struct goroutine **out,
			size_t *n, const struct log_sink *log);

/* Reads g's profiler labels (pprof.Do: g.labels, a map[string]string)
 * into g->labels, at most GO_MAX_LABELS of at most GO_MAX_LABEL_LEN
 * bytes each; none when the binary's maps are not the classic hash map
 * (Go 1.24's Swiss tables). 0, -EFAULT (a read failed), -EINVAL (a map
 * that makes no sense) or -ENOMEM; on error g has no labels. */
int go_goroutine__read_labels(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, struct goroutine *g);
void go_goroutine__free_labels(struct goroutine *g);

/* Reads what each waiting goroutine of gs[0..n) waits on, after its
 * frames are unwound (a sync object is told apart by its sync frame):
 * the channels of g.waiting's sudogs and, when any goroutine waits on a
 * semaphore, runtime.semtable (its treaps walked, at most
 * GO_MAX_SEMA_NODES sudogs). Every read bounded; a read that fails or
 * a structure that makes no sense leaves that goroutine's obj_unknown
 * saying so. 0 or -ENOMEM. */
int go_goroutines__read_waits(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, uint64_t bias,
			      struct goroutine *gs, size_t n);

/* After a read made while some threads ran (a non-stop capture): reads
 * each goroutine of gs[0..n) again (mem invalidated first) and drops the
 * frames of those whose id, status, saved context or system-call state
 * changed since, their end saying so (GO_END_CHANGED), and their wait
 * objects (read before the recheck) too. Bounded: one read
 * of each g. Returns how many changed. */
#define GO_END_CHANGED "changed during the non-stop read (its stack is not shown)"
size_t go_goroutines__recheck(const struct go_runtime *rt,
			      struct stacksnap_mem *mem,
			      struct goroutine *gs, size_t n);
/* The same for wait objects read after the thaw (the frames were read
 * with every thread stopped): only the objects of goroutines that ran
 * since are dropped, said so; their frames are the freeze's. */
size_t go_goroutines__recheck_objects(const struct go_runtime *rt,
				      struct stacksnap_mem *mem,
				      struct goroutine *gs, size_t n);
/* The length of runtime.allgs now (it only grows: dead goroutines stay
 * for reuse), or 0 when unreadable: read before and after a non-stop
 * read, how many goroutines started meanwhile (not listed). */
uint64_t go_goroutines__list_len(const struct go_runtime *rt,
				 struct stacksnap_mem *mem, uint64_t bias);

/* The goid of the g at address r14 (Go's register ABI: the current g in
 * Go code) when rsp lies within its stack and it is alive, else -1. One
 * bounded read of the g. */
int64_t go_goroutine__goid_at(const struct go_runtime *rt,
			      struct stacksnap_mem *mem, uint64_t r14,
			      uint64_t rsp);

/* A thread's registers, for goroutines running on it. */
struct go_thread_regs {
	int32_t tid;
	uint64_t rip, rsp, rbp;
};

/* Unwinds g's stack into g->frames: a waiting or runnable goroutine
 * from g.sched (syscallpc/sp for one in a system call), a running one
 * from the registers of its thread when threads has it. Bounded by
 * GO_MAX_FRAMES and by g's stack bounds; g->end says why a walk stopped
 * early. 0 or -ENOMEM. */
int go_goroutine__unwind(const struct go_runtime *rt, struct stacksnap_mem *mem,
			 uint64_t bias, struct goroutine *g,
			 const struct go_thread_regs *threads, size_t nthreads);

struct stacksnap_addrspace;
struct stacksnap_unwinder;

/* The same through the library's unwinder (the one every thread's walk
 * uses, with the module's table: its CFI, or its pcsp rows when it has
 * none): the goroutine's start state handed to stacksnap_unwind over as
 * and mem, its frames then named from the pclntab with inlined calls, cut
 * at the goroutine's start. 0 or -ENOMEM. */
int go_goroutine__unwind_with(const struct go_runtime *rt,
			      struct stacksnap_unwinder *uw,
			      struct stacksnap_addrspace *as,
			      struct stacksnap_mem *mem, uint64_t bias,
			      struct goroutine *g,
			      const struct go_thread_regs *threads,
			      size_t nthreads);

/* The function and line that created g (g.gopc), as "created by" prints
 * them: false when unknown. */
bool go_goroutine__created_by(const struct go_runtime *rt,
			      const struct goroutine *g, uint64_t bias,
			      struct go_gframe *out);

void go_goroutines__free(struct goroutine *g, size_t n);

/* The public shape of gs[0..n) (include/stacksnap.h): *pub (n entries)
 * and *frames (every frame, pub's point into it), both malloc'ed; strings
 * point into rt's pclntab. now: CLOCK_MONOTONIC ns of the read (for how
 * long each has waited; 0: unknown). 0 or -ENOMEM (nothing allocated). */
int go_goroutines__publish(const struct go_runtime *rt,
			   const struct goroutine *gs, size_t n, uint64_t bias,
			   int64_t now, struct stacksnap_goroutine **pub,
			   struct stacksnap_runtime_frame **frames);

#endif
