/* test_unwind.c - the unwinder on this process's own stack, checked
 * against glibc's backtrace() (libgcc's unwinder, an independent
 * implementation), through each memory source; truncation reasons; caller
 * supplied mappings; memory sources' bounds. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "addrspace/addrspace.h"
#include "addrspace/module.h"
#include "table/unwind_table.h"
#include "harness.h"
#include "stacksnap.h"

#define NOINLINE __attribute__((noinline))
#define MAXF 8192

static struct stacksnap_ctx *ctx;
static struct stacksnap_addrspace *self_as;

/* What the innermost function saw: its registers at a known point and
 * glibc's backtrace from the same function. */
struct capture {
	struct stacksnap_regs regs;
	void *bt[MAXF];
	int nbt;
	uint8_t *stack_copy;	/* copy of [rsp, rsp + copy_len) */
	size_t copy_len;
	struct stacksnap_frame frames[MAXF];
	int nframes;
	enum stacksnap_end end;
};

static struct capture cap;
static unsigned copy_bytes = 1 << 20;
static unsigned max_frames = MAXF;
static int keep_copy; /* innermost only captures; the test unwinds later */

static int read_stack_end(uint64_t sp, uint64_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = -1;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && sp >= a && sp < b) {
			*end = b;
			found = 0;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Captures the registers at this point, copies the stack, and unwinds
 * while the frames above are still live. */
NOINLINE static void innermost(struct stacksnap_mem *mem_kind_self, int use_copy)
{
	uint64_t rip, rsp, rbp, end = 0;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	memset(&cap.regs, 0, sizeof(cap.regs));
	cap.regs.regs[STACKSNAP_REG_RIP] = rip;
	cap.regs.regs[STACKSNAP_REG_RSP] = rsp;
	cap.regs.regs[STACKSNAP_REG_RBP] = rbp;
	cap.regs.valid = (1u << STACKSNAP_REG_RIP) | (1u << STACKSNAP_REG_RSP) |
			 (1u << STACKSNAP_REG_RBP);
	cap.nbt = backtrace(cap.bt, MAXF);
	/* Under AddressSanitizer backtrace() is intercepted: drop the
	 * interceptor's own frame. */
	Dl_info info;
	if (cap.nbt > 0 && dladdr(cap.bt[0], &info) && info.dli_fname &&
	    strstr(info.dli_fname, "libasan")) {
		memmove(cap.bt, cap.bt + 1, --cap.nbt * sizeof(cap.bt[0]));
	}

	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .max_frames = max_frames);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(&uo);
	struct stacksnap_mem *mem = mem_kind_self;

	if (use_copy) {
		CHECK(read_stack_end(rsp, &end) == 0);
		cap.copy_len = end - rsp < copy_bytes ? end - rsp : copy_bytes;
		cap.stack_copy = malloc(cap.copy_len);
		/* Through the kernel: a plain memcpy of live stack would trip
		 * AddressSanitizer's redzones. */
		struct iovec l = { cap.stack_copy, cap.copy_len };
		struct iovec r = { (void *)(uintptr_t)rsp, cap.copy_len };
		CHECK(process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)cap.copy_len);
		mem = stacksnap_mem__new_copy(cap.stack_copy, cap.copy_len, rsp);
		if (keep_copy) {
			stacksnap_mem__free(mem);
			stacksnap_unwinder__free(uw);
			return;
		}
	}
	cap.nframes = stacksnap_unwind(uw, self_as, &cap.regs, mem, cap.frames,
				       MAXF, &cap.end);
	if (use_copy) {
		stacksnap_mem__free(mem);
		free(cap.stack_copy);
	}
	stacksnap_unwinder__free(uw);
	__asm__ volatile("" ::: "memory");
}

static volatile int sink;
NOINLINE static void recurse(int depth, struct stacksnap_mem *m, int use_copy)
{
	if (depth > 0)
		recurse(depth - 1, m, use_copy);
	else
		innermost(m, use_copy);
	sink++; /* no tail call */
}

