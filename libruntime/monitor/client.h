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

#endif
