/* client.h - the OpenAI-compatible chat/completions call.  */
#ifndef RT_LLM_CLIENT_H
#define RT_LLM_CLIENT_H

#include "common/util.h"

/* The chat/completions URL under @base (/beta/… when @strict) in *url,
   the caller's; invalid_request when @base is not an http or https URL
   with a host.  */
int rt_chat_api_url (const char *base, bool strict, char **url, rt_error **err);

/* POSTs @req to @url with @o's key, timeouts, streaming and Ctrl-C; the
   assistant message in *msg and the usage (or NULL) in *usage, both the
   caller's.  429: waits as Retry-After says; 500, 502, 503 and 504: backs
   off; both bounded.  Any other status is answered at once.  */
int rt_chat_api_call (const rt_chat_opts *o, const char *url, json_object *req, json_object **msg,
                      json_object **usage, rt_error **err);

#endif