/* Frames 1.. of ours are return addresses, as bt[1..] are (bt[0] is the
 * return address into innermost after the backtrace() call). */
static void check_matches_backtrace(const char *what)
{
	int n = cap.nframes < cap.nbt ? cap.nframes : cap.nbt;
	int mismatches = 0;

	CHECKF(cap.nframes > 3, "%s: %d frames", what, cap.nframes);
	CHECKF(cap.nframes == cap.nbt, "%s: %d frames, backtrace() %d", what,
	       cap.nframes, cap.nbt);
	for (int i = 1; i < n; i++)
		if (cap.frames[i].pc != (uint64_t)(uintptr_t)cap.bt[i])
			mismatches++;
	if (mismatches || cap.nframes != cap.nbt)
		for (int i = 0; i < cap.nframes || i < cap.nbt; i++)
			fprintf(stderr, "    #%d ours %#llx backtrace() %p\n", i,
				i < cap.nframes ? (unsigned long long)cap.frames[i].pc : 0ull,
				i < cap.nbt ? cap.bt[i] : NULL);
	CHECKF(mismatches == 0, "%s: %d pcs differ from backtrace()", what,
	       mismatches);
	CHECKF(cap.end == STACKSNAP_END_COMPLETE, "%s: ended with %s", what,
	       stacksnap_end__str(cap.end));
	for (int i = 1; i < cap.nframes; i++)
		CHECK(cap.frames[i].sp > cap.frames[i - 1].sp);
}

static void self_live_memory(void)
{
	struct stacksnap_mem *m = stacksnap_mem__new_self();

	recurse(20, m, 0);
	check_matches_backtrace("self memory");
	stacksnap_mem__free(m);
}

static void self_copied_stack(void)
{
	recurse(20, NULL, 1);
	check_matches_backtrace("copied stack");
}

static void self_pid_memory(void)
{
	struct stacksnap_mem *m = stacksnap_mem__new_pid(getpid());

	recurse(20, m, 0);
	check_matches_backtrace("pid memory");
	stacksnap_mem__free(m);
}

static void deep_recursion(void)
{
	recurse(6000, NULL, 1);
	CHECKF(cap.nframes > 6000, "%d frames", cap.nframes);
	check_matches_backtrace("6000 frames");
}

static void frame_limit(void)
{
	max_frames = 10;
	recurse(50, NULL, 1);
	max_frames = MAXF;
	CHECK(cap.nframes == 10);
	CHECK(cap.end == STACKSNAP_END_FRAME_LIMIT);
}

static void stack_copy_too_small(void)
{
	copy_bytes = 8192;
	recurse(1000, NULL, 1);
	copy_bytes = 1 << 20;
	CHECK(cap.end == STACKSNAP_END_STACK_COPY);
	CHECKF(cap.nframes > 1 && cap.nframes < 1000, "%d frames", cap.nframes);
	/* Every frame produced lies inside the copy. */
	for (int i = 1; i < cap.nframes; i++)
		CHECK(cap.frames[i].sp <= cap.regs.regs[STACKSNAP_REG_RSP] + 8192);
}

static void symbolize_self(void)
{
	struct stacksnap_sym sym[8];
	int n, found_recurse = 0, found_innermost = 0;

	recurse(3, NULL, 1);
	for (int i = 0; i < cap.nframes; i++) {
		n = stacksnap_addrspace__symbolize(self_as, cap.frames[i].pc, i > 0,
						   0, sym, 8);
		CHECK(n >= 1);
		if (n >= 1 && sym[0].function) {
			found_innermost += !strcmp(sym[0].function, "innermost");
			found_recurse += !strcmp(sym[0].function, "recurse");
		}
	}
	CHECK(found_innermost == 1);
	CHECK(found_recurse == 4);
}

