#!/usr/bin/python3
"""waits_cost - what reading who waits for whom adds to the whole command
(BENCHMARKS.md, "Waits"): `stacksnap PID > /dev/null` on a 64-thread
target (32 threads in pthread_cond_wait on one condition variable, 31 in
sleep, the main thread in pause: the non-stop path), with `--no-waits`
and without, run alternately, each configuration with its own warm
cache. Medians of wall and CPU (user + system of the child, from wait4).
--bin LABEL=PATH adds another stacksnap binary (an older tree: its
waits read as it read them) to the same alternation.

    python3 bench/waits_cost.py [--runs 50] [--bin main=/tmp/old/stacksnap]
        [--args=--freeze-all]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TARGET = r"""
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static void *cond_waiter(void *a)
{
	pthread_mutex_lock(&m);
	for (;;)
		pthread_cond_wait(&c, &m);
	return a;
}
static void *sleeper(void *a)
{
	for (;;)
		sleep(1000);
	return a;
}
int main(void)
{
	pthread_t t;
	for (int i = 0; i < 32; i++)
		pthread_create(&t, NULL, cond_waiter, NULL);
	for (int i = 0; i < 31; i++)
		pthread_create(&t, NULL, sleeper, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append", default=[],
                    help="LABEL=PATH of another stacksnap binary (repeat)")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--args", default="", help="more options for every run")
    a = ap.parse_args()
    this = os.path.join(ROOT, common.O, "stacksnap")
    extra = a.args.split()
    cfgs = [("--no-waits", [this, "--no-waits"] + extra), ("waits", [this] + extra)]
    cfgs += [(label, [path] + extra) for label, path in
             (b.split("=", 1) for b in a.bin)]
    tmp = tempfile.mkdtemp(prefix="waits-cost-")
    src, target = os.path.join(tmp, "t.c"), os.path.join(tmp, "waits64")
    with open(src, "w") as f:
        f.write(TARGET)
    subprocess.check_call(["gcc", "-O1", "-g", "-pthread", "-o", target, src])
    t = subprocess.Popen([target], stdout=subprocess.PIPE, text=True)
    try:
        t.stdout.readline()
        time.sleep(0.3)  # every thread in its wait
        envs = []
        for i, (label, argv) in enumerate(cfgs):
            cache = os.path.join(tmp, "cache%d" % i)
            env = dict(os.environ, STACKSNAP_CACHE_DIR=cache)
            envs.append(env)
            for _ in range(3):  # warm: tables and names cached
                rc = common.run_tool(argv + [str(t.pid)], cpu=None,
                                     keep_output=False, env=env)[0]
                if rc:
                    sys.exit("%s: exit %d" % (label, rc))
            common.settle_dir(cache)
        wall = [[] for _ in cfgs]
        cpu = [[] for _ in cfgs]
        for _ in range(a.runs):
            for i, (label, argv) in enumerate(cfgs):
                r = common.run_tool(argv + [str(t.pid)], cpu=None,
                                    keep_output=False, env=envs[i])
                wall[i].append(r[3] * 1e3)
                cpu[i].append(r[4] * 1e3)
    finally:
        t.kill()
        t.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("== waits_cost: stacksnap %sPID > /dev/null, 64 threads, %d runs each, "
          "alternately (load average %s)" % (a.args + " " if a.args else "", a.runs,
                                             " ".join(common.load())))
    base_w, base_c = common.med(wall[0]), common.med(cpu[0])
    rows = []
    for i, (label, _) in enumerate(cfgs):
        w, c = common.med(wall[i]), common.med(cpu[i])
        rel = lambda x, b: "" if i == 0 else " (%+.1f%%)" % (100 * (x / b - 1))
        rows.append([label, "%.1f ms%s" % (w, rel(w, base_w)),
                     "%.1f ms%s" % (c, rel(c, base_c))])
    common.table(["", "wall", "CPU"], rows)


if __name__ == "__main__":
    main()
