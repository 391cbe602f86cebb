/* client.h - talking to a sandbox's monitor over its api.sock (monitor.h).  */
#ifndef RT_API_H
#define RT_API_H

#include "common/util.h"

/* GET (verb NULL) or POST /v1/sandboxes/{id}[:verb] with a JSON body (a
   verb "/sub" PUTs the body to /v1/sandboxes/{id}/sub, or GETs it
   when @body is NULL); the reply's JSON
   in *reply (may be NULL).  An error reply becomes @err with
   its code.  */
int rt_api_call (const char *sock, const char *id, const char *verb, json_object *body, json_object **reply,
                 rt_error **err);

/* POST :@verb (exec, logs) and follow its NDJSON stream to its end; see
   rt_sandbox_exec.  *ended tells whether an exit event came; without
   @ended a stream that ends without one is an error.  */
int rt_api_stream (const char *sock, const char *id, const char *verb, json_object *request,
                   const rt_exec_opts *opts, rt_exec_result *res, bool *ended, rt_error **err);

/* POST :@verb and pass every line of its NDJSON stream to @on_event as a
   JSON object (borrowed), and NULL about once a second; <0 from it stops
   the stream.  Return: 0 when the stream ended or was stopped, <0 with
   @err when the monitor refused or could not be reached.  */
int rt_api_events (const char *sock, const char *id, const char *verb, json_object *request,
                   int (*on_event) (void *data, json_object *ev), void *data, rt_error **err);

#endif
