"""waits_py.py MODE ROLEFILE - Python threads blocked on threading's locks
and on the GIL in known ways (tests/integration/waits_python). Writes
"role native-tid" lines to ROLEFILE (threading.get_native_id(): the
truth the test compares with; gettid(2) before 3.8), then prints "ready N".

locks: dl-a holds RLock a and waits for b, dl-b holds b and waits for a
(a deadlock); sleeper holds RLock c twice and sleeps, rl-wait waits for c;
main holds Lock d, lk-wait waits for it; cond, event and queue wait in
Condition.wait, Event.wait and Queue.get.
mixed: gil-a (main) holds the GIL in a native pthread_mutex_lock of a
mutex native-b holds, and native-b waits for the GIL (a deadlock).
mixed-native LIB: the same with a thread Python did not make, in LIB
(waits_py_native.c): it holds a mutex and waits in PyGILState_Ensure.
gil: hog holds the GIL in a busy loop (switch interval 1000 s: it is never
asked to drop it), gil-wait waits for it in take_gil."""
import os
import queue
import sys
import threading
import time

# threading.get_native_id() is 3.8's; before it, gettid(2) itself.
native_id = getattr(threading, 'get_native_id', None) or \
    (lambda: __import__('ctypes').CDLL(None).syscall(186))
mode, rolefile = sys.argv[1], sys.argv[2]
roles = {'main': native_id()}
lock = threading.Lock()
n_ready = threading.Semaphore(0)


def role(name):
    with lock:
        roles[name] = native_id()


def publish():
    with open(rolefile + '.tmp', 'w') as f:
        for k, v in roles.items():
            f.write('%s %d\n' % (k, v))
    os.rename(rolefile + '.tmp', rolefile)
    print('ready %d' % threading.active_count(), flush=True)


def start(name, fn):
    t = threading.Thread(target=fn, name=name, daemon=True)
    t.start()
    return t


if mode == 'locks':
    a, b, c, d = threading.RLock(), threading.RLock(), threading.RLock(), threading.Lock()
    both = threading.Barrier(2)
    held = threading.Event()

    def dl(mine, other, name):
        def run():
            role(name)
            with mine:
                both.wait()
                n_ready.release()
                with other:
                    pass
        return run

    def sleeper():
        role('sleeper')
        with c:
            with c:
                held.set()
                time.sleep(1000)

    def waiter(lk, name):
        def run():
            role(name)
            n_ready.release()
            lk.acquire()
        return run

    def cond():
        role('cond')
        cv = threading.Condition()
        with cv:
            n_ready.release()
            cv.wait()

    def event():
        role('event')
        n_ready.release()
        threading.Event().wait()

    def get():
        role('queue')
        n_ready.release()
        queue.Queue().get()

    d.acquire()
    start('dl-a', dl(a, b, 'dl-a'))
    start('dl-b', dl(b, a, 'dl-b'))
    start('sleeper', sleeper)
    held.wait()
    for name, fn in (('rl-wait', waiter(c, 'rl-wait')), ('lk-wait', waiter(d, 'lk-wait')),
                     ('cond', cond), ('event', event), ('queue', get)):
        start(name, fn)
    for _ in range(7):
        n_ready.acquire()
    time.sleep(0.2)  # the waiters reach their acquire
    publish()
    time.sleep(1000)
elif mode == 'mixed':
    # A cycle across the GIL and a native mutex: native-b locks a
    # pthread mutex through ctypes.CDLL (the GIL released for the call),
    # then sleeps and wants the GIL back; gil-a locks the same mutex
    # through ctypes.PyDLL, which keeps the GIL held during the call.
    import ctypes
    libc_name = 'libc.so.6'
    m = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER
    locked = threading.Event()

    def native_b():
        role('native-b')
        ctypes.CDLL(libc_name).pthread_mutex_lock(m)
        locked.set()
        time.sleep(0.3)
        sink = 1  # noqa: F841 (needs the GIL)

    start('native-b', native_b)
    locked.wait()
    role('gil-a')
    publish()
    ctypes.PyDLL(libc_name).pthread_mutex_lock(m)
elif mode == 'mixed-native':
    # The same cycle with a thread Python did not make: a native thread
    # (waits_py_native.c, its path in argv[3]) holds native_lock and
    # waits for the GIL in PyGILState_Ensure; main (gil-a) holds the GIL
    # in lock_native() (ctypes.PyDLL keeps it), blocked on native_lock.
    import ctypes
    lib = ctypes.CDLL(sys.argv[3])
    roles['native'] = lib.start_native()
    role('gil-a')
    publish()
    ctypes.PyDLL(sys.argv[3]).lock_native()
elif mode == 'gil':
    sys.setswitchinterval(1000)

    def gil_wait():
        role('gil-wait')
        n_ready.release()
        while True:
            time.sleep(0.01)

    def hog():
        role('hog')
        publish()
        while True:
            pass

    start('gil-wait', gil_wait)
    n_ready.acquire()
    start('hog', hog)
    time.sleep(1000)
