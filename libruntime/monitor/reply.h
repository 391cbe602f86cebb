/* reply.h - the monitor's answers on api.sock: JSON replies, errors
 * ({"error":{code,message,hint}}) and NDJSON stream lines.
 */
#ifndef RT_MONITOR_REPLY_H
#define RT_MONITOR_REPLY_H

#include <event2/http.h>

#include "common/util.h"

/* {"error":{code,message,hint}}, a new object.  */
json_object *mon_error_object (const char *code, const char *msg, const char *hint);
/* {"type":"error","error":{code,message,hint:null}}: a stream's last line.  */
json_object *mon_error_line (const char *code, const char *msg);

void mon_reply_json (struct evhttp_request *req, int code, json_object *obj);
void mon_reply_error (struct evhttp_request *req, int http, const char *code, const char *hint, const char *fmt,
                      ...)
    RT_PRINTF (5, 6);

/* Starts a 200 NDJSON stream.  */
void mon_start_stream (struct evhttp_request *req);
/* One line of a stream; @cb when it is written to the client's socket.  */
void mon_send_line (struct evhttp_request *req, json_object *obj, void (*cb) (struct evhttp_connection *, void *),
                void *arg);
/* {"type":@type,"data":BASE64} of @data.  */
void mon_send_output (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len,
                  void (*cb) (struct evhttp_connection *, void *), void *arg);
/* {"type":@type,"data":BASE64,"offset":@offset}: output from a byte
   cursor (procs.c), @offset counting both streams' bytes.  */
void mon_send_output_at (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len,
                         uint64_t offset);

#endif
