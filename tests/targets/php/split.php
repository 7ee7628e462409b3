<?php
// split.php SECONDS - a CPU-bound loop whose time splits 75/25 by work
// between heavy and light (the same spin, 3:1 iterations); prints "ready"
// once running. Each round's length is drawn at random (the 3:1 ratio
// kept), so that the rounds do not lock to the sampling's period. Used by
// tests/integration/php_profile.

function spin(int $n): int
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x += $i;
    }
    return $x;
}

function heavy(int $u): int
{
    return spin(30000 * $u);
}

function light(int $u): int
{
    return spin(10000 * $u);
}

function main(float $seconds): void
{
    $stop = hrtime(true) + (int)($seconds * 1e9);
    echo "ready\n";
    fflush(STDOUT);
    while (hrtime(true) < $stop) {
        $u = random_int(5, 15);
        heavy($u);
        light($u);
    }
}

main((float)$argv[1]);
