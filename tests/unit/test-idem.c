/* test-idem.c - Idempotency-Key answers (serve/idem.h): a new key goes on,
   a repeat while it is answered waits, the kept answer comes back for the
   same body and a conflict for another, ids differ by tenant, method, path
   and key, an unkept answer (a stream, a 5xx) lets the retry run again,
   and a new store on the same dir (a restarted server) still has it.  */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/idem.h"
#include "tap.h"

int
main (void)
{
  char dir[] = "/tmp/test-idem-XXXXXX";
  struct srv_idem *s = NULL, *again = NULL;
  char *ctype = NULL, *body = NULL, *id, *id2;
  rt_error *err = NULL;
  size_t len = 0;
  int status = 0;

  ok (mkdtemp (dir) != NULL, "a temp dir");
  ok (srv_idem_open (dir, &s, &err) == 0, "open");
  id = srv_idem_id ("alice", "POST", "/v1/sandboxes", "k1");
  ok (id && strlen (id) == 64, "an id is 64 hex");
  id2 = srv_idem_id ("bob", "POST", "/v1/sandboxes", "k1");
  ok (strcmp (id, id2) != 0, "another tenant's key is another id");
  free (id2);
  id2 = srv_idem_id ("alice", "POST", "/v1/sandboxes/x", "k1");
  ok (strcmp (id, id2) != 0, "another path is another id");
  free (id2);
  id2 = srv_idem_id ("alice", "POST", "/v1/sandboxe", "sk1");
  ok (strcmp (id, id2) != 0, "parts do not run into each other");
  free (id2);

  ok (srv_idem_begin (s, id, "aa", &status, &ctype, &body, &len) == SRV_IDEM_NEW, "a new key goes on");
  ok (srv_idem_begin (s, id, "aa", &status, &ctype, &body, &len) == SRV_IDEM_BUSY, "its repeat waits meanwhile");
  srv_idem_finish (s, id, "aa", true, 201, "application/json", "{\"id\":\"sb-1\"}", 13);
  ok (srv_idem_begin (s, id, "aa", &status, &ctype, &body, &len) == SRV_IDEM_REPLAY, "then gets the answer");
  ok (status == 201 && strcmp (body, "{\"id\":\"sb-1\"}") == 0 && len == 13
          && strcmp (ctype, "application/json") == 0,
      "status, body and type as kept");
  free (body);
  free (ctype);
  body = ctype = NULL;
  ok (srv_idem_begin (s, id, "bb", &status, &ctype, &body, &len) == SRV_IDEM_CONFLICT, "another body conflicts");

  ok (srv_idem_open (dir, &again, &err) == 0, "a second store on the dir (a restart)");
  ok (srv_idem_begin (again, id, "aa", &status, &ctype, &body, &len) == SRV_IDEM_REPLAY, "still replays");
  free (body);
  free (ctype);
  body = ctype = NULL;
  srv_idem_free (again);

  free (id);
  id = srv_idem_id ("alice", "POST", "/v1/sandboxes/x:exec", "k2");
  ok (srv_idem_begin (s, id, "cc", &status, &ctype, &body, &len) == SRV_IDEM_NEW, "a stream's key goes on");
  srv_idem_finish (s, id, "cc", false, 200, "application/x-ndjson", NULL, 0);
  ok (srv_idem_begin (s, id, "cc", &status, &ctype, &body, &len) == SRV_IDEM_NEW, "unkept: the retry runs again");
  srv_idem_finish (s, id, "cc", false, 0, NULL, NULL, 0);
  free (id);
  id = srv_idem_id ("alice", "POST", "/v1/sandboxes", "k3");
  ok (srv_idem_keepable (201, "application/json", 10) && !srv_idem_keepable (503, "application/json", 10)
          && !srv_idem_keepable (409, "application/json", 10) && !srv_idem_keepable (429, "application/json", 10)
          && !srv_idem_keepable (200, "application/x-ndjson", 10)
          && !srv_idem_keepable (200, "application/json", SRV_IDEM_MAX_KEEP + 1),
      "kept: JSON answers up to 1 MiB but 409, 429 and 5xx");
  ok (srv_idem_begin (s, id, "dd", &status, &ctype, &body, &len) == SRV_IDEM_NEW, "a worker's key goes on");
  srv_idem_store (s, id, "dd", 201, "application/json", "{}", 2);
  ok (srv_idem_begin (s, id, "dd", &status, &ctype, &body, &len) == SRV_IDEM_BUSY,
      "stored by the worker: still busy until the loop ends it");
  srv_idem_finish (s, id, "dd", false, 0, NULL, NULL, 0);
  ok (srv_idem_begin (s, id, "dd", &status, &ctype, &body, &len) == SRV_IDEM_REPLAY && status == 201,
      "then the worker's stored answer replays");
  free (body);
  free (ctype);
  free (id);
  srv_idem_free (s);
  rt_rm_rf (dir, NULL);
  return tap_done ();
}
