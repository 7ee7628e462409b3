"""py_deep_spin.py SECONDS DEPTH - spins in spin() DEPTH recursive Python
calls deep for SECONDS; for bench/python_sample_cost.sh."""
import sys, time
def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x
def down(n, end):
    if n:
        return down(n - 1, end)
    while time.time() < end:
        spin(10000)
down(int(sys.argv[2]), time.time() + float(sys.argv[1]))
