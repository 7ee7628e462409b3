/* go_runtime.c - opens a Go executable's runtime: pclntab, pcsp rows, the
 * layouts of runtime.g and runtime.m (DWARF, else per-version data) and
 * where the goroutine list (runtime.allgs) is. */
#include "runtime/go/go_runtime.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* Go 1.19 (linux/amd64), read from the DWARF of a go1.19.8 build with
 * debug/dwarf (runtime.g 392 bytes, runtime.m 1008, gobuf.bp at 48);
 * go_runtime tests check it against the DWARF of the binary they build. */
static const struct go_layout layout_go119 = {
	.g_size = 392, .m_size = 1008,
	.g_stack_lo = 0, .g_stack_hi = 8, .g_m = 48,
	.g_sched_sp = 56, .g_sched_pc = 64, .g_sched_bp = 104,
	.g_syscallsp = 112, .g_syscallpc = 120, .g_atomicstatus = 144,
	.g_goid = 152, .g_waitsince = 168, .g_waitreason = 176,
	.g_lockedm = 232, .g_gopc = 296, .g_startpc = 312, .g_labels = 360,
	.m_procid = 72, .m_curg = 192,
	.waits = true, .g_waiting = 328,
	.sudog_size = 88, .sudog_g = 0, .sudog_next = 8, .sudog_prev = 16,
	.sudog_elem = 24, .sudog_waitlink = 64, .sudog_c = 80,
	.hchan_size = 96, .hchan_qcount = 0, .hchan_dataqsiz = 8,
	.hchan_closed = 28, .hchan_recvq = 56, .hchan_sendq = 72,
	.hchan_elemtype = 32,
	.semroot_treap = 8, .type_tflag = 20, .type_str = 40,
	.source = "go1.19 table",
};

int go_layout__for_version(const char *version, struct go_layout *l)
{
	/* "go1.19", "go1.19.8": the same layout across point releases. */
	if (strncmp(version, "go1.19", 6) == 0 &&
	    (version[6] == 0 || version[6] == '.')) {
		*l = layout_go119;
		return 0;
	}
	return -ENOTSUP;
}

/* Wait reasons of Go 1.19 (runtime2.go, waitReasonStrings). */
static const char *const wait_reasons_119[] = {
	"", "GC assist marking", "IO wait", "chan receive (nil chan)",
	"chan send (nil chan)", "dumping heap", "garbage collection",
	"garbage collection scan", "panicwait", "select", "select (no cases)",
	"GC assist wait", "GC sweep wait", "GC scavenge wait", "chan receive",
	"chan send", "finalizer wait", "force gc (idle)", "semacquire",
	"sleep", "sync.Cond.Wait", "timer goroutine (idle)",
	"trace reader (blocked)", "wait for GC cycle", "GC worker (idle)",
	"preempted", "debug call",
};

const char *go_wait_reason(uint8_t reason)
{
	if (reason >= sizeof(wait_reasons_119) / sizeof(wait_reasons_119[0]))
		return NULL;
	return wait_reasons_119[reason];
}

const char *go_status_name(uint32_t status, uint8_t reason)
{
	static const char *const names[] = {
		"idle", "runnable", "running", "syscall", "waiting",
		"moribund_unused", "dead", "enqueue_unused", "copystack",
		"preempted",
	};
	uint32_t s = status & ~(uint32_t)GO_GSCAN;
	const char *w;

	if (s == GO_GWAITING && reason && (w = go_wait_reason(reason)) && *w)
		return w;
	if (s < sizeof(names) / sizeof(names[0]))
		return names[s];
	return "???";
}

/* ---- layouts from DWARF ------------------------------------------------ */

struct dw_struct {
	const char *name;
	int64_t size;
	/* member name -> offset, for the members asked for */
	const char *const *members;
	int64_t *offs;
	size_t nmembers;
	bool found;
};

