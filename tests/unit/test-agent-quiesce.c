/* test-agent-quiesce.c - the guest agent's QUIESCE and RESTORE parsing
   (images/agent/restore.c, channel.c, conn.c), linked from the agent's
   own sources without its main (main.c).
   Checked: restore_parse takes the three modes and a "keep" of uint32
   stream ids, and refuses every other mode and keep; a QUIESCE is
   answered by DONE, after which only the bytes up to it are written, what
   the agent queues is held (bounded: room for control frames stays), a
   second QUIESCE's DONE overtakes what is held, a refused RESTORE is
   answered and keeps the quiesce, a reconnect sends no HELLO.  Nothing
   here applies a RESTORE: that would set this machine's clock.  */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "conn.h"
#include "requests.h"
#include "restore.h"
#include "tap.h"

static struct agent ag;
static uint8_t buf[2 * OUTQ_CAP];

#define ENTROPY                                                                                                        \
  "\"entropy\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\""
#define BASE "{" ENTROPY ",\"timeMs\":1750000000000,\"hostname\":\"sb-1\""

static const char *
parse (const char *json, struct restore_req *r)
{
  json_object *o = json_tokener_parse (json);
  const char *why = restore_parse (o, r);

  /* @r points into @o: the tests only look at scalars and keep's length.  */
  if (r->keep)
    r->keep = (json_object *) (uintptr_t) json_object_array_length (r->keep);
  json_object_put (o);
  return why;
}

static void
test_parse (void)
{
  static const struct
  {
    const char *json;
    int mode;        /* -1: refused */
    size_t keep;     /* how many kept, (size_t) -1: every command */
    const char *why; /* refused: the member the answer names */
  } cases[] = {
    { BASE "}", MODE_CLONE, (size_t) -1 },
    { BASE ",\"mode\":\"clone\",\"keep\":[1,2]}", MODE_CLONE, (size_t) -1 },
    { BASE ",\"mode\":\"child\"}", MODE_CHILD, (size_t) -1 },
    { BASE ",\"mode\":\"child\",\"keep\":[]}", MODE_CHILD, 0 },
    { BASE ",\"mode\":\"wake\",\"keep\":[0,1,4294967295]}", MODE_WAKE, 3 },
    { BASE ",\"mode\":\"wake\",\"keep\":null}", MODE_WAKE, (size_t) -1 },
    { BASE ",\"mode\":\"Wake\"}", -1, 0, "'mode'" },
    { BASE ",\"mode\":\"wake\\u0000\"}", -1, 0, "'mode'" },
    { BASE ",\"mode\":\"\"}", -1, 0, "'mode'" },
    { BASE ",\"mode\":1}", -1, 0, "'mode'" },
    { BASE ",\"mode\":\"child\",\"keep\":[4294967296]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[18446744073709551615]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[-1]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[1.5]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[\"1\"]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[null]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":[[1]]}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"child\",\"keep\":7}", -1, 0, "'keep'" },
    { BASE ",\"mode\":\"clone\",\"keep\":[-1]}", -1, 0, "'keep'" },
    { "{" ENTROPY ",\"timeMs\":1750000000000,\"mode\":\"wake\"}", -1, 0, "'hostname'" },
  };

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      struct restore_req r;
      const char *why = parse (cases[i].json, &r);

      if (cases[i].mode < 0)
        ok (why && strstr (why, cases[i].why), "refused: %s (%s)", cases[i].json + 60, why ? why : "accepted");
      else
        ok (why == NULL && (int) r.mode == cases[i].mode
                && (cases[i].keep == (size_t) -1 ? r.keep == NULL : (size_t) (uintptr_t) r.keep == cases[i].keep),
            "accepted: %s (%s)", cases[i].json + 60, why ? why : "ok");
    }
}

/* Writes what the agent may write now into the pipe, returns how much
   arrived there.  */
