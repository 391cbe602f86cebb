/* test-guest-ops.c - the host's synchronous requests to a hostile agent
   (vmm/guest-ops.c).  A forked fake agent on a socketpair answers each
   request well or badly: DONE ok; ok=false with a long message full of
   control bytes (escaped, truncated); the wrong op; a garbage header;
   10000 HELLO frames (bounded skip: an error, no hang); silence (the
   deadline holds); EOF; QEMU gone.  RESTORE's payload in each mode, with
   and without "keep"; rt_guest_done_check on good and hostile DONEs; a
   "wake" restore needs no HELLO.  rt_guest_run discards more output
   than RT_WINDOW_INITIAL while returning the credit (the fake agent stalls
   without it) and ends on EXIT or ERROR.  */
#include <json-c/json.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "tap.h"
#include "vmm/guest-ops.h"

#define OUTPUT_TOTAL (3 * RT_WINDOW_INITIAL + 12345)

static uint8_t payload[RT_FRAME_MAX_PAYLOAD + 1];

static int
read_exact (int fd, void *buf, size_t len)
{
  while (len > 0)
    {
      ssize_t n = read (fd, buf, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return -1;
      buf = (uint8_t *) buf + n;
      len -= n;
    }
  return 0;
}

static void
put_frame (int fd, uint8_t type, uint32_t stream, const void *p, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];

  rt_frame_encode_header (hdr, type, stream, len);
  if (rt_write_all (fd, hdr, sizeof hdr) < 0 || rt_write_all (fd, p, len) < 0)
    _exit (3);
}

static void
put_json (int fd, uint8_t type, uint32_t stream, const char *json)
{
  put_frame (fd, type, stream, json, strlen (json));
}

/* The next frame from the host into payload[]; exits on EOF.  */
static struct rt_frame_header
get_frame (int fd)
{
  uint8_t hdr[RT_FRAME_HEADER];
  struct rt_frame_header h;

  if (read_exact (fd, hdr, sizeof hdr) < 0 || rt_frame_decode_header (hdr, &h) < 0)
    _exit (4);
  if (h.len && read_exact (fd, payload, h.len) < 0)
    _exit (4);
  payload[h.len] = 0;
  return h;
}

enum script
{
  FREEZE_OK,
  FREEZE_WRONG_OP,
  RESTORE_FAILS,
  GARBAGE,
  FLOOD,
  SILENCE,
  HANG_UP,
  RESTORE_WAKE,
  RUN_CHATTY,
  RUN_REFUSED,
};

/* RESTORE must carry 64 bytes of entropy, a clock and the host name.  */
static void
check_restore (struct rt_frame_header h)
{
  cleanup_json json_object *o = json_tokener_parse ((const char *) payload);
  const char *e = rt_json_str (o, "entropy"), *name = rt_json_str (o, "hostname");
  json_object *t = NULL;

  if (h.type != RT_FRAME_RESTORE || h.stream != 0 || e == NULL || strlen (e) != 88 || name == NULL
      || strcmp (name, "clone-1") != 0 || !json_object_object_get_ex (o, "timeMs", &t)
      || json_object_get_int64 (t) < 1700000000000LL)
    _exit (5);
}

/* Output beyond the window is sent only as the host gives credit back.  */
static void
chatty (int fd)
{
  static uint8_t chunk[256 * 1024];
  size_t sent = 0, unacked = 0;

  memset (chunk, 'x', sizeof chunk);
  while (sent < OUTPUT_TOTAL)
    {
      size_t n = OUTPUT_TOTAL - sent < sizeof chunk ? OUTPUT_TOTAL - sent : sizeof chunk;
      while (unacked + n > RT_WINDOW_INITIAL)
        {
          struct rt_frame_header h = get_frame (fd);
          if (h.type != RT_FRAME_WINDOW || h.stream != 1 || h.len != 4)
            _exit (6);
          unacked -= rt_get_u32 (payload);
        }
      put_frame (fd, sent % 2 ? RT_FRAME_STDERR : RT_FRAME_STDOUT, 1, chunk, n);
      sent += n;
      unacked += n;
    }
  put_json (fd, RT_FRAME_EXIT, 1, "{\"exitCode\":3,\"signal\":0,\"timedOut\":false,\"durationMs\":1}");
}

