/* sweep.h - what the server keeps on disk for a while, removed once old:
   Idempotency-Key answers (idem.c), a deleted sandbox's answer for a
   repeat DELETE (<data>/serve/deleted/<tenant>/<id>, sandboxes.c) and a
   sandbox's network version (<data>/serve/network/<id>), so that their
   disk use stays bounded.  */
#ifndef RT_SERVE_SWEEP_H
#define RT_SERVE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* How long a gone sandbox's files stay (a repeat DELETE answers as the
   first for as long).  */
#define SRV_SWEEP_KEEP_S (24 * 3600)

/* Removes the files in @dir (with @depth 1: in its subdirectories) last
   changed over @age_s before @now, except those @keep (when given) says
   to keep by name.  Symbolic links and other non-files are left.
   Return: how many were removed.  */
size_t srv_sweep_dir (const char *dir, time_t now, time_t age_s, int depth, bool (*keep) (const char *name, void *arg),
                      void *arg);

struct srv;
/* The hourly sweep, on a thread of its own counted as a worker (a stopping
   server waits for it); one at a time.  Loop thread.  */
void srv_sweep_start (struct srv *s);

#endif
