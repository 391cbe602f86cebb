/* client.h - the OpenAI-compatible chat/completions call.  */
#ifndef RT_LLM_CLIENT_H
#define RT_LLM_CLIENT_H

#include "common/util.h"

/* POSTs @req to @url with @o's key, timeouts, streaming and Ctrl-C; the
   assistant message in *msg and the usage (or NULL) in *usage, both the
   caller's.  429: waits as Retry-After says; 5xx: backs off; both
   bounded.  */
int rt_chat_api_call (const rt_chat_opts *o, const char *url, json_object *req, json_object **msg,
                      json_object **usage, rt_error **err);

#endif
