/* test_steppers.c - the stepper plug-in interface: a user stepper for a
 * synthetic "JIT" region (code in an anonymous mapping, with its own frame
 * layout and no CFI) makes its frames unwind, tagged with the stepper, to
 * the known C callers; without it the walk stops or skips a caller; a
 * stepper's "bottom" and memory errors end the walk as documented;
 * priorities place it among the built-ins (one above CFI sees frame 0,
 * and the batch fast path stepping aside gives the same frames); bad
 * registrations are refused. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define MAXF 256

/* The JIT function: void jit(void (*cb)(void)) with a 0x28-byte frame.
 *   0: sub $0x28,%rsp   4: call *%rdi   6: add $0x28,%rsp   10: ret */
static const uint8_t jit_code[] = { 0x48, 0x83, 0xec, 0x28, 0xff, 0xd7,
				    0x48, 0x83, 0xc4, 0x28, 0xc3 };
static uint8_t *jit;
static struct stacksnap_ctx *ctx;
static struct stacksnap_addrspace *as;
static struct stacksnap_mem *self_mem;
static void (*test_in_jit)(const struct stacksnap_regs *regs);

/* The JIT's frame layout, as a JIT would describe it: the return address
 * at rsp + 0x28 between the sub and the add, at rsp elsewhere. */
static int jit_step(void *user, const struct stacksnap_regs *r, bool exact,
		    struct stacksnap_mem *mem, struct stacksnap_regs *caller)
{
	uint64_t pc = r->regs[STACKSNAP_REG_RIP], base = (uintptr_t)jit;
	uint64_t off = pc - (exact ? 0 : 1) - base, ra_at, ra;
	int *calls = user;

	if (off >= sizeof(jit_code))
		return STACKSNAP_STEPPER_NOT_MINE;
	(*calls)++;
	ra_at = r->regs[STACKSNAP_REG_RSP] + (off >= 4 && off < 10 ? 0x28 : 0);
	if (stacksnap_mem__read(mem, ra_at, &ra, sizeof(ra)))
		return -EFAULT;
	caller->regs[STACKSNAP_REG_RIP] = ra;
	caller->regs[STACKSNAP_REG_RSP] = ra_at + 8;
	caller->regs[STACKSNAP_REG_RBP] = r->regs[STACKSNAP_REG_RBP];
	caller->valid = (1u << STACKSNAP_REG_RIP) | (1u << STACKSNAP_REG_RSP) |
			(r->valid & (1u << STACKSNAP_REG_RBP));
	return STACKSNAP_STEPPER_CALLER;
}

static int jit_bottom(void *user, const struct stacksnap_regs *r, bool exact,
		      struct stacksnap_mem *mem, struct stacksnap_regs *caller)
{
	uint64_t pc = r->regs[STACKSNAP_REG_RIP] - (exact ? 0 : 1);

	return pc - (uintptr_t)jit < sizeof(jit_code) ? STACKSNAP_STEPPER_BOTTOM
						       : STACKSNAP_STEPPER_NOT_MINE;
}

static int jit_fault(void *user, const struct stacksnap_regs *r, bool exact,
		     struct stacksnap_mem *mem, struct stacksnap_regs *caller)
{
	uint64_t pc = r->regs[STACKSNAP_REG_RIP] - (exact ? 0 : 1);

	return pc - (uintptr_t)jit < sizeof(jit_code) ? -EFAULT
						       : STACKSNAP_STEPPER_NOT_MINE;
}

/* Says "not mine" to every frame, counting them. */
static int watcher(void *user, const struct stacksnap_regs *r, bool exact,
		   struct stacksnap_mem *mem, struct stacksnap_regs *caller)
{
	(*(int *)user)++;
	return STACKSNAP_STEPPER_NOT_MINE;
}

static const char *fn_name(uint64_t pc, bool is_return)
{
	static struct stacksnap_sym sym;

	if (stacksnap_addrspace__symbolize(as, pc, is_return, 0, &sym, 1) < 1)
		return NULL;
	return sym.function;
}

static int walk(struct stacksnap_unwinder *uw, const struct stacksnap_regs *regs,
		struct stacksnap_frame *f, enum stacksnap_end *end)
{
	return stacksnap_unwind(uw, as, regs, self_mem, f, MAXF, end);
}

