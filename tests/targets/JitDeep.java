// JitDeep.java - target of tests/integration/jit_names: a thread named
// "deep" recurses through JitDeep.down to a known depth and sleeps there;
// down is called often enough first that the JIT compiles it, so the
// sleeping chain holds compiled frames (and interpreted ones above
// them). Prints "ready DEPTH" once the thread is about to sleep.
public class JitDeep {
	static final int DEPTH = 40;
	static volatile int sink;

	static int down(int n, boolean sleep) throws InterruptedException {
		if (n == 0) {
			if (sleep) {
				System.out.println("ready " + DEPTH);
				System.out.flush();
				Thread.sleep(1000000000L);
			}
			return 1;
		}
		return down(n - 1, sleep) + 1;
	}

	public static void main(String[] args) throws Exception {
		for (int i = 0; i < 20000; i++)
			sink += down(10, false);
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
