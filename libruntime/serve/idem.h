/* idem.h - Idempotency-Key: the first complete answer to a key, kept on
   disk for 24 h so that a client's retry (also after a restart of the
   server) gets it again (docs/API.md, "Transport").  Loop thread only,
   but for srv_idem_store and srv_idem_sweep.  */
#ifndef RT_SERVE_IDEM_H
#define RT_SERVE_IDEM_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime.h"

#define SRV_IDEM_KEEP_S (24 * 3600)

struct srv_idem;

enum srv_idem_state
{
  SRV_IDEM_NEW,      /* go on; srv_idem_finish or srv_idem_drop later */
  SRV_IDEM_REPLAY,   /* *status, *ctype, *body: the kept answer */
  SRV_IDEM_CONFLICT, /* kept with another body */
  SRV_IDEM_BUSY,     /* being answered now: wait for srv_idem_finish */
};

int srv_idem_open (const char *dir, struct srv_idem **out, rt_error **err);
void srv_idem_free (struct srv_idem *s);
/* Removes the answers older than SRV_IDEM_KEEP_S (sweep.c: at the
   server's start and hourly, off the loop thread; reads only the dir's
   name, so it may run beside the loop's calls).  */
void srv_idem_sweep (struct srv_idem *s);
/* The id of a key: a hash of tenant, method, path and key (hex, free()).  */
char *srv_idem_id (const char *tenant, const char *method, const char *path, const char *key);
enum srv_idem_state srv_idem_begin (struct srv_idem *s, const char *id, const char *body_sha, int *status,
                                    char **ctype, char **body, size_t *len);
/* An answer a retry would get again: JSON, not a conflict of the moment
   (busy, not ready), a limit or a failure, and at most SRV_IDEM_MAX_KEEP
   bytes (so that reading it back on the loop thread stays short).  */
#define SRV_IDEM_MAX_KEEP (1u << 20)
bool srv_idem_keepable (int status, const char *ctype, size_t len);
/* Writes the answer to @id (atomically, with an fsync): by the worker
   that answers, before the loop sees the answer, so that the loop thread
   never waits for the disk.  Any thread: reads only the dir's name.  */
void srv_idem_store (struct srv_idem *s, const char *id, const char *body_sha, int status, const char *ctype,
                     const void *body, size_t len);
/* Keeps the answer (when @keep) and ends the key's busy time.  */
void srv_idem_finish (struct srv_idem *s, const char *id, const char *body_sha, bool keep, int status,
                      const char *ctype, const void *body, size_t len);

#endif
