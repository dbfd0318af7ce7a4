/* watchdog.h — turns a hang into an error that says what this rank was doing.
 * A background thread watches the time since the last watchdog_context() call ("progress");
 * when it exceeds the timeout it prints
 *   pdl: rank R: watchdog: no progress for S s while <context>
 * on stderr and ends the job: MPI_Abort(MPI_COMM_WORLD, 124) when MPI is initialised, else
 * _exit(124) (124 is what timeout(1) uses). Call watchdog_context() at every step that is
 * expected to finish within the timeout (it is cheap: a mutex and a snprintf). */
#ifndef PDL_WATCHDOG_H
#define PDL_WATCHDOG_H

#define PDL_EXIT_WATCHDOG 124

void watchdog_start(double timeout_s);                                       /* 0 = off */
void watchdog_context(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* also counts as progress */
void watchdog_stop(void);                                                    /* idempotent */

#endif