/* Index of the frame in the JIT region, or -1. */
static int jit_frame(const struct stacksnap_frame *f, int n)
{
	for (int i = 0; i < n; i++)
		if (f[i].pc - (uintptr_t)jit < sizeof(jit_code))
			return i;
	return -1;
}

static void check_jit_stepper(const struct stacksnap_regs *regs)
{
	struct stacksnap_frame f[MAXF];
	enum stacksnap_end end;
	int calls = 0, n, j, id;
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);

	STACKSNAP_OPTS(stacksnap_stepper_opts, o, .name = "jit", .step = jit_step,
		       .user = &calls, .priority = 350);
	id = stacksnap_unwinder__add_stepper(uw, &o);
	CHECK(id == 1);
	n = walk(uw, regs, f, &end);
	j = jit_frame(f, n);
	CHECKF(j == 1, "the JIT frame at %d", j);
	CHECK(end == STACKSNAP_END_COMPLETE);
	CHECK(calls == 1);
	if (j == 1 && n > 4) {
		CHECK(f[0].stepper == STACKSNAP_STEP_START);
		CHECK(f[1].stepper == STACKSNAP_STEP_TABLE);
		/* The frame the JIT stepper produced: its caller. */
		CHECK(f[2].stepper == STACKSNAP_STEP_USER && f[2].user_stepper == id);
		CHECK(!strcmp(stacksnap_unwinder__stepper_name(uw, &f[2]), "jit"));
		CHECK(!strcmp(stacksnap_unwinder__stepper_name(uw, &f[1]), "cfi"));
		CHECK(f[1].cfa == f[2].sp);
		const char *name = fn_name(f[2].pc, true);
		CHECKF(name && !strcmp(name, "call_jit"), "frame 2: %s", name);
		name = fn_name(f[3].pc, true);
		CHECKF(name && !strcmp(name, "outer"), "frame 3: %s", name);
	}
	stacksnap_unwinder__free(uw);

	/* Without it: no CFI and no frame pointer there, the walk stops at
	 * the JIT frame... */
	STACKSNAP_OPTS(stacksnap_unwind_opts, nofp, .no_frame_pointer = true);
	uw = stacksnap_unwinder__new(&nofp);
	n = walk(uw, regs, f, &end);
	CHECK(n == 2 && end == STACKSNAP_END_NO_CFI);
	stacksnap_unwinder__free(uw);
	/* ...and the frame pointer (the JIT code keeps the caller's rbp)
	 * skips call_jit. */
	uw = stacksnap_unwinder__new(NULL);
	n = walk(uw, regs, f, &end);
	j = jit_frame(f, n);
	CHECK(j == 1 && n > 2 && f[2].stepper == STACKSNAP_STEP_FP);
	if (n > 2) {
		const char *name = fn_name(f[2].pc, true);
		CHECKF(!name || strcmp(name, "call_jit"), "fp found call_jit");
	}
	stacksnap_unwinder__free(uw);
}

static void check_bottom_and_errors(const struct stacksnap_regs *regs)
{
	struct stacksnap_frame f[MAXF];
	enum stacksnap_end end;
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	int n;

	STACKSNAP_OPTS(stacksnap_stepper_opts, b, .name = "jit-bottom",
		       .step = jit_bottom, .priority = STACKSNAP_PRIO_CFI);
	CHECK(stacksnap_unwinder__add_stepper(uw, &b) == 1);
	n = walk(uw, regs, f, &end);
	CHECK(n == 2 && end == STACKSNAP_END_COMPLETE);
	stacksnap_unwinder__free(uw);

	uw = stacksnap_unwinder__new(NULL);
	STACKSNAP_OPTS(stacksnap_stepper_opts, e, .step = jit_fault,
		       .priority = STACKSNAP_PRIO_SIGNAL + 10);
	CHECK(stacksnap_unwinder__add_stepper(uw, &e) == 1);
	n = walk(uw, regs, f, &end);
	CHECK(n == 2 && end == STACKSNAP_END_BAD_MEMORY);
	CHECK(!strcmp(stacksnap_unwinder__stepper_name(uw, &f[1]), "cfi"));
	stacksnap_unwinder__free(uw);
}

