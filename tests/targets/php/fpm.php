<?php
// fpm.php - the script a php-fpm worker runs for
// tests/integration/php_frames: records its stack (record.php) to the
// file the request's RECORD parameter names, then sleeps.
require __DIR__ . '/record.php';

function serve(string $path): void
{
    (new FpmHandler())->handle($path);
}

class FpmHandler
{
    public function handle(string $path): void
    {
        snap_record('sleep', $path); sleep(300);
    }
}

serve($_SERVER['RECORD']);