static size_t
flush (int rd)
{
  ssize_t n;

  chan_flush (&ag);
  n = read (rd, buf, sizeof buf);
  return n > 0 ? (size_t) n : 0;
}

static void
frame (uint8_t type, const char *json)
{
  struct rt_frame_header h = { strlen (json), 0, type };

  handle_frame (&ag, &h, (const uint8_t *) json);
}

static bool
is_done (const uint8_t *p, size_t len, const char *op, bool ok)
{
  struct rt_frame_header h;
  char want[64];

  snprintf (want, sizeof want, "{\"op\":\"%s\",\"ok\":%s", op, ok ? "true}" : "false");
  return len >= RT_FRAME_HEADER && rt_frame_decode_header (p, &h) == 0 && h.type == RT_FRAME_DONE && h.stream == 0
         && h.len + RT_FRAME_HEADER <= len && strncmp ((const char *) p + RT_FRAME_HEADER, want, strlen (want)) == 0;
}

static void
test_quiesce (void)
{
  int p[2], console, devnull;
  size_t n, held, dropped = 0;

  if (pipe2 (p, O_NONBLOCK | O_CLOEXEC) < 0)
    abort ();
  fcntl (p[1], F_SETPIPE_SZ, 1024 * 1024);
  ag.chan = p[1];
  ag.state = CONN_UP;
  send_hello (&ag);
  frame (RT_FRAME_QUIESCE, "");
  n = flush (p[0]);
  ok (n > RT_FRAME_HEADER && is_done (buf + n - (RT_FRAME_HEADER + 26), RT_FRAME_HEADER + 26, "quiesce", true),
      "QUIESCE: what was queued, then DONE {\"op\":\"quiesce\",\"ok\":true}");
  frame (RT_FRAME_HELLO, "{\"version\":99}"); /* answered by ERROR: held */
  held = ag.outq.len;
  ok (held > 0 && flush (p[0]) == 0 && ag.outq.len == held, "an ERROR it causes is held (%zu bytes)", held);
  frame (RT_FRAME_QUIESCE, "");
  n = flush (p[0]);
  ok (is_done (buf, n, "quiesce", true) && n == RT_FRAME_HEADER + 26 && ag.outq.len == held,
      "a second QUIESCE: its DONE alone goes out, ahead of what is held");
  frame (RT_FRAME_RESTORE, BASE ",\"mode\":\"nap\"}");
  n = flush (p[0]);
  ok (is_done (buf, n, "restore", false) && ag.quiesced && ag.outq.len == held,
      "a refused RESTORE: DONE ok:false goes out, the quiesce holds");
  /* The agent says each frame it drops on its console, fd 2: tens of
     thousands of lines that would bury this test's log.  */
  console = dup (2);
  if (console < 0 || (devnull = open ("/dev/null", O_WRONLY | O_CLOEXEC)) < 0 || dup2 (devnull, 2) < 0)
    abort ();
  for (int i = 0; i < 200000 && ag.outq.len < OUTQ_CAP; i++)
    if (send_frame (&ag, RT_FRAME_WINDOW, 1, "abcd", 4) < 0)
      dropped++;
  dup2 (console, 2);
  close (console);
  close (devnull);
  ok (dropped > 0 && OUTQ_CAP - ag.outq.len >= CTRL_MAX && flush (p[0]) == 0,
      "held frames are bounded: %zu dropped, %zu bytes free for control frames", dropped,
      (size_t) (OUTQ_CAP - ag.outq.len));
  frame (RT_FRAME_QUIESCE, "");
  ok (is_done (buf, flush (p[0]), "quiesce", true), "a full queue still answers QUIESCE");
  ag.state = CONN_DOWN;
  conn_check (&ag);
  ok (ag.state == CONN_UP && ag.outq.len == 0 && ag.quiesced && flush (p[0]) == 0,
      "a host connecting while quiesced gets no HELLO");
  close (p[0]);
  close (p[1]);
}

int
main (void)
{
  test_parse ();
  test_quiesce ();
  return tap_done ();
}