static void read_members(Dwarf_Die *st, struct dw_struct *s)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return;
	do {
		Dwarf_Attribute a;
		Dwarf_Word off;
		const char *n;

		if (dwarf_tag(&m) != DW_TAG_member || !(n = dwarf_diename(&m)))
			continue;
		for (size_t i = 0; i < s->nmembers; i++) {
			if (strcmp(n, s->members[i]) != 0 ||
			    !dwarf_attr(&m, DW_AT_data_member_location, &a) ||
			    dwarf_formudata(&a, &off) != 0)
				continue;
			s->offs[i] = (int64_t)off;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
}

/* The wait layout (g.waiting, sudog, hchan, semaRoot) from the members
 * the DWARF gave (offs[i] -1: missing): false when one is missing or out
 * of its struct. */
static bool wait_layout(struct go_layout *out, const struct dw_struct *w)
{
	struct go_layout t = *out, *l = &t;
	/* w: g.waiting, sudog, hchan, hchan.recvq's waitq, semaRoot */
	const int64_t *so = w[1].offs, *ho = w[2].offs;

	if (!w[0].found || !w[1].found || !w[2].found || !w[3].found ||
	    !w[4].found || w[1].size <= 0 || w[1].size > 4096 ||
	    w[2].size <= 0 || w[2].size > 4096)
		return false;
	for (size_t i = 0; i < 5; i++)
		for (size_t k = 0; k < w[i].nmembers; k++)
			if (w[i].offs[k] < 0 || w[i].offs[k] > 4096)
				return false;
	l->g_waiting = (uint32_t)w[0].offs[0];
	l->sudog_size = (uint32_t)w[1].size;
	l->sudog_g = (uint32_t)so[0];
	l->sudog_next = (uint32_t)so[1];
	l->sudog_prev = (uint32_t)so[2];
	l->sudog_elem = (uint32_t)so[3];
	l->sudog_waitlink = (uint32_t)so[4];
	l->sudog_c = (uint32_t)so[5];
	l->hchan_size = (uint32_t)w[2].size;
	l->hchan_qcount = (uint32_t)ho[0];
	l->hchan_dataqsiz = (uint32_t)ho[1];
	l->hchan_closed = (uint32_t)ho[2];
	/* waitq.first: the list's head */
	l->hchan_recvq = (uint32_t)(ho[3] + w[3].offs[0]);
	l->hchan_sendq = (uint32_t)(ho[4] + w[3].offs[0]);
	l->hchan_elemtype = (uint32_t)ho[5];
	l->semroot_treap = (uint32_t)w[4].offs[0];
	{
		uint32_t sf[] = { l->sudog_g, l->sudog_next, l->sudog_prev,
			l->sudog_elem, l->sudog_waitlink, l->sudog_c };
		uint32_t hf[] = { l->hchan_qcount, l->hchan_dataqsiz,
			l->hchan_recvq, l->hchan_sendq, l->hchan_elemtype };

		if (l->g_waiting + 8 > l->g_size ||
		    l->hchan_closed + 4 > l->hchan_size)
			return false;
		for (size_t i = 0; i < sizeof(sf) / sizeof(sf[0]); i++)
			if (sf[i] + 8 > l->sudog_size)
				return false;
		for (size_t i = 0; i < sizeof(hf) / sizeof(hf[0]); i++)
			if (hf[i] + 8 > l->hchan_size)
				return false;
	}
	l->waits = 1;
	*out = t;
	return true;
}

int go_layout__from_dwarf(const struct elf_image *img, struct go_layout *l,
			  const struct log_sink *log)
{
	static const char *const g_m[] = { "stack", "m", "sched", "syscallsp",
		"syscallpc", "atomicstatus", "goid", "waitsince", "waitreason",
		"lockedm", "gopc", "startpc", "labels" };
	static const char *const m_m[] = { "procid", "curg" };
	static const char *const buf_m[] = { "sp", "pc", "bp" };
	static const char *const stack_m[] = { "lo", "hi" };
	static const char *const gw_m[] = { "waiting" };
	static const char *const sudog_m[] = { "g", "next", "prev", "elem",
		"waitlink", "c" };
	static const char *const hchan_m[] = { "qcount", "dataqsiz", "closed",
		"recvq", "sendq", "elemtype" };
	static const char *const waitq_m[] = { "first" };
	static const char *const semroot_m[] = { "treap" };
	static const char *const type_m[] = { "tflag", "str" };
	int64_t go[13], mo[2], bo[3], so[2], gwo[1], sgo[6], ho[6], wqo[1],
		sro[1], to[2];
	/* The first four are needed; the rest (what goroutines wait on)
	 * only for the wait objects. */
	struct dw_struct want[] = {
		{ "runtime.g", -1, g_m, go, 13, false },
		{ "runtime.m", -1, m_m, mo, 2, false },
		{ "runtime.gobuf", -1, buf_m, bo, 3, false },
		{ "runtime.stack", -1, stack_m, so, 2, false },
		{ "runtime.g", -1, gw_m, gwo, 1, false },
		{ "runtime.sudog", -1, sudog_m, sgo, 6, false },
		{ "runtime.hchan", -1, hchan_m, ho, 6, false },
		{ "runtime.waitq", -1, waitq_m, wqo, 1, false },
		{ "runtime.semaRoot", -1, semroot_m, sro, 1, false },
		{ "runtime._type", -1, type_m, to, 2, false },
	};
	size_t nwant = sizeof(want) / sizeof(want[0]), nneed = 4, found = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw;

	if (!img->has_dwarf_info || !img->elf)
		return -ENOENT;
	dw = dwarf_begin_elf(img->elf, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	for (size_t i = 0; i < nwant; i++)
		for (size_t k = 0; k < want[i].nmembers; k++)
			want[i].offs[k] = -1;
	while (found < nwant &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		const char *cn;

		if (dwarf_offdie(dw, off + hsize, &cu) && (cn = dwarf_diename(&cu)) &&
		    strcmp(cn, "runtime") == 0 && dwarf_child(&cu, &d) == 0) {
			do {
				const char *n;

				if (dwarf_tag(&d) != DW_TAG_structure_type ||
				    !(n = dwarf_diename(&d)))
					continue;
				for (size_t i = 0; i < nwant; i++) {
					if (want[i].found ||
					    strcmp(n, want[i].name) != 0)
						continue;
					want[i].found = true;
					want[i].size = dwarf_bytesize(&d);
					read_members(&d, &want[i]);
					found++;
				}
			} while (found < nwant && dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	for (size_t i = 0; i < nneed; i++)
		if (!want[i].found)
			return -ENOENT;
	for (size_t i = 0; i < nneed; i++)
		for (size_t k = 0; k < want[i].nmembers; k++)
			if (want[i].offs[k] < 0 || want[i].offs[k] > 65536) {
				log_info(log, "go: %s.%s not in the DWARF",
					 want[i].name, want[i].members[k]);
				return -ENOENT;
			}
	if (want[0].size <= 0 || want[1].size <= 0 || want[0].size > 65536 ||
	    want[1].size > 65536)
		return -ENOENT;
	memset(l, 0, sizeof(*l));
	l->g_size = (uint32_t)want[0].size;
	l->m_size = (uint32_t)want[1].size;
	l->g_stack_lo = (uint32_t)(go[0] + so[0]);
	l->g_stack_hi = (uint32_t)(go[0] + so[1]);
	l->g_m = (uint32_t)go[1];
	l->g_sched_sp = (uint32_t)(go[2] + bo[0]);
	l->g_sched_pc = (uint32_t)(go[2] + bo[1]);
	l->g_sched_bp = (uint32_t)(go[2] + bo[2]);
	l->g_syscallsp = (uint32_t)go[3];
	l->g_syscallpc = (uint32_t)go[4];
	l->g_atomicstatus = (uint32_t)go[5];
	l->g_goid = (uint32_t)go[6];
	l->g_waitsince = (uint32_t)go[7];
	l->g_waitreason = (uint32_t)go[8];
	l->g_lockedm = (uint32_t)go[9];
	l->g_gopc = (uint32_t)go[10];
	l->g_startpc = (uint32_t)go[11];
	l->g_labels = (uint32_t)go[12];
	l->m_procid = (uint32_t)mo[0];
	l->m_curg = (uint32_t)mo[1];
	l->source = "DWARF";
	/* Every 8-byte field inside its struct (the reads rely on it). */
	{
		uint32_t gf[] = { l->g_stack_lo, l->g_stack_hi, l->g_m,
			l->g_sched_sp, l->g_sched_pc, l->g_sched_bp,
			l->g_syscallsp, l->g_syscallpc, l->g_atomicstatus,
			l->g_goid, l->g_waitsince, l->g_waitreason,
			l->g_lockedm, l->g_gopc, l->g_startpc, l->g_labels };

		for (size_t i = 0; i < sizeof(gf) / sizeof(gf[0]); i++)
			if (gf[i] + 8 > l->g_size)
				return -EINVAL;
		if (l->m_procid + 8 > l->m_size || l->m_curg + 8 > l->m_size)
			return -EINVAL;
	}
	l->waits = wait_layout(l, want + nneed);
	/* A channel's element type: named only when _type has both. */
	if (l->waits && want[nneed + 5].found && to[0] >= 0 && to[1] >= 0 &&
	    want[nneed + 5].size > 0 && to[0] + 1 <= want[nneed + 5].size &&
	    to[1] + 4 <= want[nneed + 5].size && to[1] > 0) {
		l->type_tflag = (uint32_t)to[0];
		l->type_str = (uint32_t)to[1];
	}
	if (!l->waits)
		log_info(log, "go: the wait structures (runtime.sudog, hchan, "
			 "semaRoot) are not all in the DWARF: wait objects are "
			 "not read");
	return 0;
}

/* ---- where runtime.allgs is ------------------------------------------- */

static uint64_t symtab_lookup(const struct elf_image *img, const char *want,
			      uint64_t *size)
{
	Elf_Scn *scn = NULL;

	if (!img->elf)
		return 0;
	while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) &&
			    (n = elf_strptr(img->elf, sh.sh_link, s.st_name)) &&
			    strcmp(n, want) == 0) {
				if (size)
					*size = s.st_size;
				return s.st_value;
			}
		}
	}
	return 0;
}

/* The targets of the RIP-relative operands (REX.W, opcode op, ModRM
 * mod 00 r/m 101: 0x8b a MOVQ load, 0x8d a LEAQ) in function name's
 * code, at most max, in order; how many. */
static size_t rip_targets(const struct go_runtime *rt, const char *name,
			  uint8_t op, uint64_t *out, size_t max)
{
	const struct gopclntab *t = &rt->pcln;

	for (uint64_t i = 0; i < t->nfunc; i++) {
		struct go_func f;
		const char *n;
		const uint8_t *code;
		size_t nl = 0;

		if (gopclntab__func_at(t, i, &f) < 0 ||
		    !(n = gopclntab__func_name(t, &f)) || strcmp(n, name) != 0)
			continue;
		if (f.end - f.entry > 16384 ||
		    !(code = gopclntab__bytes_at(t, f.entry, f.end - f.entry)))
			return 0;
		for (uint64_t k = 0; k + 7 <= f.end - f.entry && nl < max; k++) {
			int32_t disp;

			if ((code[k] != 0x48 && code[k] != 0x4c) ||
			    code[k + 1] != op || (code[k + 2] & 0xc7) != 0x05)
				continue;
			memcpy(&disp, code + k + 3, 4);
			out[nl++] = f.entry + k + 7 + (uint64_t)(int64_t)disp;
		}
		return nl;
	}
	return 0;
}

/* Without symbols: runtime.forEachG loads allgs' pointer and length with
 * two RIP-relative MOVQs from addresses 8 apart; the first such pair in
 * the function is the slice. */
uint64_t go_runtime__allgs_from_code(const struct go_runtime *rt)
{
	uint64_t loads[16];
	size_t nl = rip_targets(rt, "runtime.forEachG", 0x8b, loads, 16);

	for (size_t a = 0; a < nl; a++)
		for (size_t b = a + 1; b < nl; b++)
			if (loads[b] == loads[a] + 8)
				return loads[a];
	return 0;
}

/* Without symbols: the semaphore table is the one address both
 * runtime.semacquire1 and runtime.semrelease1 take (semroot, inlined in
 * each, LEAs it); 0 when not exactly one is shared. */
uint64_t go_runtime__semtable_from_code(const struct go_runtime *rt)
{
	uint64_t a[64], r[64], found = 0;
	size_t na = rip_targets(rt, "runtime.semacquire1", 0x8d, a, 64),
	       nr = rip_targets(rt, "runtime.semrelease1", 0x8d, r, 64);

	for (size_t i = 0; i < na; i++)
		for (size_t k = 0; k < nr; k++) {
			if (a[i] != r[k] || a[i] == found)
				continue;
			if (found)
				return 0;
			found = a[i];
		}
	return found;
}

/* The module's type data: runtime.types..runtime.etypes, else the
 * section the linker starts it at (.data.rel.ro in a PIE, else
 * .rodata), whole. */
static void types_range(struct go_runtime *rt)
{
	const struct elf_image *img = rt->img;
	Elf_Scn *scn = NULL;
	size_t shstr;
	uint64_t lo = 0, hi = 0;

	rt->types = symtab_lookup(img, "runtime.types", NULL);
	rt->etypes = symtab_lookup(img, "runtime.etypes", NULL);
	if (rt->types && rt->etypes > rt->types)
		return;
	rt->types = rt->etypes = 0;
	if (!img->elf || elf_getshdrstrndx(img->elf, &shstr) != 0)
		return;
	while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) ||
		    !(n = elf_strptr(img->elf, shstr, sh.sh_name)))
			continue;
		if ((!strcmp(n, ".data.rel.ro") && img->e_type == 3 /* PIE */) ||
		    (!strcmp(n, ".rodata") && !lo)) {
			lo = sh.sh_addr;
			hi = sh.sh_addr + sh.sh_size;
		}
	}
	if (lo && hi > lo) {
		rt->types = lo;
		rt->etypes = hi;
	}
}