static void
fake_agent (int fd, enum script s)
{
  struct rt_frame_header h = get_frame (fd);
  char msg[2048];

  switch (s)
    {
    case FREEZE_OK:
      if (h.type != RT_FRAME_FREEZE || h.stream != 0 || h.len != 0)
        _exit (5);
      put_json (fd, RT_FRAME_HELLO, 0, "{\"version\":1}"); /* a reconnect's greeting: skipped */
      put_json (fd, RT_FRAME_DONE, 0, "{\"op\":\"freeze\",\"ok\":true}");
      break;
    case FREEZE_WRONG_OP:
      put_json (fd, RT_FRAME_DONE, 0, "{\"op\":\"restore\",\"ok\":true}");
      break;
    case RESTORE_FAILS:
      check_restore (h);
      memset (msg, 'A', sizeof msg);
      {
        static const char head[] = "{\"op\":\"restore\",\"ok\":false,\"message\":\"\\u001b[31mevil ";
        memcpy (msg, head, sizeof head - 1);
      }
      memcpy (msg + sizeof msg - 4, "\"}", 3);
      put_json (fd, RT_FRAME_DONE, 0, msg);
      break;
    case GARBAGE:
      memset (msg, 0xff, RT_FRAME_HEADER);
      rt_write_all (fd, msg, RT_FRAME_HEADER);
      break;
    case FLOOD:
      for (int i = 0; i < 10000; i++)
        put_json (fd, RT_FRAME_HELLO, 0, "{\"version\":1}");
      put_json (fd, RT_FRAME_DONE, 0, "{\"op\":\"freeze\",\"ok\":true}");
      break;
    case SILENCE:
      pause ();
      break;
    case HANG_UP:
      _exit (0);
    case RESTORE_WAKE:
      {
        cleanup_json json_object *o = json_tokener_parse ((const char *) payload);
        cleanup_json json_object *want = json_tokener_parse ("[7,4294967295]");
        json_object *keep = NULL;

        check_restore (h);
        if (strcmp (rt_json_str (o, "mode"), "wake") != 0 || !json_object_object_get_ex (o, "keep", &keep)
            || !json_object_equal (keep, want))
          _exit (5);
        put_json (fd, RT_FRAME_WINDOW, 7, "\0\0\0\1"); /* held back by the quiesce: skipped */
        put_json (fd, RT_FRAME_DONE, 0, "{\"op\":\"restore\",\"ok\":true}");
        break;
      }
    case RUN_CHATTY:
      {
        cleanup_json json_object *o = json_tokener_parse ((const char *) payload);
        if (h.type != RT_FRAME_EXEC || h.stream != 1 || strcmp (rt_json_str (o, "user"), "root") != 0)
          _exit (5);
        chatty (fd);
        break;
      }
    case RUN_REFUSED:
      put_json (fd, RT_FRAME_ERROR, 1, "{\"code\":\"invalid_request\",\"message\":\"nope\\nnope\"}");
      break;
    }
  pause (); /* killed by the test */
}

struct peer
{
  pid_t pid;
  struct rt_channel ch;
};

static void
start (struct peer *p, enum script s, int vm_pidfd)
{
  int sv[2];

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    abort ();
  p->pid = fork ();
  if (p->pid == 0)
    {
      close (sv[0]);
      fake_agent (sv[1], s);
      _exit (0);
    }
  close (sv[1]);
  memset (&p->ch, 0, sizeof p->ch);
  p->ch.fd = sv[0];
  p->ch.vm_pidfd = vm_pidfd;
  p->ch.reader = malloc (sizeof *p->ch.reader);
  rt_frame_reader_init (p->ch.reader);
}