/* A pc outside every mapping ends the walk at once. */
static void pc_outside_mappings(void)
{
	struct stacksnap_addrspace *as = stacksnap_addrspace__new(ctx);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	uint64_t stack[4] = { 0 };
	struct stacksnap_mem *m = stacksnap_mem__new_copy(stack, sizeof(stack), 0x1000);
	struct stacksnap_regs r = { .valid = (1u << STACKSNAP_REG_RIP) | (1u << STACKSNAP_REG_RSP) };
	struct stacksnap_frame f[4];
	enum stacksnap_end end;

	r.regs[STACKSNAP_REG_RIP] = 0x400000;
	r.regs[STACKSNAP_REG_RSP] = 0x1000;
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .no_frame_pointer = true);
	struct stacksnap_unwinder *nofp = stacksnap_unwinder__new(&uo);
	CHECK(stacksnap_unwind(nofp, as, &r, m, f, 4, &end) == 1);
	CHECK(end == STACKSNAP_END_NO_MODULE);
	/* Registers without rsp are refused. */
	r.valid = 1u << STACKSNAP_REG_RIP;
	CHECK(stacksnap_unwind(uw, as, &r, m, f, 4, &end) == -EINVAL);
	stacksnap_unwinder__free(nofp);
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(m);
	stacksnap_addrspace__free(as);
}

/* The frame-pointer stepper over anonymous code: [rbp] = caller's rbp,
 * [rbp + 8] = return address, until a return address of 0. */
static void frame_pointer_chain(void)
{
	struct stacksnap_addrspace *as = stacksnap_addrspace__new(ctx);
	STACKSNAP_OPTS(stacksnap_mapping, code, .start = 0x10000, .end = 0x20000,
		       .prot = PROT_READ | PROT_EXEC);
	uint64_t stack[16] = { 0 };
	const uint64_t base = 0x7000;
	/* frame A at base+0x10: saved rbp -> base+0x30, ra 0x10100
	 * frame B at base+0x30: saved rbp -> 0, ra 0 (bottom) */
	stack[2] = base + 0x30;
	stack[3] = 0x10100;
	stack[6] = 0;
	stack[7] = 0;
	struct stacksnap_mem *m = stacksnap_mem__new_copy(stack, sizeof(stack), base);
	struct stacksnap_regs r = { .valid = 0x1ffff };
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_frame f[8];
	enum stacksnap_end end;
	int n;

	CHECK(stacksnap_addrspace__add_mapping(as, &code) == 0);
	r.regs[STACKSNAP_REG_RIP] = 0x10010;
	r.regs[STACKSNAP_REG_RSP] = base;
	r.regs[STACKSNAP_REG_RBP] = base + 0x10;
	n = stacksnap_unwind(uw, as, &r, m, f, 8, &end);
	CHECK(n == 2);
	CHECK(end == STACKSNAP_END_COMPLETE);
	CHECK(n == 2 && f[1].pc == 0x10100 && f[1].stepper == STACKSNAP_STEP_FP &&
	      f[1].trust == STACKSNAP_TRUST_FP && f[1].sp == base + 0x20);
	/* The return address leaves every executable mapping: BAD_PC. */
	stack[3] = 0x90000;
	n = stacksnap_unwind(uw, as, &r, m, f, 8, &end);
	CHECK(n == 1 && end == STACKSNAP_END_BAD_PC);
	/* Punching the code out of the space: the pc has no mapping. */
	CHECK(stacksnap_addrspace__remove_range(as, 0x10000, 0x11000) == 0);
	STACKSNAP_OPTS(stacksnap_unwind_opts, uo, .no_frame_pointer = true);
	struct stacksnap_unwinder *nofp = stacksnap_unwinder__new(&uo);
	n = stacksnap_unwind(nofp, as, &r, m, f, 8, &end);
	CHECK(n == 1 && end == STACKSNAP_END_NO_MODULE);
	stacksnap_unwinder__free(nofp);
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(m);
	stacksnap_addrspace__free(as);
}

