/* frames.c - the agent channel's frame table (see frames.h).  */
#include "monitor/exec.h"
#include "monitor/frames.h"
#include "monitor/idle.h"
#include "monitor/session.h"

typedef void (*frame_fn) (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);

struct frame_route
{
  uint8_t type;     /* RT_FRAME_…, common/proto.h */
  frame_fn exec;    /* for the stream of a command or a process */
  frame_fn session; /* for a session's stream (e->sess) */
};

/* What the agent sends on a command's stream (common/proto.h).  */
static const struct frame_route frame_routes[] = {
  { RT_FRAME_STDOUT, mon_exec_on_output, mon_exec_on_output },
  { RT_FRAME_STDERR, mon_exec_on_output, mon_exec_on_output },
  { RT_FRAME_WINDOW, mon_exec_on_window, mon_session_on_window },
  { RT_FRAME_EXIT, mon_exec_on_end, mon_session_on_end },
  { RT_FRAME_ERROR, mon_exec_on_end, mon_session_on_end },
};

void
mon_frame_dispatch (struct mon *m, const struct rt_frame_header *h, const uint8_t *payload)
{
  struct mon_exec *e = h->stream ? mon_exec_find (m, h->stream) : NULL;

  if (e == NULL || e->last)
    return;
  mon_idle_touch (m);
  for (size_t i = 0; i < sizeof frame_routes / sizeof frame_routes[0]; i++)
    if (frame_routes[i].type == h->type)
      {
        (e->sess ? frame_routes[i].session : frame_routes[i].exec) (e, h, payload);
        return;
      }
}
