/* test_prologue.c - the frame-pointer stepper's prologue helper on real
 * code without CFI (tests/targets/fp_lib.c built by gcc and clang, -O0..-O2,
 * with and without endbr64): every function classifies as a standard frame;
 * a stack built by hand to be exactly what the CPU would hold at fp_mid's
 * first instruction, after its push %rbp, after its mov, and at its ret,
 * unwinds to the return address in fp_outer (the truth, found by decoding
 * fp_outer's call to fp_mid); the plain rbp chain would skip it. The
 * wanderer's call-site check: with neither CFI nor frame pointer, a decoy
 * return address (after a call to another function) below the real one
 * is passed over, through the PLT or direct calls; and a return address
 * after a call to the function that tail-called the current one is
 * taken (fp_tail_*). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "harness.h"
#include "stacksnap.h"
#include "unwind/unwind_internal.h"

static char dir[64];
static unsigned tail_cases; /* variants where fp_tail_mid is a tail call */

/* The address after outer's instruction op rel32 (e8: call, e9: jmp) to
 * mid, directly or through the PLT (a jmp to it via the GOT). */
static uint64_t after_rel32(const uint8_t *outer, const uint8_t *mid,
			    uint8_t op)
{
	for (int i = 0; i < 256; i++)
		if (outer[i] == op) {
			int32_t rel;

			memcpy(&rel, outer + i + 1, 4);
			const uint8_t *t = outer + i + 5 + rel;
			if (t == mid)
				return (uintptr_t)(outer + i + 5);
			/* a PLT stub: jmp *rel(%rip) [endbr64 first, bnd] */
			const uint8_t *p = t;
			if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
				p += 4;
			if (p[0] == 0xf2)
				p++;
			if (p[0] == 0xff && p[1] == 0x25) {
				int32_t g;
				memcpy(&g, p + 2, 4);
				if (*(const uint8_t *const *)(p + 6 + g) == mid)
					return (uintptr_t)(outer + i + 5);
			}
		}
	return 0;
}

static uint64_t ret_after_call(const uint8_t *outer, const uint8_t *mid)
{
	return after_rel32(outer, mid, 0xe8);
}

struct variant {
	const char *cc, *flags;
};