static int cb_reads;
static int read_cb(void *user, uint64_t addr, void *buf, size_t len)
{
	cb_reads++;
	if (addr < 0x1000 || addr + len > 0x1010)
		return -EFAULT;
	memset(buf, 0xab, len);
	return 0;
}

static void memory_sources(void)
{
	uint8_t bytes[16];
	uint64_t v = 0;
	struct stacksnap_mem *copy, *cb;

	for (int i = 0; i < 16; i++)
		bytes[i] = (uint8_t)i;
	copy = stacksnap_mem__new_copy(bytes, sizeof(bytes), 0x2000);
	CHECK(stacksnap_mem__read(copy, 0x2008, &v, 8) == 0);
	CHECK(v == 0x0f0e0d0c0b0a0908ull);
	CHECK(stacksnap_mem__read(copy, 0x2009, &v, 8) == -ENODATA);
	CHECK(stacksnap_mem__read(copy, 0x1ff8, &v, 8) == -ENODATA);
	CHECK(stacksnap_mem__read(copy, UINT64_MAX - 3, &v, 8) == -ENODATA);
	cb = stacksnap_mem__new_callback(read_cb, NULL);
	CHECK(stacksnap_mem__set_fallback(copy, cb) == 0);
	CHECK(stacksnap_mem__read(copy, 0x1000, &v, 8) == 0 && v == 0xababababababababull);
	CHECK(stacksnap_mem__read(copy, 0x2000, &v, 8) == 0 && v == 0x0706050403020100ull);
	CHECK(cb_reads == 1);
	CHECK(stacksnap_mem__read(copy, 0x100c, &v, 8) == -EFAULT);
	CHECK(stacksnap_mem__set_fallback(copy, copy) == -EINVAL);
	/* A thread's other copied stacks: read after the copy, before the
	 * fallback; a read must lie inside one range. */
	uint8_t other[16];
	for (int i = 0; i < 16; i++)
		other[i] = (uint8_t)(0x40 + i);
	struct stacksnap_stack_range more[2] = { { other, 8, 0x5000 },
						 { other + 8, 8, 0x6000 } };
	CHECK(stacksnap_mem__set_more(copy, more, 2) == 0);
	CHECK(stacksnap_mem__read(copy, 0x6000, &v, 8) == 0 && v == 0x4f4e4d4c4b4a4948ull);
	CHECK(stacksnap_mem__read(copy, 0x5000, &v, 8) == 0 && v == 0x4746454443424140ull);
	CHECK(stacksnap_mem__read(copy, 0x5004, &v, 8) == -EFAULT); /* to the fallback */
	CHECK(stacksnap_mem__read(copy, 0x2000, &v, 8) == 0 && v == 0x0706050403020100ull);
	CHECK(stacksnap_mem__set_more(copy, NULL, 1) == -EINVAL);
	CHECK(stacksnap_mem__set_more(cb, more, 1) == -EINVAL); /* not a copy */
	CHECK(stacksnap_mem__set_more(copy, NULL, 0) == 0);
	CHECK(stacksnap_mem__read(copy, 0x6000, &v, 8) == -EFAULT);
	CHECK(stacksnap_mem__new_pid(-1) == NULL && errno == EINVAL);
	/* Live reads of an unmapped page fail cleanly. */
	struct stacksnap_mem *self = stacksnap_mem__new_pid(getpid());
	CHECK(stacksnap_mem__read(self, 8, &v, 8) == -EFAULT);
	CHECK(stacksnap_mem__read(self, (uint64_t)(uintptr_t)bytes, &v, 8) == 0);
	stacksnap_mem__free(self);
	stacksnap_mem__free(cb);
	stacksnap_mem__free(copy);
}

