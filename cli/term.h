/* term.h - the host terminal of `exec -t` and `shell`: raw mode, put back
   on every way out of the process, and the window's size.  */
#ifndef RT_CLI_TERM_H
#define RT_CLI_TERM_H

#include <stdbool.h>

/* Saves @fd's terminal settings, then makes it raw (as cfmakeraw: no echo,
   no line editing, ^C ^Z ^\ are bytes, no output processing).  From then
   on the saved settings come back by cli_term_restore, at exit (atexit) and on
   every signal whose default ends the process (a crash, SIGQUIT, SIGUSR1,
   SIGALRM, …, SIGTERM when not blocked: put back, then the signal's
   default), unless the signal is ignored or handled already.  -1 with
   errno when @fd is not a terminal.  */
int cli_term_raw (int fd);
/* Puts the saved settings back (once; later calls do nothing).  Safe in a
   signal handler.  */
void cli_term_restore (void);
/* Raw again after a cli_term_restore (after SIGCONT: the shell that stopped us
   reset the terminal).  */
void cli_term_reraw (void);
/* Whether cli_term_raw is in force.  */
bool cli_term_is_raw (void);
/* The window size of @fd, else of stdout, else 80x24; each side clamped
   to 1..@max.  */
void cli_term_size (int fd, unsigned max, unsigned *cols, unsigned *rows);

#endif
