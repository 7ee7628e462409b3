<?php
// record.php - a PHP target's record of its own stack, for
// tests/integration/php_frames: snap_record('sleep') called on the line
// of the blocking call writes, to the file $PHP_FRAMES_RECORD names (or
// argv[2]), the frames stacksnap must show innermost first: the internal
// function about to block (no file, no line), then each function of
// debug_backtrace() with the file and line it runs at (its callee's call
// site), then {main}.
function snap_record(string $blocker, ?string $path = null): void
{
    $bt = debug_backtrace(DEBUG_BACKTRACE_IGNORE_ARGS);
    $frames = [[$blocker, null, 0]];
    $n = count($bt);
    for ($k = 1; $k < $n; $k++) {
        $e = $bt[$k];
        $name = isset($e['class']) ? $e['class'] . '::' . $e['function'] : $e['function'];
        $frames[] = [$name, $bt[$k - 1]['file'] ?? null, $bt[$k - 1]['line'] ?? 0];
    }
    $frames[] = ['{main}', $bt[$n - 1]['file'], $bt[$n - 1]['line']];
    $rec = ['pid' => getmypid(), 'frames' => $frames,
            'trace' => (new Exception())->getTraceAsString()];
    $path = $path ?? getenv('PHP_FRAMES_RECORD');
    file_put_contents($path . '.tmp', json_encode($rec) . "\n");
    rename($path . '.tmp', $path);
}