static void perf_register_layout(void)
{
	/* sample_regs_user with AX, SP, IP, R15 (bits 0, 7, 8, 23). */
	uint64_t mask = 1ull << 0 | 1ull << 7 | 1ull << 8 | 1ull << 23;
	uint64_t vals[] = { 11, 22, 33, 44 };
	struct stacksnap_regs r;

	stacksnap_regs__from_perf(&r, mask, vals);
	CHECK(r.regs[STACKSNAP_REG_RAX] == 11 && r.regs[STACKSNAP_REG_RSP] == 22 &&
	      r.regs[STACKSNAP_REG_RIP] == 33 && r.regs[STACKSNAP_REG_R15] == 44);
	CHECK(r.valid == (1u << STACKSNAP_REG_RAX | 1u << STACKSNAP_REG_RSP |
			  1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_R15));
}

/* Mappings described by the caller (as a perf or eBPF consumer would),
 * read here from /proc/self/maps: the same walk as the pid address space,
 * and the modules come from the context's cache, not opened again. */
static void caller_supplied_mappings(void)
{
	struct stacksnap_addrspace *as = stacksnap_addrspace__new(ctx);
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	static struct stacksnap_frame a[256], b[256];
	enum stacksnap_end enda, endb;
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int na, nb, added = 0;
	size_t before = ctx->nmodules;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms,
			   &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		STACKSNAP_OPTS(stacksnap_mapping, m, .start = lo, .end = hi,
			       .offset = off, .path = path);
		CHECK(stacksnap_addrspace__add_mapping(as, &m) == 0);
		added++;
	}
	if (f)
		fclose(f);
	CHECK(added >= 2);
	CHECK(ctx->nmodules == before);

	/* One capture, unwound in both address spaces. */
	keep_copy = 1;
	recurse(10, NULL, 1);
	keep_copy = 0;
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(
		cap.stack_copy, cap.copy_len, cap.regs.regs[STACKSNAP_REG_RSP]);
	na = stacksnap_unwind(uw, self_as, &cap.regs, mem, a, 256, &enda);
	nb = stacksnap_unwind(uw, as, &cap.regs, mem, b, 256, &endb);
	CHECK(na > 12 && na == nb && enda == STACKSNAP_END_COMPLETE && endb == enda);
	for (int i = 0; i < na && i < nb; i++)
		CHECK(a[i].pc == b[i].pc && a[i].sp == b[i].sp && a[i].cfa == b[i].cfa);
	stacksnap_mem__free(mem);
	free(cap.stack_copy);
	stacksnap_unwinder__free(uw);
	stacksnap_addrspace__free(as);
	CHECK(ctx->nmodules == before);
}

/* The unwinder's row cache (rows copied out of tables, keyed by each
 * table's serial): one unwinder walks the same copy through its own
 * context's tables, then through a second context's (other tables of the
 * same files: same offsets, other serials), then the first's again after
 * the second's tables are freed; every walk, cached or not, gives
 * glibc's backtrace(). */
static void row_cache_across_tables(void)
{
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_ctx *ctx2;
	struct stacksnap_addrspace *as2;
	struct stacksnap_mem *mem;

	keep_copy = 1;
	recurse(15, NULL, 1);
	keep_copy = 0;
	mem = stacksnap_mem__new_copy(cap.stack_copy, cap.copy_len,
				      cap.regs.regs[STACKSNAP_REG_RSP]);
	for (int round = 0; round < 3; round++) {
		ctx2 = round == 1 ? stacksnap_ctx__new(NULL) : NULL;
		as2 = ctx2 ? stacksnap_addrspace__from_pid(ctx2, getpid()) : NULL;
		CHECK(round != 1 || as2);
		for (int walk = 0; walk < 2; walk++) {
			cap.nframes = stacksnap_unwind(uw, as2 ? as2 : self_as, &cap.regs,
						       mem, cap.frames, MAXF, &cap.end);
			check_matches_backtrace(round == 1 ? "second context" : "own context");
		}
		stacksnap_addrspace__free(as2);
		stacksnap_ctx__free(ctx2);
	}
	stacksnap_mem__free(mem);
	free(cap.stack_copy);
	stacksnap_unwinder__free(uw);
}

