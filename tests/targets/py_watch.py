"""py_watch.py OUTDIR - a threaded Python program for `stacksnap watch`
(tests/integration/cli_watch): threads named by threading ("spinner"
busy in spin(), "sleeper-1" and "sleeper-2" in time.sleep, "waiter" on a
threading.Event) beside the main thread (time.sleep). Once all run it
writes OUTDIR/threads.json, {"native tid": "threading name"} as
threading.enumerate() says, then prints "ready" and runs until killed."""

import json
import os
import sys
import threading
import time

stop = threading.Event()


def spin():
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x += i
    return x


def sleeper():
    while not stop.is_set():
        time.sleep(0.05)


def waiter():
    stop.wait()


def main():
    threads = [threading.Thread(target=spin, name='spinner', daemon=True),
               threading.Thread(target=sleeper, name='sleeper-1', daemon=True),
               threading.Thread(target=sleeper, name='sleeper-2', daemon=True),
               threading.Thread(target=waiter, name='waiter', daemon=True)]
    for t in threads:
        t.start()
    while any(t.native_id is None for t in threads):
        time.sleep(0.01)
    names = {str(t.native_id): t.name for t in threading.enumerate()}
    out = os.path.join(sys.argv[1], 'threads.json')
    with open(out + '.tmp', 'w') as f:
        json.dump(names, f)
    os.rename(out + '.tmp', out)
    print('ready', flush=True)
    while True:
        time.sleep(1)


main()
