"""py_split.py SECONDS - a CPU-bound loop whose time splits 75/25 by work
between heavy() and light() (the same spin, 3:1 iterations); prints
"ready" once running. Each round's length is drawn at random (the 3:1
ratio kept): a round of fixed length near a multiple of the sampling
period locks the samples to one phase of it (3.13 once read heavy() at
63%). Used by tests/integration/python_profile."""
import random
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def heavy(u):
    return spin(int(30000 * u))


def light(u):
    return spin(int(10000 * u))


def main():
    end = time.time() + float(sys.argv[1])
    print('ready', flush=True)
    while time.time() < end:
        u = random.randint(5, 15) / 10
        heavy(u)
        light(u)


main()
