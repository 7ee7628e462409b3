/* named_runtime.c - runtimes whose frames are named from native frames
 * after the walk (a HotSpot JVM, V8), driven through their table of
 * operations: the helpers the capture and the walker call, and a
 * runtime followed over samples for profile and trace (stacksnap_vm__*). */
#include <errno.h>
#include <stdlib.h>

#include "addrspace/module.h"
#include "base/log.h"
#include "capture/capture_internal.h"

bool capture__named_detect(struct named_runtime *nr,
			   const struct named_runtime_ops *ops, pid_t pid,
			   const struct stacksnap_addrspace *as,
			   const struct log_sink *log)
{
	nr->rt = ops->detect(pid, as, log);
	nr->ops = nr->rt ? ops : NULL;
	return nr->rt != NULL;
}

void capture__named_free(struct named_runtime *nr)
{
	if (nr->ops)
		nr->ops->free(nr->rt);
	nr->ops = NULL;
	nr->rt = NULL;
}

int capture__named_steppers(struct named_runtime *nr, struct stacksnap_unwinder *uw)
{
	return nr->ops && nr->ops->steppers ? nr->ops->steppers(nr->rt, uw) : 0;
}

int capture__named_frames(struct named_runtime *nr, size_t nthreads, size_t i,
			  struct stacksnap_mem *stack,
			  const struct stacksnap_frame *native, size_t nnative,
			  struct stacksnap_runtime_frame *out, size_t max)
{
	if (!nr->ops)
		return 0;
	return nr->ops->frames(nr->rt, nthreads, i, stack, native, nnative, out, max);
}

void capture__named_forget(struct named_runtime *nr, unsigned what)
{
	if (nr->ops)
		nr->ops->forget(nr->rt, what);
}

/* ------------------------------------------------------------------ */
/* A runtime followed over samples (profile, trace): its frames named per
 * walk. */

struct stacksnap_vm {
	struct named_runtime nr;
	struct stacksnap_mem *stack;	/* the sample's copy, reused */
	unsigned walks;		/* named so far: code ranges re-read now
				   and then */
};

struct stacksnap_vm *stacksnap_vm__open(struct stacksnap_ctx *ctx, pid_t pid,
					const struct stacksnap_addrspace *as)
{
	struct stacksnap_vm *vm;

	if (!ctx || pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	if (!(vm = calloc(1, sizeof(*vm))))
		return NULL;
	if (!(vm->stack = stacksnap_mem__new_copy(NULL, 0, 0))) {
		free(vm);
		return NULL;
	}
	/* V8 first, by its image's name: no JVM is looked for in node. */
	if (!capture__named_detect(&vm->nr, &capture__v8_ops, pid, as, &ctx->log) &&
	    !capture__named_detect(&vm->nr, &capture__java_ops, pid, as, &ctx->log)) {
		stacksnap_mem__free(vm->stack);
		free(vm);
		errno = ENOENT;
		return NULL;
	}
	return vm;
}

void stacksnap_vm__free(struct stacksnap_vm *vm)
{
	if (!vm)
		return;
	capture__named_free(&vm->nr);
	stacksnap_mem__free(vm->stack);
	free(vm);
}

enum stacksnap_runtime stacksnap_vm__runtime(const struct stacksnap_vm *vm)
{
	return vm ? vm->nr.ops->kind : STACKSNAP_RUNTIME_NATIVE;
}

int stacksnap_vm__steppers(struct stacksnap_vm *vm, struct stacksnap_unwinder *uw)
{
	if (!vm || !uw)
		return fail(-EINVAL);
	return capture__named_steppers(&vm->nr, uw);
}

void stacksnap_vm__enable(struct stacksnap_vm *vm, bool on)
{
	if (vm && vm->nr.ops->enable)
		vm->nr.ops->enable(vm->nr.rt, on);
}

int stacksnap_vm__frames(struct stacksnap_vm *vm, const void *stack, size_t stack_len,
			 uint64_t stack_base, const struct stacksnap_frame *native,
			 size_t nnative, struct stacksnap_runtime_frame *out, size_t max)
{
	int n;

	if (!vm || (nnative && !native) || (max && !out) || (stack_len && !stack))
		return fail(-EINVAL);
	/* Named afresh: the threads ran since the last walk. The code
	   (and what the runtime cached of its memory) read again at walks
	   1, 2, 4 ... 256, then every 256th: a runtime followed from its
	   start fills its tables in its first moments. */
	++vm->walks;
	capture__named_forget(&vm->nr, NAMED_FORGET_FRAMES |
			      (vm->walks % 256 == 0 ||
			       (vm->walks < 256 && !(vm->walks & (vm->walks - 1)))
			       ? NAMED_FORGET_CODE : 0));
	stacksnap_mem__set_copy(vm->stack, stack, stack_len, stack_base);
	n = capture__named_frames(&vm->nr, 1, 0, stack_len ? vm->stack : NULL,
				  native, nnative, out, max);
	stacksnap_mem__set_copy(vm->stack, NULL, 0, 0);
	/* What the steppers remembered was this walk's. */
	capture__named_forget(&vm->nr, NAMED_FORGET_WALKS);
	return n < 0 ? fail(n) : (n > (int)max ? (int)max : n);
}

size_t stacksnap_vm__steps(const struct stacksnap_vm *vm,
			   const struct stacksnap_runtime_step **steps)
{
	if (!vm || !steps || !vm->nr.ops->steps)
		return 0;
	return vm->nr.ops->steps(vm->nr.rt, steps);
}