int go_runtime__open(struct go_runtime *rt, const struct elf_image *img,
		     const struct log_sink *log)
{
	struct go_pcsp_func *funcs;
	size_t nf;
	int err;

	memset(rt, 0, sizeof(*rt));
	rt->img = img;
	err = gopclntab__open_elf(&rt->pcln, img, log);
	if (err < 0)
		return err;
	go_buildinfo_version(img, rt->version, sizeof(rt->version));
	err = gopclntab__pcsp_funcs(&rt->pcln, &funcs, &nf);
	if (err < 0)
		return err;
	err = go_pcsp__compile(funcs, nf, rt->pcln.quantum, log, &rt->rows);
	free(funcs);
	if (err < 0)
		return err;
	for (uint64_t i = 0; i < rt->pcln.nfunc; i++) {
		struct go_func f;

		if (gopclntab__func_at(&rt->pcln, i, &f) == 0 &&
		    f.funcid > rt->funcid_wrapper)
			rt->funcid_wrapper = f.funcid;
	}
	/* Every version has more than 15 special functions before it: a
	 * smaller largest id means no wrapper was seen. */
	if (rt->funcid_wrapper < 16)
		rt->funcid_wrapper = 0;
	if (go_layout__from_dwarf(img, &rt->layout, log) == 0 ||
	    go_layout__for_version(rt->version, &rt->layout) == 0)
		rt->have_layout = true;
	else
		log_warn(log, "go: no structure layout for %s without DWARF: "
			 "goroutines are not listed",
			 rt->version[0] ? rt->version : "an unknown version");
	rt->allgs = symtab_lookup(img, "runtime.allgs", NULL);
	rt->semtable = symtab_lookup(img, "runtime.semtable",
				     &rt->semtable_size);
	types_range(rt);
	if (!rt->semtable && (rt->semtable = go_runtime__semtable_from_code(rt)))
		/* semTabSize roots, each padded to a cache line (64 bytes
		 * on x86-64), in every version */
		rt->semtable_size = 251 * 64;
	rt->allgs_source = "symtab";
	if (!rt->allgs) {
		rt->allgs = go_runtime__allgs_from_code(rt);
		rt->allgs_source = "runtime.forEachG";
	}
	if (!rt->allgs)
		log_warn(log, "go: runtime.allgs not found: goroutines are "
			 "not listed");
	return 0;
}

void go_runtime__close(struct go_runtime *rt)
{
	go_pcsp__free(&rt->rows);
	memset(rt, 0, sizeof(*rt));
}
