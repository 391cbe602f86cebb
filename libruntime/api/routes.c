/* routes.c - which handler answers which path (docs/API.md; the first
   match wins, so a verb route comes before its {verb} catch-all): the
   API of this machine's sandboxes, as a server serves it.
   (no header of its own: handlers.h declares it).  */
#include <event2/http.h>

#include "api/handlers.h"

#define SB "/v1/sandboxes/{id}"

static const struct srv_route routes[] = {
  { EVHTTP_REQ_GET, "/v1/health", srv_health, SRV_INLINE | SRV_NO_AUTH },
  /* What the API is, for a client or a generator before it has a token:
     the same for everyone, and nothing of any tenant's.  */
  { EVHTTP_REQ_GET, "/v1/openapi.json", srv_openapi, SRV_INLINE | SRV_NO_AUTH },
  { EVHTTP_REQ_GET, "/v1/me", srv_me, SRV_INLINE },
  { EVHTTP_REQ_GET, "/v1/usage", srv_usage, 0 },

  { EVHTTP_REQ_POST, "/v1/sandboxes", srv_sandbox_create, 0 },
  { EVHTTP_REQ_GET, "/v1/sandboxes", srv_sandbox_list, 0 },
  { EVHTTP_REQ_GET, SB, srv_sandbox_get, SRV_SESSION },
  { EVHTTP_REQ_DELETE, SB, srv_sandbox_delete, 0 },
  { EVHTTP_REQ_POST, SB ":exec", srv_exec, SRV_SESSION },
  { EVHTTP_REQ_POST, SB ":{verb}", srv_sandbox_verb, 0 },
  { EVHTTP_REQ_GET, SB "/network", srv_network_get, 0 },
  { EVHTTP_REQ_PUT, SB "/network", srv_network_put, 0 },
  { EVHTTP_REQ_GET, SB "/metrics", srv_metrics, 0 },

  /* Sessions are made by a token only; SRV_SESSION marks what one may
     use (serve/sessions.h).  */
  { EVHTTP_REQ_POST, SB "/sessions", srv_session_create, 0 },
  { EVHTTP_REQ_GET, SB "/sessions", srv_session_list, 0 },
  { EVHTTP_REQ_DELETE, SB "/sessions/{session}", srv_session_delete, 0 },
  { EVHTTP_REQ_POST, SB "/sessions/{session}:{verb}", srv_session_verb, 0 },
  { EVHTTP_REQ_GET, SB "/terminal", srv_terminal, SRV_WEBSOCKET },
  { EVHTTP_REQ_GET, SB "/tunnel", srv_tunnel, SRV_WEBSOCKET },

  { EVHTTP_REQ_POST, SB "/processes", srv_process_spawn, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/processes", srv_process_list, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/processes/{pid}", srv_process_get, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/processes/{pid}/output", srv_process_output, SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:write", srv_process_write, SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:signal", srv_process_signal, SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:resize", srv_process_resize, SRV_SESSION },

  { EVHTTP_REQ_GET, SB "/files/content", srv_files_get, SRV_SESSION },
  { EVHTTP_REQ_PUT, SB "/files/content", srv_files_put, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/files/list", srv_files_list, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/files/stat", srv_files_stat, SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/files:{verb}", srv_files_verb, SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/uploads", srv_upload_begin, SRV_SESSION },
  { EVHTTP_REQ_PUT, SB "/uploads/{upload}", srv_upload_chunk, SRV_BIG_BODY | SRV_SESSION },
  { EVHTTP_REQ_POST, SB "/uploads/{upload}:{verb}", srv_upload_verb, SRV_SESSION },
  { EVHTTP_REQ_GET, SB "/files/archive", srv_archive_get, SRV_SESSION },
  { EVHTTP_REQ_PUT, SB "/files/archive", srv_archive_put, SRV_BIG_BODY | SRV_SESSION },

  { EVHTTP_REQ_GET, "/v1/snapshots", srv_snapshot_list, 0 },
  { EVHTTP_REQ_GET, "/v1/snapshots/{id}", srv_snapshot_get, 0 },
  { EVHTTP_REQ_DELETE, "/v1/snapshots/{id}", srv_snapshot_delete, 0 },
  /* The SDK's snapshots.delete (POST …:delete), as images take it.  */
  { EVHTTP_REQ_POST, "/v1/snapshots/{id}:delete", srv_snapshot_delete, 0 },

  { EVHTTP_REQ_POST, "/v1/images", srv_image_build, 0 },
  { EVHTTP_REQ_GET, "/v1/images", srv_image_list, 0 },
  { EVHTTP_REQ_GET, "/v1/images/{id}", srv_image_get, 0 },
  { EVHTTP_REQ_GET, "/v1/images/{id}/logs", srv_image_logs, 0 },
  { EVHTTP_REQ_POST, "/v1/images/{id}:{verb}", srv_image_verb, 0 },

  { EVHTTP_REQ_GET, "/v1/egress-secrets", srv_secret_list, 0 },
  { EVHTTP_REQ_PUT, "/v1/egress-secrets/{name}", srv_secret_put, 0 },
  { EVHTTP_REQ_DELETE, "/v1/egress-secrets/{name}", srv_secret_delete, 0 },
  { 0, NULL, NULL, 0 },
};

