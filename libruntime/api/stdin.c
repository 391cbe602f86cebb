/* stdin.c - a background process's stdin and pty over HTTP (docs/API.md
   "Exec and processes"): POST …/processes/{pid}:write with offsets, and
   :resize (ours).  The monitor keeps the offsets (monitor/proc-stdin.h);
   a retry at an old offset is harmless there.
   (no header of its own: handlers.h declares its routes).  */
#include "common/proto.h"
#include "common/util.h"
#include "sandbox/handle.h"
#include "api/body.h"
#include "api/handlers.h"

#define bad_request(r, ...) (srv_reply_error (r, 400, "invalid_request", NULL, NULL, __VA_ARGS__), false)

/* {cols, rows} of 1..RT_PTY_MAX_SIDE into *@cols, *@rows; false after
   answering 400.  */
static bool
parse_size (struct srv_req *r, json_object *o, const char *what, unsigned *cols, unsigned *rows)
{
  json_object *c = json_object_object_get (o, "cols"), *w = json_object_object_get (o, "rows");

  if (!json_object_is_type (c, json_type_int) || !json_object_is_type (w, json_type_int)
      || !rt_pty_size_ok (json_object_get_int64 (c), json_object_get_int64 (w)))
    return bad_request (r, "%s needs cols and rows, integers 1 to %u", what, RT_PTY_MAX_SIDE);
  *cols = (unsigned) json_object_get_int64 (c);
  *rows = (unsigned) json_object_get_int64 (w);
  return true;
}

const struct srv_field srv_fields_size[] = { { "cols", json_type_int }, { "rows", json_type_int }, { NULL, 0 } };

bool
srv_parse_pty (struct srv_req *r, json_object *pty, rt_exec_opts *opts)
{
  cleanup_json json_object *issues = NULL;

  if (pty == NULL)
    return true;
  if (!json_object_is_type (pty, json_type_object))
    return bad_request (r, "pty must be an object {cols, rows}");
  issues = json_object_new_array ();
  srv_fields_check (pty, srv_fields_size, "pty", issues);
  if (srv_reply_issues (r, issues))
    return false;
  return parse_size (r, pty, "pty", &opts->pty_cols, &opts->pty_rows);
}

const struct srv_field srv_fields_write[] = {
  { "data", json_type_string }, { "base64", json_type_string }, { "offset", json_type_int },
  { "eof", json_type_boolean }, { NULL, 0 },
};

void
srv_process_write (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_write);
  cleanup_error rt_error *err = NULL;
  cleanup_free uint8_t *data = NULL;
  json_object *o, *v;
  uint64_t accepted = 0;
  size_t len = 0;
  rt_sandbox *sb;
  uint32_t pid;

  if (body == NULL)
    return;
  /* Without it a retry could not be told from new bytes.  */
  if (!json_object_object_get_ex (body, "offset", &v) || json_object_get_int64 (v) < 0)
    return (void) bad_request (r, "offset is required: where these bytes start in the process's stdin (its "
                                  "stdinOffset)");
  if (!srv_parse_bytes (r, body, "data", "base64", &data, &len) || (sb = srv_sandbox_open (r)) == NULL)
    return;
  if ((pid = srv_pid_param (r))
      && rt_sandbox_write (sb, pid, data, len, (uint64_t) json_object_get_int64 (v),
                           json_object_get_boolean (json_object_object_get (body, "eof")), &accepted, &err)
             < 0)
    srv_reply_rt_error (r, err);
  else if (pid)
    {
      o = json_object_new_object ();
      json_object_object_add (o, "offset", json_object_new_int64 ((int64_t) accepted));
      srv_reply_json (r, 200, o);
    }
  rt_sandbox_close (sb);
}

void
srv_process_resize (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_size);
  cleanup_error rt_error *err = NULL;
  unsigned cols, rows;
  rt_sandbox *sb;
  uint32_t pid;

  if (body == NULL || !parse_size (r, body, "resize", &cols, &rows) || (sb = srv_sandbox_open (r)) == NULL)
    return;
  if ((pid = srv_pid_param (r)) && rt_sandbox_resize (sb, pid, cols, rows, &err) < 0)
    srv_reply_rt_error (r, err);
  else if (pid)
    srv_reply_json (r, 200, json_object_new_object ());
  rt_sandbox_close (sb);
}
