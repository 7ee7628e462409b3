/* mm_task.h - the task through which a live process's address space is
 * read. A main thread that called pthread_exit() stays a zombie while the
 * other threads run; its /proc/PID/maps, mem, exe and root are empty or
 * gone, a live thread's /proc/TID/... are not. */
#ifndef SS_BASE_MM_TASK_H
#define SS_BASE_MM_TASK_H

#include <stdbool.h>
#include <sys/types.h>

/* pid itself while its main thread lives; when that one has exited, the
 * first live thread of /proc/PID/task; pid when there is none. */
pid_t mm_task_of(pid_t pid);

/* Whether thread tid of pid is a zombie or dead ('Z', 'X'); false when
 * its state cannot be read. */
bool mm_task_exited(pid_t pid, pid_t tid);

#endif