static void one_variant(const struct variant *v)
{
	char so[128];
	void *h;

	snprintf(so, sizeof(so), "%s/fp-%s%s.so", dir, v->cc, v->flags);
	for (char *p = so + strlen(dir) + 1; *p; p++)
		if (*p == ' ')
			*p = '_';
	/* No -g: .debug_frame would be CFI. */
	if (harness_sh("%s %s -shared -fPIC -fno-omit-frame-pointer "
		       "-fno-asynchronous-unwind-tables -fno-unwind-tables -o %s "
		       "tests/targets/fp_lib.c", v->cc, v->flags, so)) {
		CHECKF(0, "%s %s: build failed", v->cc, v->flags);
		return;
	}
	h = dlopen(so, RTLD_NOW);
	CHECK(h);
	if (!h)
		return;
	const uint8_t *mid = dlsym(h, "fp_mid"), *outer = dlsym(h, "fp_outer");
	uint64_t ra = ret_after_call(outer, mid);
	CHECKF(ra, "%s %s: no call to fp_mid found in fp_outer", v->cc, v->flags);

	struct stacksnap_ctx *ctx = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as = stacksnap_addrspace__from_pid(ctx, getpid());
	const struct as_map *m = addrspace__find(as, (uintptr_t)mid);
	enum prologue_kind kind = PROLOGUE_UNKNOWN;
	enum prologue_state state;
	const char *fns[] = { "fp_leaf", "fp_mid", "fp_outer" };

	CHECK(m && m->mod);
	for (int i = 0; m && m->mod && i < 3; i++) {
		uint64_t a = (uintptr_t)dlsym(h, fns[i]);

		/* gcc -O1 and up set no frame up in a leaf. */
		CHECKF(!prologue__classify(ctx, m->mod, a - m->bias, &kind, &state) &&
		       (kind == PROLOGUE_STANDARD || (i == 0 && kind == PROLOGUE_NO_FRAME)) &&
		       state == PROLOGUE_UNSET,
		       "%s %s: %s: kind %d state %d", v->cc, v->flags, fns[i], kind, state);
	}
	/* Where fp_mid's prologue ends, and its ret. */
	unsigned push = mid[0] == 0xf3 ? 4 : 0, mov = push + 1, ret = 0, set = 0;
	for (unsigned i = mov; i < mov + 12 && !set; i++)
		if (mid[i] == 0x48 && ((mid[i + 1] == 0x89 && mid[i + 2] == 0xe5) ||
				       (mid[i + 1] == 0x8b && mid[i + 2] == 0xec)))
			set = i + 3; /* gcc -O2 may put an instruction between */
	CHECKF(set, "%s %s: no mov %%rsp,%%rbp in fp_mid", v->cc, v->flags);
	for (unsigned i = set; i < 256 && !ret; i++)
		if (mid[i] == 0xc3 && (mid[i - 1] == 0x5d || mid[i - 1] == 0xc9))
			ret = i; /* after pop %rbp or leave */
	CHECKF(ret, "%s %s: no pop/leave; ret in fp_mid", v->cc, v->flags);

	/* Stacks as the CPU holds them: a fake caller frame chain above. */
	uint64_t stack[16] = { 0 }, base = (uintptr_t)stack;
	uint64_t fake_rbp = base + 8 * 8; /* fp_outer's frame: [rbp] 0, [rbp+8] 0 */
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(stack, sizeof(stack), base);
	/* The frame-pointer stepper on its own: the analysis stepper, which
	 * comes first, would take these frames (see test_analysis.c). */
	STACKSNAP_OPTS(stacksnap_unwind_opts, fp_opts, .no_analysis = true);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&fp_opts);
	struct {
		const char *name;
		unsigned off;	   /* pc in fp_mid */
		unsigned ra_slot;  /* where the return address is */
		bool pushed;	   /* the caller's rbp at stack[0] */
		bool set;	   /* rbp points at the pushed slot */
	} cases[] = {
		{ "entry", push, 0, false, false },
		{ "after push", mov, 1, true, false },
		{ "after mov", set, 1, true, true },
		{ "at ret", ret, 0, false, false },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct stacksnap_regs regs = { .valid = (1u << STACKSNAP_REG_RIP) |
							(1u << STACKSNAP_REG_RSP) |
							(1u << STACKSNAP_REG_RBP) };
		struct stacksnap_frame f[8];
		enum stacksnap_end end;

		memset(stack, 0, sizeof(stack));
		stack[cases[c].ra_slot] = ra;
		if (cases[c].pushed)
			stack[0] = fake_rbp;
		/* What the plain chain would follow: a frame of fp_outer's
		 * caller, not fp_outer. */
		stack[9] = 0x1234;
		regs.regs[STACKSNAP_REG_RIP] = (uintptr_t)mid + cases[c].off;
		regs.regs[STACKSNAP_REG_RSP] = base;
		regs.regs[STACKSNAP_REG_RBP] = cases[c].set ? base : fake_rbp;
		int n = stacksnap_unwind(uw, as, &regs, mem, f, 8, &end);
		CHECKF(n >= 2 && f[1].pc == ra && f[1].stepper == STACKSNAP_STEP_FP,
		       "%s %s: %s: frame 1 at %#lx, want %#lx", v->cc, v->flags,
		       cases[c].name, n >= 2 ? (unsigned long)f[1].pc : 0UL,
		       (unsigned long)ra);
	}
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(mem);

	/* The wanderer: stopped in fp_leaf with neither CFI nor frame
	 * pointer, a decoy return address (after fp_outer's call to fp_mid)
	 * lies below the real one (after fp_mid's call to fp_leaf). The
	 * call-site check takes the real one; the PLT slots are read from
	 * live memory behind the copy. */
	const uint8_t *leaf = dlsym(h, "fp_leaf");
	uint64_t ra_mid = ret_after_call(mid, leaf), scan_stack[128] = { ra, ra_mid };
	struct stacksnap_mem *self = stacksnap_mem__new_self();
	STACKSNAP_OPTS(stacksnap_unwind_opts, so_opts, .no_frame_pointer = true,
		       .no_analysis = true, .stack_scan = true);
	uw = stacksnap_unwinder__new(&so_opts);
	mem = stacksnap_mem__new_copy(scan_stack, sizeof(scan_stack),
				      (uintptr_t)scan_stack);
	stacksnap_mem__set_fallback(mem, self);
	struct stacksnap_regs sregs = { .valid = (1u << STACKSNAP_REG_RIP) |
						 (1u << STACKSNAP_REG_RSP) };
	sregs.regs[STACKSNAP_REG_RIP] = (uintptr_t)leaf;
	sregs.regs[STACKSNAP_REG_RSP] = (uintptr_t)scan_stack;
	struct stacksnap_frame sf[4];
	enum stacksnap_end send;
	int sn = stacksnap_unwind(uw, as, &sregs, mem, sf, 4, &send);
	CHECKF(ra_mid && sn >= 2 && sf[1].pc == ra_mid &&
	       sf[1].stepper == STACKSNAP_STEP_SCAN,
	       "%s %s: scan found %#lx, want %#lx (the decoy is %#lx)", v->cc,
	       v->flags, sn >= 2 ? (unsigned long)sf[1].pc : 0UL,
	       (unsigned long)ra_mid, (unsigned long)ra);
	stacksnap_mem__free(mem);

	/* The tail-call case: stopped at fp_tail_leaf's entry, which
	 * fp_tail_mid entered by a jmp (-O2), the return address above is
	 * fp_tail_outer's, after its call to fp_tail_mid: the call targets
	 * the current function's caller, and is taken; the decoy below it
	 * (after fp_outer's call to fp_mid, which jumps nowhere near) is not. */
	const uint8_t *tleaf = dlsym(h, "fp_tail_leaf"),
		      *tmid = dlsym(h, "fp_tail_mid"),
		      *touter = dlsym(h, "fp_tail_outer");
	uint64_t ra_tail = ret_after_call(touter, tmid);
	bool jumps = after_rel32(tmid, tleaf, 0xe9) != 0;
	if (jumps && ra_tail) {
		uint64_t tstack[128] = { ra, ra_tail };

		mem = stacksnap_mem__new_copy(tstack, sizeof(tstack),
					      (uintptr_t)tstack);
		stacksnap_mem__set_fallback(mem, self);
		sregs.regs[STACKSNAP_REG_RIP] = (uintptr_t)tleaf;
		sregs.regs[STACKSNAP_REG_RSP] = (uintptr_t)tstack;
		sn = stacksnap_unwind(uw, as, &sregs, mem, sf, 4, &send);
		CHECKF(sn >= 2 && sf[1].pc == ra_tail &&
		       sf[1].stepper == STACKSNAP_STEP_SCAN,
		       "%s %s: tail call: scan found %#lx, want %#lx (the decoy "
		       "is %#lx)", v->cc, v->flags,
		       sn >= 2 ? (unsigned long)sf[1].pc : 0UL,
		       (unsigned long)ra_tail, (unsigned long)ra);
		stacksnap_mem__free(mem);
		tail_cases++;
	}
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(self);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	dlclose(h);
}

static void test_fp_prologue(void)
{
	static const struct variant v[] = {
		{ "gcc", "-O0" }, { "gcc", "-O1" }, { "gcc", "-O2" },
		{ "gcc", "-O2 -fcf-protection=full" },
		{ "clang", "-O0" }, { "clang", "-O2" },
		{ "clang", "-O2 -fcf-protection=full" },
		{ "gcc", "-O2 -fno-semantic-interposition" }, /* direct calls */
	};

	strcpy(dir, "/tmp/ss-prologue-XXXXXX");
	CHECK(mkdtemp(dir));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		one_variant(&v[i]);
	/* gcc and clang at -O2 make fp_tail_mid's call a jmp. */
	CHECKF(tail_cases >= 4, "only %u variants had a tail call", tail_cases);
	harness_sh("rm -rf %s", dir);
}

TEST_MAIN("prologue", TEST(test_fp_prologue))
