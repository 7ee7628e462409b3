// JavaLocks - Java threads blocked on monitors and java.util.concurrent
// locks, for tests/integration/waits_java: a monitor deadlock (mon-a,
// mon-b), a ReentrantLock deadlock (rl-a, rl-b), a thread waiting for a
// monitor whose holder sleeps (mon-wait, sleeper), one in Object.wait()
// (obj-wait), one waiting for a ReentrantLock a sleeping thread holds
// (rl-wait, rl-sleeper), one on a CountDownLatch (latch-wait) and one
// on a Condition (cond-wait), which keep no owner. Prints "ready N" once
// every one is blocked.
// With the argument "jni" (java_locks_jni.c loaded): instead, jni-a
// holds a monitor and waits in a JNI call for a pthread mutex that the
// native thread native-b holds while it waits, attached, to enter that
// monitor; prints "ready TID", native-b's thread id.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;

public class JavaLocks {
    static final Object lockA = new Object(), lockB = new Object();
    static final Object held = new Object(), waitOn = new Object();
    static final ReentrantLock rlA = new ReentrantLock(), rlB = new ReentrantLock();
    static final ReentrantLock rlHeld = new ReentrantLock();
    static final ReentrantLock condLock = new ReentrantLock();
    static final java.util.concurrent.locks.Condition cond = condLock.newCondition();
    static final CountDownLatch never = new CountDownLatch(1);

    static final Object mixLock = new Object();
    static native void nativeStart(Object lock);
    static native void nativeGo();
    static native void nativeLockMutex();
    static native int nativeTid();

    static void mixed() throws Exception {
        System.loadLibrary("java_locks_jni");
        nativeStart(mixLock);
        CountDownLatch inside = new CountDownLatch(1);
        Thread a = new Thread(() -> {
            synchronized (mixLock) { inside.countDown(); nativeLockMutex(); }
        }, "jni-a");
        a.start();
        inside.await();
        pause(100);
        nativeGo();
        for (boolean blocked = false; !blocked; pause(10))
            for (Thread t : Thread.getAllStackTraces().keySet())
                blocked |= t.getName().equals("native-b") &&
                           t.getState() == Thread.State.BLOCKED;
        pause(200);
        System.out.println("ready " + nativeTid());
        System.out.flush();
        pause(600000);
    }

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
        if (args.length > 0 && args[0].equals("jni")) {
            mixed();
            return;
        }
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
            new Thread(() -> {
                try { never.await(); } catch (InterruptedException e) { }
            }, "latch-wait"),
            new Thread(() -> {
                condLock.lock();
                try { cond.await(); } catch (InterruptedException e) { }
                finally { condLock.unlock(); }
            }, "cond-wait"),
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
