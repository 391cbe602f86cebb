/* chat.h - what the chat's parts (chat.c, client.c, python.c) share: the
   options' defaults and Ctrl-C.  */
#ifndef RT_LLM_CHAT_H
#define RT_LLM_CHAT_H

#include "common/util.h"

/* @v, or @def when it is 0 (unset).  */
static inline unsigned
rt_or_default (unsigned v, unsigned def)
{
  return v ? v : def;
}

/* Ctrl-C (the caller's signalfd, @o->cancel_fd) is pending.  */
bool rt_chat_cancelled (const rt_chat_opts *o);

/* Sets the "interrupted" error Ctrl-C ends a chat with.  */
int rt_chat_interrupted (rt_error **err);

#endif
