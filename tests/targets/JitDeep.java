// JitDeep.java - target of tests/integration/jit_names: a thread named
// "deep" recurses through JitDeep.down to a known depth and sleeps there;
// down is called often enough first that the JIT compiles it, so the
// sleeping chain holds compiled frames (and interpreted ones above
// them; all interpreted under -Xint). Prints "ready DEPTH" once the
// thread is about to sleep.
public class JitDeep {
	static final int DEPTH = 40;
	static volatile int sink;

	static volatile long sleepMs;

	static int down(int n, boolean sleep) throws InterruptedException {
		if (n == 0) {
			if (sleep) {
				if (sleepMs > 0) {
					System.out.println("ready " + DEPTH);
					System.out.flush();
				}
				Thread.sleep(sleepMs);
			}
			return 1;
		}
		return down(n - 1, sleep) + 1;
	}

	public static void main(String[] args) throws Exception {
		/* Both branches warm: the compiled code keeps the sleeping path
		 * (no uncommon trap sends the deepest frame back to the
		 * interpreter), so the chain is compiled frame for frame. */
		for (int i = 0; i < 20000; i++)
			sink += down(10, (i & 7) == 0);
		sleepMs = 1000000000L;
		Thread t = new Thread(() -> {
			try {
				down(DEPTH, true);
			} catch (InterruptedException e) {
			}
		}, "deep");
		t.start();
		t.join();
	}
}
