/* channel.h - frames to the host (the outgoing queue) and the JSON of
   frames from it.  */
#ifndef AGENT_CHANNEL_H
#define AGENT_CHANNEL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/* Returns room for n contiguous bytes at the tail, or NULL.  */
uint8_t *outq_reserve (struct outq *q, size_t n);
void outq_reset (struct agent *ag);
/* How many queued bytes may be written now (not those a quiesce holds).  */
size_t outq_writable (const struct agent *ag);
/* Queues a frame; nothing while the host is not connected.  Return: 0, or
   -1 when the queue is full (while quiesced: when less than CTRL_MAX would
   stay free).  */
int send_frame (struct agent *ag, uint8_t type, uint32_t stream, const void *payload, size_t len);
/* Queues a frame before those a quiesce holds back: the host gets it even
   while the agent is quiesced (a DONE).  Return: 0, or -1 when full.  */
int send_frame_ahead (struct agent *ag, uint8_t type, uint32_t stream, const void *payload, size_t len);
int send_json (struct agent *ag, uint8_t type, uint32_t stream, json_object *o);
void send_error (struct agent *ag, uint32_t stream, const char *code, const char *fmt, ...) RT_PRINTF (4, 5);
void send_hello (struct agent *ag);
/* Parses a control payload; it must be one JSON object.  */
json_object *parse_object (const uint8_t *p, size_t len);
/* A member that is present and not null.  */
json_object *get_member (json_object *o, const char *key);
/* A string without NUL bytes.  */
bool is_plain_string (json_object *v);

#endif
