/* sessions.h - sandbox sessions (docs/API.md "Sessions"): short-lived
   bearer tokens, "rtsess_" and 40 base32 characters (200 bits from
   getrandom), that a token makes for one of its sandboxes so that a page
   in a browser can reach that sandbox's exec, processes and files (the
   routes marked SRV_SESSION in api/routes.c) and nothing else, answered
   with CORS for the exact origins the session was made with.

   The server keeps them in memory (a restart ends them all: nothing of a
   session is on disk), each as the SHA-256 of its token, compared in
   constant time as tokens are (tokens.c).  A session acts as the token
   that made it, checked again at each request: `runtime token rm` ends
   its sessions at once.  Ended sessions are listed for a day, then
   forgotten.  Every function takes the table's lock: the loop thread
   checks, worker threads make, list and revoke.  */
#ifndef RT_SERVE_SESSIONS_H
#define RT_SERVE_SESSIONS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define SRV_SESSION_TOKEN_PREFIX "rtsess_"
#define SRV_SESSION_TTL_DEFAULT_S 3600
#define SRV_SESSION_TTL_MIN_S 60
#define SRV_SESSION_TTL_MAX_S 86400
#define SRV_SESSION_MAX_ORIGINS 8
#define SRV_SESSION_ORIGIN_MAX 255
#define SRV_SESSION_NAME_MAX 64
/* Active sessions of one sandbox; more are refused 429 quota_exceeded.  */
#define SRV_SESSIONS_PER_SANDBOX 32
/* Active sessions of one token; more are refused 429 quota_exceeded.  */
#define SRV_SESSIONS_PER_TENANT 256
/* Sessions kept in all (ended ones a day, the oldest of them forgotten
   first to make room); more active ones are refused 503.  */
#define SRV_SESSIONS_MAX 4096

struct srv_session
{
  char id[32];      /* "sess_" and 20 base32 characters */
  char sandbox[72]; /* the sandbox's id */
  char tenant[33];  /* the token that made it */
  char name[SRV_SESSION_NAME_MAX + 1];
  bool named;
  char origins[SRV_SESSION_MAX_ORIGINS][SRV_SESSION_ORIGIN_MAX + 1];
  unsigned norigins;
  int64_t created_ms, expires_ms, revoked_ms; /* revoked_ms 0: not revoked */
  unsigned char hash[32];
};

struct srv;
struct srv_req;
struct srv_sessions;

int srv_sessions_setup (struct srv *s);
void srv_sessions_free (struct srv *s);

/* The session whose token is @bearer into *out: 1 when it is active, -1
   when it ended (expired or revoked: *out still filled, for the CORS of
   its refusal), 0 when there is none.  */
int srv_sessions_check (struct srv *s, const char *bearer, struct srv_session *out);
/* True when some active session of @sandbox lists @origin: a preflight
   from it is answered.  */
bool srv_sessions_origin_ok (struct srv *s, const char *sandbox, const char *origin);
/* The shortest ttlSeconds a create may ask for: SRV_SESSION_TTL_MIN_S, or
   RUNTIME_SERVE_SESSION_MIN_TTL (1 to 60) when the server started.  */
unsigned srv_sessions_min_ttl (struct srv_req *r);
/* True when @origin is one of @ss's.  */
bool srv_session_lists (const struct srv_session *ss, const char *origin);
/* An origin a session may list: "https://host[:port]", or
   "http://localhost[:port]" and "http://127.0.0.1[:port]", lower-case,
   with no path.  */
bool srv_session_origin_valid (const char *origin);

/* A new session of @ss (sandbox, tenant, name, origins, ttl in
   expires_ms - created_ms filled by the caller): its id, times and token
   made here, the token into @token (41 + 7 bytes).  0; -EMFILE when its
   sandbox has SRV_SESSIONS_PER_SANDBOX active, -ENOSPC when the table is
   full, -EIO when getrandom failed.  */
int srv_sessions_add (struct srv_req *r, struct srv_session *ss, char token[48]);
/* The sessions of @tenant on @sandbox, newest first, as the API shows
   them (a JSON array).  */
json_object *srv_sessions_list (struct srv_req *r, const char *tenant, const char *sandbox);
/* Ends session @id of @tenant on @sandbox (revoking it again keeps its
   first time): 1 and *out filled, 0 when there is none.  */
int srv_sessions_revoke (struct srv_req *r, const char *tenant, const char *sandbox, const char *id,
                         struct srv_session *out);
/* A request whose bearer is session @ss (@state as srv_sessions_check
   said): true when it may go on, acting as the session's token; false
   after answering 401 (ended, or its token removed) or 403 (a route or
   sandbox not its own, or a page of another origin).  Answers to a page
   of one of its origins carry CORS, refusals too.  Loop thread.  */
bool srv_session_admit (struct srv_req *r, int state);
/* OPTIONS: a browser's preflight, answered 204 with CORS when a session
   of the path's sandbox lists its Origin and the method asked for is a
   session's route there; else 403 without CORS.  Loop thread.  */
void srv_session_preflight (struct srv_req *r);
/* @ss as the API shows it (never its hash).  */
json_object *srv_session_json (const struct srv_session *ss);

#endif
