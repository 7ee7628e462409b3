<?php
// mkdirs.php DIR OUT - makes directories in DIR from known PHP call
// chains (top-level code, a method 3 calls deep, a closure array_map
// calls: an internal function between PHP frames), each recording its
// own stack (record.php: debug_backtrace(), mkdir first) on the line of
// its mkdir, to OUT.0, OUT.1 ... in order. Used by
// tests/integration/php_profile (each mkdir's trace event must carry the
// record's frames). Sleeps 0.5 s before its first mkdir, 1 s before its
// exit.
require __DIR__ . '/record.php';

$n = 0;

function make(string $dir): void
{
    global $n, $argv;
    snap_record('mkdir', $argv[2] . '.' . $n++); mkdir($dir);
}

class Maker
{
    public function __construct(private string $base)
    {
    }

    public function deep(int $k): void
    {
        if ($k > 0) {
            $this->deep($k - 1);
            return;
        }
        make($this->base . '/deep');
    }

    public function each(): void
    {
        array_map(function ($x) {
            make($this->base . '/' . $x);
        }, ['a', 'b']);
    }
}

// The trace finds the engine at the exec (events before it carry native
// frames only); a loaded machine may take a while to pass it the layout.
usleep(500000);
make($argv[1] . '/top');
$m = new Maker($argv[1]);
$m->deep(3);
$m->each();
// The trace names the frames from the live process: an engine shutting
// down frees its functions before the process is held there.
usleep(1000000);
