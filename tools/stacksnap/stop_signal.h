/* stop_signal.h - SIGINT, SIGTERM and SIGHUP as "stop and report" for the
 * commands that run until told (trace, profile, watch). */
#ifndef STACKSNAP_TOOL_STOP_SIGNAL_H
#define STACKSNAP_TOOL_STOP_SIGNAL_H

#include <signal.h>

/* The last of the three signals received, 0 before any. */
extern volatile sig_atomic_t stop_signal;

/* Installs the handler that sets stop_signal, without SA_RESTART: a
 * sleep or poll in progress returns, and the loop sees the flag. */
void stop_signal_catch(void);

#endif
