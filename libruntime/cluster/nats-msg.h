/* nats-msg.h - the request message of cluster/nats.h read into its
 * parts, before anything of the server sees it: a pure function of its
 * bytes (tests/fuzz/fuzz-nats-msg.c), which nats.c makes into a srv_req.
 */
#ifndef RT_CLUSTER_NATS_MSG_H
#define RT_CLUSTER_NATS_MSG_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_nats_msg
{
  json_object *root;             /* owns what the pointers below point into */
  const char *method, *path;     /* path starts with '/' */
  json_object *query, *headers;  /* NULL, or {NAME: VALUE or [VALUE…]}, strings */
  unsigned char *body;           /* decoded, one spare NUL past body_len; NULL when none */
  size_t body_len;               /* at most SRV_MAX_BODY */
  int64_t timeout_ms;            /* 1 … SRV_NATS_MAX_DEADLINE_MS */
  bool stream;                   /* the replica pulls the stream's bytes */
};

/* @len bytes of @data into @m (clear it with srv_nats_msg_clear, whatever
   the result).  Return: 0, or -1 when it is no request message.  */
int srv_nats_msg_parse (const void *data, size_t len, struct srv_nats_msg *m);
void srv_nats_msg_clear (struct srv_nats_msg *m);

#endif