/* Return: the fake agent's exit status (a signal: -1).  */
static int
finish (struct peer *p)
{
  int status = 0;

  rt_channel_close (&p->ch);
  kill (p->pid, SIGKILL);
  waitpid (p->pid, &status, 0);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static void
test_done (void)
{
  struct peer p;
  rt_error *err = NULL;

  start (&p, FREEZE_OK, -1);
  ok (rt_guest_freeze (&p.ch, 5000, &err) == 0, "DONE ok after a HELLO: freeze succeeds");
  finish (&p);
  rt_error_free (err);
  err = NULL;

  start (&p, FREEZE_WRONG_OP, -1);
  ok (rt_guest_freeze (&p.ch, 5000, &err) < 0 && strstr (err->msg, "'restore'"), "DONE of the wrong op: %s",
      err ? err->msg : "no error");
  finish (&p);
  rt_error_free (err);
  err = NULL;

  start (&p, RESTORE_FAILS, -1);
  ok (rt_guest_restore (&p.ch, "clone-1", 5000, &err) < 0 && strcmp (err->code, "startup_failed") == 0,
      "DONE ok=false fails the restore");
  ok (err && strstr (err->msg, "\\x1b[31mevil") && !strchr (err->msg, '\x1b') && strlen (err->msg) < 400,
      "its message is escaped and truncated (%zu bytes): %.60s", err ? strlen (err->msg) : 0, err ? err->msg : "");
  ok (finish (&p) == -1, "the RESTORE carried entropy, clock and host name");
  rt_error_free (err);
}

/* RESTORE's payload in each mode; "keep" only where it means something.  */
static void
test_request (void)
{
  static const char *const names[] = { "clone", "child", "wake" };
  static const uint32_t keep[] = { 1, 2, UINT32_MAX };

  for (int m = RT_RESTORE_CLONE; m <= RT_RESTORE_WAKE; m++)
    {
      cleanup_json json_object *all = rt_guest_restore_request ("sb-1", (enum rt_restore_mode) m, NULL, 0);
      cleanup_json json_object *some = rt_guest_restore_request ("sb-1", (enum rt_restore_mode) m, keep, 3);
      cleanup_json json_object *none = rt_guest_restore_request ("sb-1", (enum rt_restore_mode) m, keep, 0);
      cleanup_json json_object *want = json_tokener_parse (m == RT_RESTORE_CLONE ? "null" : "[1,2,4294967295]");
      json_object *k = NULL, *t = NULL;
      const char *e = rt_json_str (all, "entropy");

      ok (all && e && strlen (e) == 88 && strcmp (rt_json_str (all, "hostname"), "sb-1") == 0
              && strcmp (rt_json_str (all, "mode"), names[m]) == 0 && json_object_object_get_ex (all, "timeMs", &t)
              && json_object_get_int64 (t) > 1700000000000LL && json_object_object_length (all) == 4,
          "%s: entropy, timeMs, hostname and mode, no keep when none is given", names[m]);
      ok (some && strcmp (e, rt_json_str (some, "entropy")) != 0, "%s: fresh entropy each time", names[m]);
      ok (json_object_object_get_ex (some, "keep", &k) == (m != RT_RESTORE_CLONE) && json_object_equal (k, want),
          "%s: keep %s", names[m], m == RT_RESTORE_CLONE ? "ignored" : "as given, up to UINT32_MAX");
      ok (json_object_object_get_ex (none, "keep", &k) == (m != RT_RESTORE_CLONE)
              && (m == RT_RESTORE_CLONE || json_object_array_length (k) == 0),
          "%s: an empty keep list %s", names[m], m == RT_RESTORE_CLONE ? "is ignored" : "is sent empty");
    }
  ok (rt_guest_restore_request ("sb-1", (enum rt_restore_mode) 3, NULL, 0) == NULL, "an unknown mode: NULL");
}

/* rt_guest_done_check on what a hostile guest may put in a DONE.  */
static void
test_done_check (void)
{
  static const struct
  {
    const char *json, *op, *want; /* want NULL: accepted */
  } cases[] = {
    { "{\"op\":\"quiesce\",\"ok\":true}", "quiesce", NULL },
    { "{\"op\":\"restore\",\"ok\":true,\"message\":\"x\"}", "restore", NULL },
    { "{\"op\":\"quiesce\",\"ok\":true}", "restore", "answered 'quiesce' to restore" },
    { "{\"op\":\"quiesce\"}", "quiesce", "failed to quiesce: (no message)" },
    { "{\"op\":\"quiesce\",\"ok\":1}", "quiesce", "failed to quiesce" },
    { "{\"op\":\"quiesce\",\"ok\":\"true\"}", "quiesce", "failed to quiesce" },
    { "{\"op\":\"quiesce\",\"ok\":false,\"message\":\"no\\nway\\u001b\"}", "quiesce", "no\\x0away\\x1b" },
    { "{\"op\":7,\"ok\":true}", "quiesce", "answered '(none)'" },
    { "{\"op\":\"qui\\u0000esce\",\"ok\":true}", "quiesce", "answered '(NUL)'" },
    { "{\"op\":\"quiesce\\u0000x\",\"ok\":true}", "quiesce", "answered '(NUL)'" },
    { "{\"op\":\"\\u001b[2J\",\"ok\":true}", "quiesce", "answered '\\x1b[2J'" },
    { "[]", "quiesce", "answered '(none)'" },
  };
  char big[4096];
  rt_error *err = NULL;

  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    {
      cleanup_json json_object *o = json_tokener_parse (cases[i].json);
      int ret = rt_guest_done_check (o, cases[i].op, &err);

      if (cases[i].want == NULL)
        ok (ret == 0 && err == NULL, "DONE %s is %s's success", cases[i].json, cases[i].op);
      else
        ok (ret < 0 && err && strcmp (err->code, "startup_failed") == 0 && strstr (err->msg, cases[i].want)
                && !strpbrk (err->msg, "\n\x1b"),
            "DONE %s for %s: %s", cases[i].json, cases[i].op, err ? err->msg : "accepted");
      rt_error_free (err);
      err = NULL;
    }
  ok (rt_guest_done_check (NULL, "quiesce", &err) < 0 && strstr (err->msg, "'(none)'"), "no JSON object: refused");
  rt_error_free (err);
  err = NULL;
  memset (big, 'M', sizeof big);
  {
    static const char head[] = "{\"ok\":false,\"op\":\"wake\",\"message\":\"";
    memcpy (big, head, sizeof head - 1);
  }
  memcpy (big + sizeof big - 3, "\"}", 3);
  {
    cleanup_json json_object *o = json_tokener_parse (big);
    ok (o && rt_guest_done_check (o, "wake", &err) < 0 && strlen (err->msg) < 400,
        "a 4 KiB message is truncated (%zu bytes)", err ? strlen (err->msg) : 0);
  }
  rt_error_free (err);
}

static void
test_restore_as (void)
{
  static const uint32_t keep[] = { 7, UINT32_MAX };
  struct peer p;
  rt_error *err = NULL;
  uint64_t t0 = rt_now_ms ();

  start (&p, RESTORE_WAKE, -1);
  ok (rt_guest_restore_as (&p.ch, "clone-1", RT_RESTORE_WAKE, keep, 2, 5000, &err) == 0,
      "wake: RESTORE with mode and keep, DONE after a held-back frame: %s", err ? err->msg : "ok");
  ok (rt_now_ms () - t0 < 900, "no wait for a HELLO a quiesced agent never sends (%llu ms)",
      (unsigned long long) (rt_now_ms () - t0));
  ok (finish (&p) == -1, "the RESTORE carried entropy, clock, host name, mode and keep");
  rt_error_free (err);
}

static void
test_hostile (void)
{
  struct peer p;
  rt_error *err = NULL;
  uint64_t t0;
  int pipefd[2];

  start (&p, GARBAGE, -1);
  ok (rt_guest_freeze (&p.ch, 5000, &err) < 0 && strstr (err->msg, "garbled"), "a garbage header is an error");
  finish (&p);
  rt_error_free (err);
  err = NULL;

  start (&p, FLOOD, -1);
  t0 = rt_now_ms ();
  ok (rt_guest_freeze (&p.ch, 20000, &err) < 0 && strstr (err->msg, "unexpected"),
      "10000 HELLO frames: an error after %d skipped, in %llu ms", RT_GUEST_OPS_MAX_SKIP,
      (unsigned long long) (rt_now_ms () - t0));
  finish (&p);
  rt_error_free (err);
  err = NULL;

  start (&p, SILENCE, -1);
  t0 = rt_now_ms ();
  ok (rt_guest_freeze (&p.ch, 300, &err) < 0 && err->status == ETIMEDOUT && rt_now_ms () - t0 < 2000,
      "silence: the deadline holds (%llu ms)", (unsigned long long) (rt_now_ms () - t0));
  finish (&p);
  rt_error_free (err);
  err = NULL;

  start (&p, HANG_UP, -1);
  ok (rt_guest_restore (&p.ch, "clone-1", 5000, &err) < 0 && err->status == EPIPE, "EOF is an error");
  finish (&p);
  rt_error_free (err);
  err = NULL;

  if (pipe (pipefd) < 0 || write (pipefd[1], "x", 1) != 1)
    abort ();
  start (&p, SILENCE, pipefd[0]);
  ok (rt_guest_freeze (&p.ch, 5000, &err) < 0 && strstr (err->msg, "exited"), "QEMU gone is an error");
  finish (&p);
  rt_error_free (err);
  close (pipefd[0]);
  close (pipefd[1]);
}

static void
test_run (void)
{
  static const char *const argv[] = { "python3", "-c", "pass", NULL };
  struct peer p;
  rt_error *err = NULL;
  int code = -1;

  start (&p, RUN_CHATTY, -1);
  ok (rt_guest_run (&p.ch, argv, 20000, &code, &err) == 0 && code == 3,
      "%u bytes of output discarded with credit returned, then the exit code (%d)", OUTPUT_TOTAL, code);
  ok (finish (&p) == -1, "the fake agent got every WINDOW it waited for");
  rt_error_free (err);
  err = NULL;

  start (&p, RUN_REFUSED, -1);
  ok (rt_guest_run (&p.ch, argv, 5000, &code, &err) < 0 && strstr (err->msg, "nope\\x0anope"),
      "ERROR ends the run with the guest's message, escaped: %s", err ? err->msg : "no error");
  finish (&p);
  rt_error_free (err);
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
  test_done ();
  test_request ();
  test_done_check ();
  test_restore_as ();
  test_hostile ();
  test_run ();
  return tap_done ();
}
