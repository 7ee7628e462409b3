/* JServer - a small Java server's threads as tests/integration/java_running
 * wants them: "writer" writes 16 bytes to /dev/null, then sleeps, in a
 * loop (interpreted for a long while: 20 writes a second); "hot" runs
 * hotLoop forever, which calls compute, small enough for C2 to inline it,
 * with a loop of its own (a safepoint poll inside the inlined leaf: jstack
 * names compute above hotLoop). The writer prints "write LINE" (the line
 * of its write call, from its own stack trace) once; main prints
 * "ready". */
import java.io.FileOutputStream;

public class JServer {
	static volatile long sink;

	static void writer() throws Exception {
		FileOutputStream out = new FileOutputStream("/dev/null");
		byte[] b = new byte[16];
		boolean said = false;

		while (true) {
			Throwable at = new Throwable(); out.write(b);
			if (!said) {
				System.out.println("write " + at.getStackTrace()[0].getLineNumber());
				System.out.flush();
				said = true;
			}
			Thread.sleep(50);
		}
	}

	static long compute(long x) {
		long s = x;
		for (int i = 0; i < 1000; i++)
			s = s * 6364136223846793005L + i;
		return s;
	}

	static void hotLoop() {
		long x = 1;
		while (true) {
			x = compute(x);
			sink = x;
		}
	}

	public static void main(String[] args) throws Exception {
		Thread w = new Thread(() -> {
			try {
				writer();
			} catch (Exception e) {
			}
		}, "writer");
		w.setDaemon(true);
		w.start();
		Thread h = new Thread(JServer::hotLoop, "hot");
		h.setDaemon(true);
		h.start();
		System.out.println("ready");
		System.out.flush();
		Thread.sleep(Long.MAX_VALUE);
	}
}
