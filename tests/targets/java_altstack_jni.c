/* java_altstack_jni.c - the JNI library of tests/targets/JavaAltstack.java:
 * a Java thread's native method raises a signal whose handler, on an
 * alternate signal stack (SA_ONSTACK) or on the thread's own stack, blocks
 * in read() for good at the end of a known chain. Built by
 * tests/integration/java_altstack (needs the JDK's jni.h). */
#define _GNU_SOURCE
#include <jni.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define ALT_SIZE (128 * 1024)
#define SHARED_SIZE (1024 * 1024)	/* an alternate stack's mapping shared
					   with data (MODE_SHARED) */
/* Signals HotSpot leaves alone (it takes SIGUSR2 for suspend/resume). */
#define SIG_ALT SIGUSR1
#define SIG_NORMAL (SIGRTMIN + 3)

/* Where blockInHandler's handler runs. */
enum mode {
	MODE_NORMAL,	/* the thread's own stack */
	MODE_ALT,	/* an alternate stack, a mapping of its own */
	MODE_SHARED,	/* an alternate stack at the bottom of a mapping
			   whose rest holds data */
};

static int block_pipe[2] = { -1, -1 };
static atomic_int nblocked;	/* handlers about to block */

static NOINLINE void block_forever(void)
{
	char c;

	atomic_fetch_add(&nblocked, 1);
	/* Nobody ever writes: read() blocks for good. */
	while (read(block_pipe[0], &c, 1) != 0)
		;
	KEEP_FRAME();
}

static void (*volatile call_block)(void) = block_forever;

static NOINLINE void handler_deep(int sig)
{
	(void)sig;
	call_block();
	KEEP_FRAME();
}

static void (*volatile call_handler_deep)(int) = handler_deep;

static void on_signal(int sig)
{
	call_handler_deep(sig);
	KEEP_FRAME();
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)vm;
	(void)reserved;
	return pipe(block_pipe) == 0 ? JNI_VERSION_1_8 : JNI_ERR;
}

/* Above the alternate stack in its mapping (MODE_SHARED): what the
 * kernel merged with one in a JVM held, zeros and pointers, one run of
 * which reads as a ucontext that names "an alternate stack at 0" as big
 * as a pointer (it holds every address below it) and an "interrupted
 * rsp" in the same mapping: no frame, the signal frame is below it. */
static void put_data(uint8_t *map)
{
	ucontext_t uc;
	uint64_t top = (uint64_t)(uintptr_t)(map + SHARED_SIZE);

	memset(&uc, 0, sizeof(uc));
	uc.uc_stack.ss_size = top - 4096;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(top - 2048);
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(top - 1024);
	memcpy(map + ALT_SIZE + 65536 + 16, &uc,
	       offsetof(ucontext_t, uc_mcontext.fpregs) + 8);
}

/* Blocks in a handler (where mode says) of a signal raised here; returns
 * only on failure (-1: no alternate stack, -2: no handler). */
JNIEXPORT jint JNICALL Java_JavaAltstack_blockInHandler(JNIEnv *env, jclass cls,
							jint mode)
{
	struct sigaction sa;
	int sig = mode == MODE_NORMAL ? SIG_NORMAL : SIG_ALT;

	(void)env;
	(void)cls;
	if (mode != MODE_NORMAL) {
		size_t size = mode == MODE_SHARED ? SHARED_SIZE : ALT_SIZE;
		stack_t ss;

		memset(&ss, 0, sizeof(ss));
		ss.ss_size = ALT_SIZE;
		ss.ss_sp = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ss.ss_sp == MAP_FAILED)
			return -1;
		if (mode == MODE_SHARED)
			put_data(ss.ss_sp);
		if (sigaltstack(&ss, NULL) != 0)
			return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = mode != MODE_NORMAL ? SA_ONSTACK : 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		return -2;
	raise(sig);
	KEEP_FRAME();
	return 0;
}

JNIEXPORT jint JNICALL Java_JavaAltstack_blocked(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return atomic_load(&nblocked);
}
