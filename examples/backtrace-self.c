/* backtrace-self.c - libstacksnap from the outside: print the calling
 * thread's own stack, unwound with the library's compiled CFI tables and
 * symbolized. Built against the installed library with
 *   cc backtrace-self.c $(pkg-config --cflags --libs stacksnap)
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <stacksnap.h>

static void log_cb(enum stacksnap_log_level level, const char *msg, void *user)
{
	fprintf(stderr, "libstacksnap: %s\n", msg);
}

/* Registers of this point in the calling function: enough to start. */
#define CURRENT_REGS(r)                                                        \
	do {                                                                   \
		uint64_t ip_, sp_, bp_;                                        \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\t"       \
				 "mov %%rbp, %2"                               \
				 : "=r"(ip_), "=r"(sp_), "=r"(bp_));           \
		(r)->regs[STACKSNAP_REG_RIP] = ip_;                            \
		(r)->regs[STACKSNAP_REG_RSP] = sp_;                            \
		(r)->regs[STACKSNAP_REG_RBP] = bp_;                            \
		(r)->valid = 1u << STACKSNAP_REG_RIP | 1u << STACKSNAP_REG_RSP | \
			     1u << STACKSNAP_REG_RBP;                          \
	} while (0)

__attribute__((noinline)) static int print_my_stack(void)
{
	STACKSNAP_OPTS(stacksnap_ctx_opts, copts, .log = log_cb);
	struct stacksnap_ctx *ctx = stacksnap_ctx__new(&copts);
	struct stacksnap_addrspace *as = ctx ? stacksnap_addrspace__from_pid(ctx, getpid()) : NULL;
	struct stacksnap_mem *mem = stacksnap_mem__new_self();
	struct stacksnap_unwinder *uw = stacksnap_unwinder__new(NULL);
	struct stacksnap_frame frames[64];
	struct stacksnap_regs regs = { 0 };
	enum stacksnap_end end;
	int n;

	if (!as || !mem || !uw)
		return 1;
	CURRENT_REGS(&regs);
	n = stacksnap_unwind(uw, as, &regs, mem, frames, 64, &end);
	for (int i = 0; i < n; i++) {
		struct stacksnap_sym sym;

		if (stacksnap_addrspace__symbolize(as, frames[i].pc,
						   stacksnap_frame__is_return(&frames[i]),
						   0, &sym, 1) < 1)
			sym.function = NULL;
		printf("#%d %s\n", i, sym.function ? sym.function : "??");
	}
	printf("end: %s\n", stacksnap_end__str(end));
	stacksnap_unwinder__free(uw);
	stacksnap_mem__free(mem);
	stacksnap_addrspace__free(as);
	stacksnap_ctx__free(ctx);
	return end == STACKSNAP_END_COMPLETE ? 0 : 1;
}

__attribute__((noinline)) static int middle(void)
{
	int r = print_my_stack();
	__asm__ volatile("" ::: "memory");
	return r;
}

int main(void)
{
	int r = middle();
	__asm__ volatile("" ::: "memory");
	return r;
}