/* A signal trampoline of our own that the code scan does not know
 * (`xor %eax,%eax; mov $15,%al; syscall`), described only by its CFI, the
 * way glibc describes __restore_rt: an 'S' CIE, CFA = the interrupted rsp
 * read from the ucontext at rsp, rip and rbp by DW_CFA_expression. The
 * unwinder must cross it through the DWARF rows. Offsets: the ucontext's
 * gregs start at 40; REG_RSP 15 -> 160, REG_RIP 16 -> 168, REG_RBP 10 -> 120. */
__asm__(".text\n"
	".type test_restorer_fde, @function\n"
	"test_restorer_fde:\n"
	".cfi_startproc simple\n"
	".cfi_signal_frame\n"
	".cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06\n" /* CFA = *(rsp+160) */
	".cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01\n" /* rip at rsp+168 */
	".cfi_escape 0x10, 0x06, 0x03, 0x77, 0xf8, 0x00\n" /* rbp at rsp+120 */
	"nop\n" /* a return-address lookup at pc-1 lands inside the FDE */
	".globl test_restorer\n"
	"test_restorer:\n"
	"xor %eax, %eax\n"
	"mov $15, %al\n"
	"syscall\n"
	".cfi_endproc\n"
	".size test_restorer_fde, .-test_restorer_fde\n");
void test_restorer(void);

struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static volatile int in_victim;

static void usr1_handler(int sig)
{
	struct stacksnap_mem *m = stacksnap_mem__new_self();

	innermost(m, 0);
	stacksnap_mem__free(m);
}

NOINLINE static void victim(void)
{
	in_victim = 1;
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
	in_victim = 0;
}

static void signal_frame_from_cfi(void)
{
	struct kernel_sigaction ka = { usr1_handler, 0x04000000 /* SA_RESTORER */,
				       test_restorer, 0 }, old;
	struct stacksnap_sym sym;
	int i, tramp = -1;

	CHECK(syscall(SYS_rt_sigaction, SIGUSR1, &ka, &old, 8) == 0);
	victim();
	syscall(SYS_rt_sigaction, SIGUSR1, &old, NULL, 8);
	CHECK(cap.end == STACKSNAP_END_COMPLETE);
	for (i = 0; i < cap.nframes; i++)
		if (cap.frames[i].flags & STACKSNAP_FRAME_SIGRETURN)
			tramp = i;
	CHECKF(tramp > 0 && tramp + 2 < cap.nframes, "trampoline frame %d of %d", tramp,
	       cap.nframes);
	if (tramp <= 0 || tramp + 2 >= cap.nframes)
		return;
	/* The frame after the trampoline was interrupted, restored through the
	 * DWARF expressions, inside libc's syscall(); then victim. */
	const struct stacksnap_frame *f = &cap.frames[tramp + 1];
	CHECK(f->stepper == STACKSNAP_STEP_DWARF);
	CHECK(f->flags & STACKSNAP_FRAME_SIGNAL);
	CHECK(stacksnap_addrspace__symbolize(self_as, cap.frames[tramp + 2].pc, true, 0,
					     &sym, 1) == 1);
	CHECKF(sym.function && !strcmp(sym.function, "victim"), "got %s",
	       sym.function ? sym.function : "??");
	CHECK(stacksnap_addrspace__symbolize(self_as, cap.frames[tramp].pc, true, 0,
					     &sym, 1) == 1);
	CHECK(sym.function && strstr(sym.function, "test_restorer"));
}

/* stacksnap_unwind's batch fast path and frame-at-a-time next() must give
 * the same frames (every field) and the same end, whole or truncated. */
