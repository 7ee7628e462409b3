// JavaAltstack.java - target of tests/integration/java_altstack: Java
// threads inside signal handlers. "altjava" calls outer -> middle -> the
// native blockInHandler (tests/targets/java_altstack_jni.c), which raises
// a signal whose handler runs on an alternate signal stack and blocks in
// read(); "sharedjava" the same on an alternate stack at the bottom of a
// mapping that holds data above it; "normjava" with a handler on its own
// stack. Prints "ready" once every handler is about to block and the JVM
// sees each thread in blockInHandler; the test then waits for them in
// read().
public class JavaAltstack {
	static {
		System.loadLibrary("java_altstack");
	}

	/* Where the handler runs (java_altstack_jni.c's enum mode). */
	static final int NORMAL = 0, ALT = 1, SHARED = 2;

	static native int blockInHandler(int mode);

	static native int blocked();

	static void middle(int mode) {
		int err = blockInHandler(mode);
		System.out.println("blockInHandler returned " + err);
		System.out.flush();
		System.exit(1);
	}

	static void outer(int mode) {
		middle(mode);
	}

	static Thread start(String name, int mode) {
		Thread t = new Thread(() -> outer(mode), name);
		t.setDaemon(true);
		t.start();
		return t;
	}

	/* Whether t's innermost frame is blockInHandler (a native method's
	 * thread is RUNNABLE to the JVM: its frames are what says it). */
	static boolean inHandler(Thread t) {
		StackTraceElement[] st = t.getStackTrace();
		return st.length > 0 && st[0].getClassName().equals("JavaAltstack")
			&& st[0].getMethodName().equals("blockInHandler");
	}

	public static void main(String[] args) throws Exception {
		Thread alt = start("altjava", ALT);
		Thread shared = start("sharedjava", SHARED);
		Thread norm = start("normjava", NORMAL);
		long deadline = System.nanoTime() + 60_000_000_000L;
		while (blocked() < 3 || !inHandler(alt) || !inHandler(shared) ||
		       !inHandler(norm)) {
			if (System.nanoTime() > deadline) {
				System.out.println("not blocked: " + blocked());
				System.out.flush();
				System.exit(1);
			}
			Thread.sleep(10);
		}
		System.out.println("ready 3");
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