/* A stepper above CFI is asked about every frame, frame 0 first, and the
 * walk is otherwise the same (the fast path steps aside for it). */
static void check_priorities(const struct stacksnap_regs *regs)
{
	struct stacksnap_frame a[MAXF], b[MAXF];
	enum stacksnap_end ea, eb;
	int calls = 0, jcalls = 0, na, nb;
	struct stacksnap_unwinder *plain = stacksnap_unwinder__new(NULL);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);

	STACKSNAP_OPTS(stacksnap_stepper_opts, j, .name = "jit", .step = jit_step,
		       .user = &jcalls, .priority = 350);
	STACKSNAP_OPTS(stacksnap_stepper_opts, w, .name = "watcher", .step = watcher,
		       .user = &calls, .priority = 450);
	stacksnap_unwinder__add_stepper(plain, &j);
	stacksnap_unwinder__add_stepper(uw, &j);
	CHECK(stacksnap_unwinder__add_stepper(uw, &w) == 2);
	na = walk(plain, regs, a, &ea);
	nb = walk(uw, regs, b, &eb);
	CHECK(na == nb && ea == eb);
	/* One step per frame, the last one finding the bottom. */
	CHECKF(calls == nb, "the watcher saw %d of %d steps", calls, nb);
	for (int i = 0; i < na && i < nb; i++)
		CHECKF(a[i].pc == b[i].pc && a[i].sp == b[i].sp && a[i].cfa == b[i].cfa &&
		       a[i].stepper == b[i].stepper && a[i].user_stepper == b[i].user_stepper,
		       "frame %d differs", i);
	stacksnap_unwinder__free(plain);
	stacksnap_unwinder__free(uw);
}

NOINLINE static void in_jit_callback(void)
{
	struct stacksnap_regs regs = { .valid = 0 };
	uint64_t rip, rsp, rbp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	regs.regs[STACKSNAP_REG_RIP] = rip;
	regs.regs[STACKSNAP_REG_RSP] = rsp;
	regs.regs[STACKSNAP_REG_RBP] = rbp;
	regs.valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP |
		     1u << STACKSNAP_REG_RBP;
	test_in_jit(&regs);
	KEEP_FRAME();
}

NOINLINE static void call_jit(void)
{
	((void (*)(void (*)(void)))(void *)jit)(in_jit_callback);
	KEEP_FRAME();
}

NOINLINE static void outer(void)
{
	call_jit();
	KEEP_FRAME();
}

static void run_in_jit(void (*fn)(const struct stacksnap_regs *))
{
	test_in_jit = fn;
	outer();
}

static void test_setup(void)
{
	jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(jit != MAP_FAILED);
	memcpy(jit, jit_code, sizeof(jit_code));
	ctx = stacksnap_ctx__new(NULL);
	as = stacksnap_addrspace__from_pid(ctx, getpid());
	self_mem = stacksnap_mem__new_self();
	CHECK(ctx && as && self_mem);
}

static void test_jit_user_stepper(void)
{
	run_in_jit(check_jit_stepper);
}

static void test_bottom_and_errors(void)
{
	run_in_jit(check_bottom_and_errors);
}

static void test_priorities(void)
{
	run_in_jit(check_priorities);
}

static void test_bad_registration(void)
{
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	STACKSNAP_OPTS(stacksnap_stepper_opts, none, .name = "x");
	STACKSNAP_OPTS(stacksnap_stepper_opts, ok, .step = watcher, .user = &(int){ 0 });

	CHECK(stacksnap_unwinder__add_stepper(uw, &none) == -EINVAL);
	CHECK(stacksnap_unwinder__add_stepper(NULL, &ok) == -EINVAL);
	for (int i = 0; i < 16; i++)
		CHECK(stacksnap_unwinder__add_stepper(uw, &ok) == i + 1);
	CHECK(stacksnap_unwinder__add_stepper(uw, &ok) == -E2BIG);
	stacksnap_unwinder__free(uw);
}

static void test_cleanup(void)
{
	stacksnap_mem__free(self_mem);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	munmap(jit, 4096);
}

TEST_MAIN("steppers", TEST(test_setup), TEST(test_jit_user_stepper),
	  TEST(test_bottom_and_errors), TEST(test_priorities),
	  TEST(test_bad_registration), TEST(test_cleanup))
