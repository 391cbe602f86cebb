/* handlers.h - the route handlers, a file per group: sandboxes.c (the
   sandbox, its network) and sandbox-verbs.c (its lifecycle verbs, metrics,
   snapshots), exec.c (exec and processes), stdin.c (a process's stdin and pty), files.c (files, archives),
   uploads.c (chunked uploads), images.c, secrets.c, account.c (me, usage,
   health).  routes.c maps paths to them.  */
#ifndef RT_SERVE_HANDLERS_H
#define RT_SERVE_HANDLERS_H

#include "serve/server.h"

/* The API of this machine's sandboxes: routes.c's table of the handlers
   below, for srv_run (serve/server.h) and for a cluster node's requests
   (cluster/nats.h).  */
extern const struct srv_app srv_api_app;

/* The body fields each route checks (srv_body_json), for its handler and
   for the document openapi.c makes of them: one list, so the two agree.  */
extern const struct srv_field srv_fields_create[], srv_fields_network[];     /* sandboxes.c */
extern const struct srv_field srv_fields_none[], srv_fields_wake[], srv_fields_extend[], srv_fields_update[],
    srv_fields_fork[], srv_fields_snapshot[];                                /* sandbox-verbs.c */
extern const struct srv_field srv_fields_exec[], srv_fields_spawn[], srv_fields_signal[]; /* exec.c */
extern const struct srv_field srv_fields_write[], srv_fields_size[];        /* stdin.c */
extern const struct srv_field srv_fields_upload[];                          /* uploads.c */
extern const struct srv_field srv_fields_mkdir[], srv_fields_remove[], srv_fields_rename[]; /* files.c */
extern const struct srv_field srv_fields_build[], srv_fields_recipe[];      /* images.c */
extern const struct srv_field srv_fields_secret[];                          /* secrets.c */
extern const struct srv_field srv_fields_session[];                         /* sessions.c */

/* openapi.c: GET /v1/openapi.json, and the document it answers (the caller
   owns it).  */
void srv_openapi (struct srv_req *r);
json_object *srv_openapi_document (void);

/* sandboxes.c */
void srv_sandbox_create (struct srv_req *r);
void srv_sandbox_list (struct srv_req *r);
void srv_sandbox_get (struct srv_req *r);
void srv_sandbox_delete (struct srv_req *r);
void srv_sandbox_verb (struct srv_req *r); /* :stop :pause :wake :extend :update :fork :snapshot */
void srv_network_get (struct srv_req *r);
void srv_network_put (struct srv_req *r);
void srv_metrics (struct srv_req *r);
void srv_snapshot_list (struct srv_req *r);
void srv_snapshot_get (struct srv_req *r);
void srv_snapshot_delete (struct srv_req *r);
/* Shared by sandboxes.c and sandbox-verbs.c: a sandbox as the API shows
   it; and that, polled every 100 ms until its state is @want (or stopped)
   or, with @want NULL, until it has settled (not starting, pausing,
   resuming or stopping), or @timeout_s passed, or the client went.  */
json_object *srv_sandbox_info (rt_context *ctx, const char *ref, rt_error **err);
json_object *srv_sandbox_wait (struct srv_req *r, rt_context *ctx, const char *ref, const char *want, int timeout_s,
                               rt_error **err);

/* sessions.c */
void srv_session_create (struct srv_req *r);
void srv_session_list (struct srv_req *r);
void srv_session_delete (struct srv_req *r);
void srv_session_verb (struct srv_req *r); /* :revoke */

/* exec.c */
void srv_exec (struct srv_req *r);
void srv_process_spawn (struct srv_req *r);
void srv_process_list (struct srv_req *r);
void srv_process_get (struct srv_req *r);
void srv_process_output (struct srv_req *r);
void srv_process_signal (struct srv_req *r);
/* {pid} as a process number; 0 (after answering 404) when it is none.  */
uint32_t srv_pid_param (struct srv_req *r);
/* @text_key (text) or @b64_key (base64) of @body, at most RT_MAX_STDIN
   bytes, in *@out (free it; NULL when neither); false after answering
   400.  */
bool srv_parse_bytes (struct srv_req *r, json_object *body, const char *text_key, const char *b64_key, uint8_t **out,
                      size_t *len);

/* stdin.c */
/* pty {cols, rows} (NULL: none) into @opts; false after answering 400.  */
bool srv_parse_pty (struct srv_req *r, json_object *pty, rt_exec_opts *opts);
void srv_process_write (struct srv_req *r);
void srv_process_resize (struct srv_req *r);

/* files.c */
void srv_files_get (struct srv_req *r);
void srv_files_put (struct srv_req *r);
void srv_files_list (struct srv_req *r);
void srv_files_stat (struct srv_req *r);
void srv_files_verb (struct srv_req *r); /* :mkdir :remove :rename */
void srv_archive_get (struct srv_req *r);
void srv_archive_put (struct srv_req *r);

/* uploads.c */
void srv_upload_begin (struct srv_req *r);
void srv_upload_chunk (struct srv_req *r);
void srv_upload_verb (struct srv_req *r); /* :commit :abort */

/* images.c */
void srv_image_build (struct srv_req *r);
void srv_image_list (struct srv_req *r);
void srv_image_get (struct srv_req *r);
void srv_image_logs (struct srv_req *r);
void srv_image_verb (struct srv_req *r); /* :delete */

/* secrets.c */
void srv_secret_list (struct srv_req *r);
void srv_secret_put (struct srv_req *r);
/* A PUT's body as rt_secret_opts (pointing into *body, *hosts and
   *rules, the caller's); false after answering 400.  */
bool srv_secret_parse (struct srv_req *r, json_object **body, rt_secret_opts *opts, char ***hosts, char ***rules);
void srv_secret_delete (struct srv_req *r);

/* terminal.c: the terminal, and what tunnel.c shares of it.  */
void srv_terminal (struct srv_req *r);
void srv_tunnel (struct srv_req *r); /* tunnel.c */
/* On an accepted WebSocket: {"type":"error","error":{code,message}} of
   @err, then the close with @close_code.  */
void srv_ws_fail (struct srv_req *r, const rt_error *err, unsigned close_code);

/* account.c */
void srv_me (struct srv_req *r);
void srv_usage (struct srv_req *r);
void srv_health (struct srv_req *r);

#endif
