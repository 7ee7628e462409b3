/* java_locks_jni.c - the native half of JavaLocks' "jni" mode (for
 * tests/integration/waits_java): a native thread, native-b, holds a
 * pthread mutex, then attaches to the JVM and enters a Java monitor that
 * the Java thread jni-a holds while jni-a, in a JNI call, waits for the
 * mutex: one cycle through a mutex and a monitor. */
#define _GNU_SOURCE
#include <jni.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
static JavaVM *vm;
static jobject lock_ref;
static int go, locked, tid;

static void *native_b(void *arg)
{
	JavaVMAttachArgs args = { JNI_VERSION_1_8, "native-b", NULL };
	JNIEnv *env;

	(void)arg;
	pthread_setname_np(pthread_self(), "native-b");
	__atomic_store_n(&tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&mx);
	__atomic_store_n(&locked, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&go, __ATOMIC_SEQ_CST))
		usleep(1000);
	if ((*vm)->AttachCurrentThread(vm, (void **)&env, &args) == JNI_OK)
		(*env)->MonitorEnter(env, lock_ref); /* held by jni-a: forever */
	return NULL;
}

JNIEXPORT void JNICALL Java_JavaLocks_nativeStart(JNIEnv *env, jclass c, jobject lock)
{
	pthread_t t;

	(void)c;
	(*env)->GetJavaVM(env, &vm);
	lock_ref = (*env)->NewGlobalRef(env, lock);
	pthread_create(&t, NULL, native_b, NULL);
	while (!__atomic_load_n(&locked, __ATOMIC_SEQ_CST))
		usleep(1000);
}

JNIEXPORT void JNICALL Java_JavaLocks_nativeGo(JNIEnv *env, jclass c)
{
	(void)env;
	(void)c;
	__atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
}

JNIEXPORT void JNICALL Java_JavaLocks_nativeLockMutex(JNIEnv *env, jclass c)
{
	(void)env;
	(void)c;
	pthread_mutex_lock(&mx);
	pthread_mutex_unlock(&mx);
}

JNIEXPORT jint JNICALL Java_JavaLocks_nativeTid(JNIEnv *env, jclass c)
{
	(void)env;
	(void)c;
	return __atomic_load_n(&tid, __ATOMIC_SEQ_CST);
}