static void batch_equals_stepwise(void)
{
	static const struct {
		size_t copy, max;
	} cases[] = { { 1 << 20, 4096 }, { 4096, 4096 }, { 1 << 20, 57 } };
	static struct stacksnap_frame a[4096], b[4096];
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);

	keep_copy = 1;
	recurse(300, NULL, 1);
	keep_copy = 0;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t len = cases[c].copy < cap.copy_len ? cases[c].copy : cap.copy_len;
		struct stacksnap_mem *mem = stacksnap_mem__new_copy(
			cap.stack_copy, len, cap.regs.regs[STACKSNAP_REG_RSP]);
		enum stacksnap_end enda;
		int na, nb = 0;

		na = stacksnap_unwind(uw, self_as, &cap.regs, mem, a, cases[c].max, &enda);
		CHECK(stacksnap_unwinder__start(uw, self_as, &cap.regs, mem) == 0);
		while ((size_t)nb < cases[c].max && stacksnap_unwinder__next(uw, &b[nb]) == 1)
			nb++;
		if ((size_t)nb == cases[c].max)
			CHECK(enda == STACKSNAP_END_FRAME_LIMIT);
		else
			CHECK(enda == stacksnap_unwinder__end(uw));
		CHECKF(na == nb, "case %zu: batch %d frames, stepwise %d", c, na, nb);
		int i = 0;
		while (i < na && i < nb && a[i].pc == b[i].pc && a[i].sp == b[i].sp &&
		       a[i].cfa == b[i].cfa && a[i].stepper == b[i].stepper &&
		       a[i].trust == b[i].trust && a[i].flags == b[i].flags)
			i++;
		CHECKF(i == na && i == nb, "case %zu: first difference at frame %d", c, i);
		CHECK(na > 50);
		stacksnap_mem__free(mem);
	}
	free(cap.stack_copy);
	stacksnap_unwinder__free(uw);
}

/* Counts calls into the allocator while counting is on, by interposing on
 * glibc's malloc family (not under AddressSanitizer, which owns them). */
static volatile int counting;
static volatile long alloc_calls;
#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
void *malloc(size_t n)
{
	alloc_calls += counting;
	return __libc_malloc(n);
}
void *calloc(size_t n, size_t size)
{
	alloc_calls += counting;
	return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n)
{
	alloc_calls += counting;
	return __libc_realloc(p, n);
}
#endif

/* Once the modules met have their tables, walking allocates nothing, not
 * even transiently: through both the batch path and next(). */
static void no_allocation_when_warm(void)
{
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	static struct stacksnap_frame f[1024];
	struct stacksnap_frame one;
	enum stacksnap_end end;
	struct mallinfo2 before, after;

	keep_copy = 1;
	recurse(100, NULL, 1);
	keep_copy = 0;
	struct stacksnap_mem *mem = stacksnap_mem__new_copy(
		cap.stack_copy, cap.copy_len, cap.regs.regs[STACKSNAP_REG_RSP]);
	CHECK(stacksnap_unwind(uw, self_as, &cap.regs, mem, f, 1024, &end) > 100);
	before = mallinfo2();
	counting = 1;
	for (int i = 0; i < 100; i++) {
		stacksnap_unwind(uw, self_as, &cap.regs, mem, f, 1024, &end);
		stacksnap_unwinder__start(uw, self_as, &cap.regs, mem);
		while (stacksnap_unwinder__next(uw, &one) == 1)
			;
	}
	counting = 0;
	after = mallinfo2();
	CHECKF(alloc_calls == 0, "%ld allocator calls", alloc_calls);
	CHECK(end == STACKSNAP_END_COMPLETE);
	CHECK(before.uordblks == after.uordblks && before.hblks == after.hblks &&
	      before.arena == after.arena);
	stacksnap_mem__free(mem);
	free(cap.stack_copy);
	stacksnap_unwinder__free(uw);
}

