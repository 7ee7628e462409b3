// JavaThreads.java - bench/java_freeze.sh's target: N threads (argument),
// each asleep at the bottom of a 10-deep recursion; prints "ready".
public class JavaThreads {
	static int down(int n) throws InterruptedException {
		if (n == 0) {
			Thread.sleep(Long.MAX_VALUE);
			return 0;
		}
		return down(n - 1) + 1;
	}

	public static void main(String[] args) throws Exception {
		int n = Integer.parseInt(args[0]);
		for (int i = 0; i < n; i++) {
			Thread t = new Thread(() -> {
				try {
					down(10);
				} catch (InterruptedException e) {
				}
			}, "sleeper-" + i);
			t.setDaemon(true);
			t.start();
		}
		Thread.sleep(2000);
		System.out.println("ready");
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