/* Every GET route's query parameters, and the PUTs' (docs/API.md).  */
static const struct srv_query_names queries[] = {
  { EVHTTP_REQ_GET, "/v1/health", "" },
  { EVHTTP_REQ_GET, "/v1/openapi.json", "" },
  { EVHTTP_REQ_GET, "/v1/me", "" },
  { EVHTTP_REQ_GET, "/v1/usage", "" },
  { EVHTTP_REQ_GET, "/v1/sandboxes", "state name label includeStopped limit cursor" },
  { EVHTTP_REQ_GET, SB, "waitFor timeoutSeconds" },
  { EVHTTP_REQ_GET, SB "/network", "" },
  { EVHTTP_REQ_PUT, SB "/network", "" },
  { EVHTTP_REQ_GET, SB "/metrics", "" },
  { EVHTTP_REQ_GET, SB "/sessions", "" },
  { EVHTTP_REQ_GET, SB "/terminal", "cols rows command cwd" },
  { EVHTTP_REQ_GET, SB "/tunnel", "" },
  { EVHTTP_REQ_GET, SB "/processes", "limit cursor" },
  { EVHTTP_REQ_GET, SB "/processes/{pid}", "" },
  { EVHTTP_REQ_GET, SB "/processes/{pid}/output", "cursor follow" },
  { EVHTTP_REQ_GET, SB "/files/content", "path" },
  { EVHTTP_REQ_PUT, SB "/files/content", "path mode" },
  { EVHTTP_REQ_GET, SB "/files/list", "path depth glob hidden limit" },
  { EVHTTP_REQ_GET, SB "/files/stat", "path" },
  { EVHTTP_REQ_PUT, SB "/uploads/{upload}", "offset" },
  { EVHTTP_REQ_GET, SB "/files/archive", "path gzip named" },
  { EVHTTP_REQ_PUT, SB "/files/archive", "path" },
  { EVHTTP_REQ_GET, "/v1/snapshots", "sandboxId name state limit cursor" },
  { EVHTTP_REQ_GET, "/v1/snapshots/{id}", "" },
  { EVHTTP_REQ_GET, "/v1/images", "state name limit cursor" },
  { EVHTTP_REQ_GET, "/v1/images/{id}", "" },
  { EVHTTP_REQ_GET, "/v1/images/{id}/logs", "cursor follow" },
  { EVHTTP_REQ_GET, "/v1/egress-secrets", "" },
  { EVHTTP_REQ_PUT, "/v1/egress-secrets/{name}", "" },
  { 0, NULL, NULL },
};

const struct srv_app srv_api_app = { .routes = routes, .queries = queries };
