// JavaFrames.java - target of tests/integration/java_frames: threads
// blocked in known ways, each at the bottom of a known chain of methods:
// Thread.sleep deep in recursion, Object.wait, LockSupport.park, a
// ReentrantLock held by another thread, BlockingQueue.take, and a
// synchronized block another thread holds. The recursion is warmed first
// so that (without -Xint) the JIT compiles it. Prints "ready" once every
// thread is where it blocks as the JVM itself sees it (awaitBlocked).
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

public class JavaFrames {
	static final int DEPTH = 30;
	static volatile int sink;
	static volatile long sleepMs = 1;
	static final Object monitor = new Object();
	static final Object contended = new Object();
	static final ReentrantLock lock = new ReentrantLock();
	static final BlockingQueue<Integer> queue = new ArrayBlockingQueue<>(1);

	static int recurse(int n) throws InterruptedException {
		if (n == 0) {
			Thread.sleep(sleepMs);
			return 1;
		}
		return recurse(n - 1) + 1;
	}

	static void waitOn() throws InterruptedException {
		synchronized (monitor) {
			monitor.wait();
		}
	}

	static void park() {
		for (;;)
			LockSupport.park();
	}

	static void lockIt() {
		lock.lock();
		lock.unlock();
	}

	static void take() throws InterruptedException {
		queue.take();
	}

	static void enter() {
		synchronized (contended) {
			sink++;
		}
	}

	static void holdForever() throws InterruptedException {
		synchronized (contended) {
			lock.lock();
			Thread.sleep(Long.MAX_VALUE);
		}
	}

	static volatile long hotSink;

	/* Small enough to be inlined into spin by the JIT. */
	static long step(long x) {
		return x * 6364136223846793005L + 1442695040888963407L;
	}

	/* With the argument "hot", a thread "hot" runs this forever:
	 * compiled (OSR) with step inlined. */
	static void spin() {
		long x = 1;
		while (true) {
			for (int i = 0; i < 1000000; i++)
				x = step(x);
			hotSink = x;
		}
	}

	interface Body {
		void run() throws InterruptedException;
	}

	static Thread start(String name, Body b) {
		Thread t = new Thread(() -> {
			try {
				b.run();
			} catch (InterruptedException e) {
			}
		}, name);
		t.setDaemon(true);
		t.start();
		return t;
	}

	/* Waits until t is in state, its innermost frame cls.method (or, JDK
	 * 21+, its native helper: sleepNanos0, wait0): there
	 * it stays, its Java frames fixed until it is woken (none is). A
	 * thread found in a futex is not enough: under -Xcomp compiles are
	 * not in the background, and a thread on its way to its blocking
	 * point waits in a futex for each compile its path starts (the
	 * taker, initialising ForkJoinPool in managedBlock, for seconds on
	 * a loaded machine), its Java frames then not the final ones. Also
	 * a thread waiting for another to initialise a class is WAITING, in
	 * no blocking method of its own. */
	static void awaitBlocked(Thread t, Thread.State state, String cls,
				 String method) throws InterruptedException {
		long deadline = System.nanoTime() + 60_000_000_000L;
		String seen = "";
		while (System.nanoTime() < deadline) {
			if (t.getState() == state) {
				StackTraceElement[] st = t.getStackTrace();
				if (st.length > 0 && st[0].getClassName().equals(cls) &&
				    st[0].getMethodName().startsWith(method))
					return;
				seen = st.length > 0 ? st[0].toString() : "no frame";
			}
			Thread.sleep(10);
		}
		System.out.println("not blocked: " + t.getName() + " " +
				   t.getState() + " at " + seen);
		System.out.flush();
		System.exit(1);
	}

	public static void main(String[] args) throws Exception {
		for (int i = 0; i < 3000; i++)
			sink += recurse(10);
		sleepMs = Long.MAX_VALUE;
		Thread holder = start("holder", JavaFrames::holdForever);
		while (!lock.isLocked())
			Thread.sleep(1);
		Thread deep = start("deep", () -> recurse(DEPTH));
		Thread waiter = start("waiter", JavaFrames::waitOn);
		Thread parker = start("parker", JavaFrames::park);
		Thread locker = start("locker", JavaFrames::lockIt);
		Thread taker = start("taker", JavaFrames::take);
		Thread entrant = start("entrant", JavaFrames::enter);
		/* "hot": one thread more, running (profile, trace). */
		if (args.length > 0 && args[0].equals("hot"))
			start("hot", JavaFrames::spin);
		String unsafe = "jdk.internal.misc.Unsafe";
		awaitBlocked(holder, Thread.State.TIMED_WAITING, "java.lang.Thread",
			     "sleep");
		awaitBlocked(deep, Thread.State.TIMED_WAITING, "java.lang.Thread",
			     "sleep");
		awaitBlocked(waiter, Thread.State.WAITING, "java.lang.Object", "wait");
		awaitBlocked(parker, Thread.State.WAITING, unsafe, "park");
		awaitBlocked(locker, Thread.State.WAITING, unsafe, "park");
		awaitBlocked(taker, Thread.State.WAITING, unsafe, "park");
		awaitBlocked(entrant, Thread.State.BLOCKED, "JavaFrames", "enter");
		System.out.println("ready " + DEPTH);
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
