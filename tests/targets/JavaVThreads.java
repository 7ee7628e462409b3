// JavaVThreads.java - target of tests/integration/java_vthreads (JDK 21+):
// a virtual thread pinned to its carrier (blocked in Thread.sleep inside
// a class initializer, which a virtual thread cannot unmount from) at
// the bottom of a known chain, and one unmounted (asleep, not pinned).
// Prints "ready" once both are where they block.
public class JavaVThreads {
	static volatile int sink;

	static int recurse(int n) throws InterruptedException {
		if (n == 0) {
			Thread.sleep(Long.MAX_VALUE);
			return 1;
		}
		return recurse(n - 1) + 1;
	}

	static class Pinned {
		static {
			try {
				sink = recurse(5);
			} catch (InterruptedException e) {
			}
		}
	}

	static void pinned() {
		sink += Pinned.class.hashCode() + new Pinned().hashCode();
	}

	static void unmounted() throws InterruptedException {
		recurse(3);
	}

	static void awaitSleeping(Thread t) throws InterruptedException {
		for (int i = 0; i < 6000; i++) {
			/* Parked in Thread.sleep (a virtual thread's innermost
			   frames are the scheduler's park). */
			if (t.getState() == Thread.State.TIMED_WAITING)
				for (StackTraceElement e : t.getStackTrace())
					if (e.getClassName().equals("java.lang.Thread") &&
					    e.getMethodName().equals("sleep"))
						return;
			Thread.sleep(10);
		}
		System.out.println("not blocked: " + t);
		System.exit(1);
	}

	public static void main(String[] args) throws Exception {
		Thread p = Thread.ofVirtual().name("pinned").start(JavaVThreads::pinned);
		Thread u = Thread.ofVirtual().name("unmounted").start(() -> {
			try {
				unmounted();
			} catch (InterruptedException e) {
			}
		});
		awaitSleeping(p);
		awaitSleeping(u);
		System.out.println("ready");
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