static void setup(void)
{
	/* The library opens libstdc++ on its first C++ name (demangle.c):
	 * open it now, so that caller_supplied_mappings finds in
	 * /proc/self/maps no file self_as did not see. */
	(void)!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	ctx = stacksnap_ctx__new(NULL);
	CHECK(ctx != NULL);
	self_as = stacksnap_addrspace__from_pid(ctx, getpid());
	CHECK(self_as != NULL);
	/* Modules of a pid's maps are opened when first found: only the
	 * vDSO (read at once, while the process is there) is open yet. */
	CHECKF(ctx->nmodules <= 1, "%zu modules opened by reading the maps",
	       ctx->nmodules);
	const struct as_map *m = addrspace__find(self_as, (uint64_t)(uintptr_t)&memcpy);
	CHECK(m && m->mod && !m->pending && ctx->nmodules <= 2);
	size_t pending = 0;
	for (size_t i = 0; i < self_as->n; i++)
		pending += self_as->maps[i].pending;
	CHECKF(pending >= 2, "%zu mappings still unopened", pending);
	/* caller_supplied_mappings below expects every file open. */
	addrspace__resolve_all(self_as);
	for (size_t i = 0; i < self_as->n; i++)
		CHECK(!self_as->maps[i].pending);
}

/* The same walks with every module's table lazy (compiled FDE by FDE as
 * the walks reach them) and trampolines found a page at a time. */
static void lazy_setup(void)
{
	stacksnap_addrspace__free(self_as);
	stacksnap_ctx__free(ctx);
	ctx = stacksnap_ctx__new(NULL);
	CHECK(ctx != NULL);
	ctx->lazy_min_cfi = 0;
	self_as = stacksnap_addrspace__from_pid(ctx, getpid());
	CHECK(self_as != NULL);
}

static void lazy_walks(void)
{
	struct stacksnap_ctx_stats st = { .sz = sizeof(st) };

	self_live_memory();
	self_copied_stack();
	deep_recursion();
	signal_frame_from_cfi();
	batch_equals_stepwise();
	CHECK(stacksnap_ctx__stats(ctx, &st) == 0);
	CHECKF(st.tables_lazy >= 2 && st.tables_whole == 0,
	       "%u lazy tables, %u whole", st.tables_lazy, st.tables_whole);
	/* Made whole (as an exporter of whole tables asks), the same walks. */
	for (struct module *m = ctx->modules; m; m = m->next)
		if (m->table) {
			CHECK(module__table_whole(ctx, m) == m->table);
			CHECK(!unwind_table__is_lazy(m->table));
		}
	self_copied_stack();
	signal_frame_from_cfi();
	batch_equals_stepwise();
}

/* Files are opened when a pc first lands in them; a target that exited
 * after its maps were read (a capture outlives its target) still has its
 * files found, at their paths, when they are the inodes it mapped. */
static void files_of_exited_process(void)
{
	struct stacksnap_ctx *c = stacksnap_ctx__new(NULL);
	struct stacksnap_addrspace *as;
	const struct as_map *m;
	int status;
	pid_t kid = fork();

	if (kid == 0) {
		pause();
		_exit(0);
	}
	CHECK(c && kid > 0);
	as = stacksnap_addrspace__from_pid(c, kid);
	CHECK(as != NULL);
	kill(kid, SIGKILL);
	CHECK(waitpid(kid, &status, 0) == kid);
	/* the child is a fork of this process: its libc is where ours is */
	m = addrspace__find(as, (uint64_t)(uintptr_t)&memcpy);
	CHECKF(m && m->mod, "libc's mapping of the exited child: %s",
	       m ? "not opened" : "not found");
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(c);
}

static void cleanup(void)
{
	stacksnap_addrspace__free(self_as);
	stacksnap_ctx__free(ctx);
}

TEST_MAIN("unwind", TEST(setup), TEST(self_live_memory), TEST(self_copied_stack),
	  TEST(self_pid_memory), TEST(deep_recursion), TEST(frame_limit),
	  TEST(stack_copy_too_small), TEST(symbolize_self), TEST(pc_outside_mappings),
	  TEST(frame_pointer_chain), TEST(caller_supplied_mappings),
	  TEST(row_cache_across_tables),
	  TEST(signal_frame_from_cfi), TEST(batch_equals_stepwise),
	  TEST(no_allocation_when_warm),
	  TEST(memory_sources), TEST(perf_register_layout),
	  TEST(lazy_setup), TEST(lazy_walks), TEST(files_of_exited_process),
	  TEST(cleanup))
