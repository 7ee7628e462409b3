<?php
// frames.php KIND RECORD - blocks in a known PHP call chain after writing
// its own record (record.php): KIND sleep (methods, a static method, a
// closure, recursion), stdin (fgets(STDIN) in a method three calls deep),
// select (stream_select in a closure array_map calls: an internal
// function between PHP frames), include (a file's top-level code, include'd
// from a function), spin (a loop on CPU, records with no blocker). Used by
// tests/integration/php_frames.
require __DIR__ . '/record.php';
putenv('PHP_FRAMES_RECORD=' . $argv[2]);

class Handler
{
    public function handle(int $depth): void
    {
        if ($depth > 0) {
            $this->handle($depth - 1);
            return;
        }
        Util::wait();
    }
}

class Util
{
    public static function wait(): void
    {
        $f = function () {
            snap_record('sleep'); sleep(300);
        };
        $f();
    }
}

class Reader
{
    public function line(): string
    {
        return $this->read();
    }

    private function read(): string
    {
        snap_record('fgets'); return (string)fgets(STDIN);
    }
}

function select_all(): void
{
    $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    array_map(function ($s) {
        $r = [$s];
        $w = $e = null;
        snap_record('stream_select'); stream_select($r, $w, $e, 300);
    }, [$pair[0]]);
}

// Runs VM code forever (no call after the record): its line is the
// loop's, two lines below the record's, where the opline in memory still
// says the record's call.
function spin_forever(): void
{
    snap_record('');
    $i = 0;
    while (true) {}
}

function run(string $kind): void
{
    switch ($kind) {
    case 'sleep':
        (new Handler())->handle(2);
        break;
    case 'stdin':
        (new Reader())->line();
        break;
    case 'select':
        select_all();
        break;
    case 'include':
        include __DIR__ . '/included.php';
        break;
    case 'spin':
        spin_forever();
        break;
    }
}

run($argv[1]);
