// JavaLocks - Java threads blocked on monitors and java.util.concurrent
// locks, for tests/integration/waits_java: a monitor deadlock (mon-a,
// mon-b), a ReentrantLock deadlock (rl-a, rl-b), a thread waiting for a
// monitor whose holder sleeps (mon-wait, sleeper), one in Object.wait()
// (obj-wait), one waiting for a ReentrantLock a sleeping thread holds
// (rl-wait, rl-sleeper). Prints "ready N" once every one is blocked.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;

public class JavaLocks {
    static final Object lockA = new Object(), lockB = new Object();
    static final Object held = new Object(), waitOn = new Object();
    static final ReentrantLock rlA = new ReentrantLock(), rlB = new ReentrantLock();
    static final ReentrantLock rlHeld = new ReentrantLock();

    static void pause(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { }
    }

    static Thread monitors(String name, Object first, Object second, CountDownLatch both) {
        return new Thread(() -> {
            synchronized (first) {
                both.countDown();
                try { both.await(); } catch (InterruptedException e) { }
                synchronized (second) { pause(1); }
            }
        }, name);
    }

    static Thread locks(String name, ReentrantLock first, ReentrantLock second,
                        CountDownLatch both) {
        return new Thread(() -> {
            first.lock();
            try {
                both.countDown();
                try { both.await(); } catch (InterruptedException e) { }
                second.lock();
                second.unlock();
            } finally {
                first.unlock();
            }
        }, name);
    }

    public static void main(String[] args) throws Exception {
        CountDownLatch mon = new CountDownLatch(2), rl = new CountDownLatch(2);
        CountDownLatch holding = new CountDownLatch(2);
        Thread sleeper = new Thread(() -> {
            synchronized (held) { holding.countDown(); pause(600000); }
        }, "sleeper");
        Thread rlSleeper = new Thread(() -> {
            rlHeld.lock();
            holding.countDown();
            pause(600000);
        }, "rl-sleeper");
        sleeper.start();
        rlSleeper.start();
        holding.await();
        Thread[] blocked = {
            monitors("mon-a", lockA, lockB, mon), monitors("mon-b", lockB, lockA, mon),
            locks("rl-a", rlA, rlB, rl), locks("rl-b", rlB, rlA, rl),
            new Thread(() -> { synchronized (held) { pause(1); } }, "mon-wait"),
            new Thread(() -> {
                synchronized (waitOn) {
                    try { waitOn.wait(); } catch (InterruptedException e) { }
                }
            }, "obj-wait"),
            new Thread(() -> { rlHeld.lock(); rlHeld.unlock(); }, "rl-wait"),
        };
        for (Thread t : blocked)
            t.start();
        for (boolean all = false; !all; pause(10)) {
            all = true;
            for (Thread t : blocked)
                all &= t.getState() == Thread.State.BLOCKED ||
                       t.getState() == Thread.State.WAITING;
        }
        pause(200);
        System.out.println("ready " + Thread.activeCount());
        System.out.flush();
        pause(600000);
    }
}
