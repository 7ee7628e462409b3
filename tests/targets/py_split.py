"""py_split.py SECONDS - a CPU-bound loop whose time splits 75/25 by work
between heavy() and light() (the same spin, 3:1 iterations); prints
"ready" once running. Used by tests/integration/python_profile."""
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def heavy():
    return spin(30000)


def light():
    return spin(10000)


def main():
    end = time.time() + float(sys.argv[1])
    print('ready', flush=True)
    while time.time() < end:
        heavy()
        light()


main()
