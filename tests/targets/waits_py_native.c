/* waits_py_native.c - built by tests/integration/waits_python into a
 * shared library loaded by waits_py.py (mode mixed-native): a native
 * thread, not made by Python, that holds native_lock and then waits for
 * the GIL in PyGILState_Ensure, as a C library's callback thread does.
 * Python's symbols come from the interpreter loading it (no headers). */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

int PyGILState_Ensure(void);
void PyGILState_Release(int state);

pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t locked;
static volatile int native_tid;

static void *native_thread(void *arg)
{
	(void)arg;
	native_tid = (int)syscall(SYS_gettid);
	pthread_mutex_lock(&native_lock);
	sem_post(&locked);
	/* Until Python holds the GIL in lock_native() for good: a moment
	 * early, this thread gets the GIL, gives it back and asks again. */
	for (;;) {
		usleep(100000);
		PyGILState_Release(PyGILState_Ensure());
	}
	return NULL;
}

/* Called with the GIL released (ctypes.CDLL): starts the native thread,
 * returns its tid once it holds native_lock. */
int start_native(void)
{
	pthread_t t;

	sem_init(&locked, 0, 0);
	if (pthread_create(&t, NULL, native_thread, NULL))
		return -1;
	while (sem_wait(&locked))
		;
	return native_tid;
}

/* Called with the GIL held (ctypes.PyDLL keeps it): blocks for good. */
void lock_native(void)
{
	pthread_mutex_lock(&native_lock);
}
