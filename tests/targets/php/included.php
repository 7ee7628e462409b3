<?php
// included.php - top-level code include'd by frames.php (kind include):
// its frame is named "include", as PHP's backtraces name it.
function included_wait(int $n): void
{
    snap_record('usleep'); usleep($n);
}

included_wait(300000000);
