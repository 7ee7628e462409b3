// JavaFrames.java - target of tests/integration/java_frames: threads
// blocked in known ways, each at the bottom of a known chain of methods:
// Thread.sleep deep in recursion, Object.wait, LockSupport.park, a
// ReentrantLock held by another thread, BlockingQueue.take, and a
// synchronized block another thread holds. The recursion is warmed first
// so that (without -Xint) the JIT compiles it. Prints "ready" once every
// thread has been started; the test waits for them to block.
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

	public static void main(String[] args) throws Exception {
		for (int i = 0; i < 3000; i++)
			sink += recurse(10);
		sleepMs = Long.MAX_VALUE;
		start("holder", JavaFrames::holdForever);
		while (!lock.isLocked())
			Thread.sleep(1);
		start("deep", () -> recurse(DEPTH));
		start("waiter", JavaFrames::waitOn);
		start("parker", JavaFrames::park);
		start("locker", JavaFrames::lockIt);
		start("taker", JavaFrames::take);
		start("entrant", JavaFrames::enter);
		/* "hot": one thread more, running (profile, trace). */
		if (args.length > 0 && args[0].equals("hot"))
			start("hot", JavaFrames::spin);
		System.out.println("ready " + DEPTH);
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
