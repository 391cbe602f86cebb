/* guest-ops.c - synchronous requests to the agent of a template, a clone,
   a child or a woken sandbox (guest-ops.h): run a command, freeze,
   restore; and the check of a DONE.
   The guest is hostile: frames are checked by the codec, replies by shape,
   what the guest says is escaped and truncated before it reaches an error,
   unexpected frames are skipped only RT_GUEST_OPS_MAX_SKIP times, and
   every wait ends by the caller's deadline or when QEMU exits.  */
#include <json-c/json.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "common/b64.h"
#include "common/sys.h"
#include "vmm/guest-ops.h"

#define GUEST_TEXT_MAX 200
#define ENTROPY_BYTES 64
#define RUN_STREAM 1

struct op
{
  struct rt_channel *ch;
  uint64_t deadline;
  const char *what; /* "freeze", "restore", "run": for messages */
  unsigned skipped;
  json_object *resend; /* sent again after each HELLO (restore) */
};

/* @text from the guest, shortened and made safe to show.  */
static char *
guest_text (const char *text)
{
  cleanup_free char *cut = strndup (text ? text : "", GUEST_TEXT_MAX);
  return cut ? rt_text_escape (cut, false) : NULL;
}

static int
op_fail (struct op *op, rt_error **err, int status, const char *why)
{
  return rt_error_set (err, status, "startup_failed", "the guest agent failed to %s: %s", op->what, why);
}

/* Waits until @fd has @events, QEMU exits or the deadline passes.  */
static int
op_wait (struct op *op, short events, rt_error **err)
{
  for (;;)
    {
      struct pollfd pfd[2] = { { .fd = op->ch->fd, .events = events }, { .fd = op->ch->vm_pidfd, .events = POLLIN } };
      int64_t left = (int64_t) op->deadline - (int64_t) rt_now_ms ();
      int n;

      if (left <= 0)
        return op_fail (op, err, ETIMEDOUT, "no answer in time");
      n = poll (pfd, 2, left > INT32_MAX ? INT32_MAX : (int) left);
      if (n < 0 && errno != EINTR)
        return op_fail (op, err, errno, strerror (errno));
      if (n <= 0)
        continue;
      if (pfd[1].revents)
        return op_fail (op, err, EIO, "the VM exited");
      if (pfd[0].revents)
        return 0;
    }
}

static int
op_send (struct op *op, uint8_t type, uint32_t stream, const void *payload, uint32_t len, rt_error **err)
{
  static const uint8_t none;
  uint8_t hdr[RT_FRAME_HEADER];
  struct iovec iov[2] = { { hdr, sizeof hdr }, { (void *) (payload ? payload : &none), len } };
  struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

  rt_frame_encode_header (hdr, type, stream, len);
  while (iov[0].iov_len + iov[1].iov_len > 0)
    {
      ssize_t n = sendmsg (op->ch->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      int ret;

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno != EAGAIN)
        return op_fail (op, err, errno, strerror (errno));
      if (n < 0)
        {
          ret = op_wait (op, POLLOUT, err);
          if (ret < 0)
            return ret;
          continue;
        }
      rt_iov2_advance (&msg, iov, (size_t) n);
    }
  return 0;
}

static int
op_send_json (struct op *op, uint8_t type, uint32_t stream, json_object *o, rt_error **err)
{
  size_t len;
  const char *s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);

  if (s == NULL)
    return rt_error_oom (err);
  return op_send (op, type, stream, s, len, err);
}

/* The next frame; its payload is valid until the next call.  */
static int
op_next (struct op *op, struct rt_frame_header *h, const uint8_t **payload, rt_error **err)
{
  for (;;)
    {
      int ret = rt_frame_reader_next (op->ch->reader, h, payload);

      if (ret > 0)
        return 0;
      if (ret < 0)
        return op_fail (op, err, EPROTO, "garbled frame from the guest");
      ret = op_wait (op, POLLIN, err);
      if (ret < 0)
        return ret;
      ret = rt_channel_read (op->ch, err);
      if (ret < 0)
        return ret;
      if (ret == 0)
        return op_fail (op, err, EPIPE, "the guest closed the channel");
    }
}

/* A frame the call did not ask for: skipped, a bounded number of times.  */
static int
op_skip (struct op *op, rt_error **err)
{
  if (++op->skipped > RT_GUEST_OPS_MAX_SKIP)
    return op_fail (op, err, EPROTO, "too many unexpected frames from the guest");
  return 0;
}

/* An ERROR frame: the request was refused.  */
static int
op_refused (struct op *op, const uint8_t *payload, uint32_t len, rt_error **err)
{
  cleanup_json json_object *o = rt_channel_parse_json (payload, len);
  cleanup_free char *msg = guest_text (o ? rt_json_str (o, "message") : NULL);

  return rt_error_set (err, EPROTO, "startup_failed", "the guest agent refused to %s: %s", op->what,
                       msg && *msg ? msg : "(no message)");
}

int
rt_guest_done_check (json_object *done, const char *op, rt_error **err)
{
  const char *got = done ? rt_json_str (done, "op") : NULL;
  json_object *ok = NULL, *v = NULL;
  cleanup_free char *msg = NULL;

  /* A NUL inside the guest's string must not make a prefix match.  */
  if (got && json_object_object_get_ex (done, "op", &v) && (size_t) json_object_get_string_len (v) != strlen (got))
    got = "(NUL)";
  if (got == NULL || strcmp (got, op) != 0)
    {
      msg = guest_text (got ? got : "(none)");
      return rt_error_set (err, EPROTO, "startup_failed", "the guest agent answered '%s' to %s", msg ? msg : "?", op);
    }
  if (json_object_object_get_ex (done, "ok", &ok) && json_object_is_type (ok, json_type_boolean)
      && json_object_get_boolean (ok))
    return 0;
  msg = guest_text (rt_json_str (done, "message"));
  return rt_error_set (err, EIO, "startup_failed", "the guest agent failed to %s: %s", op,
                       msg && *msg ? msg : "(no message)");
}

/* Waits for DONE {"op":@name,"ok":true}.  */
static int
op_wait_done (struct op *op, const char *name, rt_error **err)
{
  for (;;)
    {
      struct rt_frame_header h;
      const uint8_t *payload;
      int ret = op_next (op, &h, &payload, err);

      if (ret < 0)
        return ret;
      if (h.stream == 0 && h.type == RT_FRAME_ERROR)
        return op_refused (op, payload, h.len, err);
      if (h.stream == 0 && h.type == RT_FRAME_DONE)
        {
          cleanup_json json_object *o = rt_channel_parse_json (payload, h.len);
          return rt_guest_done_check (o, name, err);
        }
      ret = op_skip (op, err);
      /* The agent greets a host it has just seen connect, after dropping
         what the one before left unread: maybe our request, when the
         template's agent saw its host go only once the clone ran.  */
      if (ret == 0 && op->resend && h.stream == 0 && h.type == RT_FRAME_HELLO)
        ret = op_send_json (op, RT_FRAME_RESTORE, 0, op->resend, err);
      if (ret < 0)
        return ret;
    }
}

/* Waits up to @grace_ms for the agent's HELLO: it greets each host it
   sees connect, and drops whatever came before its greeting.  0 also when
   none came (an agent that never saw the template's host go).  */
static int
op_wait_hello (struct op *op, int grace_ms, rt_error **err)
{
  uint64_t deadline = op->deadline;

  op->deadline = rt_now_ms () + grace_ms < deadline ? rt_now_ms () + grace_ms : deadline;
  for (;;)
    {
      struct rt_frame_header h;
      const uint8_t *payload;
      rt_error *e = NULL;
      int ret = op_next (op, &h, &payload, &e);

      if (ret < 0 && rt_now_ms () >= op->deadline && op->deadline < deadline)
        {
          rt_error_free (e);
          break;
        }
      if (ret < 0)
        {
          if (err)
            *err = e;
          else
            rt_error_free (e);
          return ret;
        }
      if (h.stream == 0 && h.type == RT_FRAME_HELLO)
        break;
      if ((ret = op_skip (op, err)) < 0)
        return ret;
    }
  op->deadline = deadline;
  return 0;
}

int
rt_channel_attach (struct rt_channel *ch, const char *sock, int vm_pidfd, int timeout_ms, rt_error **err)
{
  return rt_channel_open (ch, sock, vm_pidfd, NULL, rt_now_ms () + timeout_ms, err);
}

int
rt_guest_freeze (struct rt_channel *ch, int timeout_ms, rt_error **err)
{
  struct op op = { ch, rt_now_ms () + timeout_ms, "freeze", 0, NULL };
  int ret = op_send (&op, RT_FRAME_FREEZE, 0, NULL, 0, err);

  return ret < 0 ? ret : op_wait_done (&op, "freeze", err);
}

json_object *
rt_guest_restore_request (const char *hostname, enum rt_restore_mode mode, const uint32_t *keep, size_t n_keep)
{
  static const char *const modes[]
      = { [RT_RESTORE_CLONE] = "clone", [RT_RESTORE_CHILD] = "child", [RT_RESTORE_WAKE] = "wake" };
  cleanup_json json_object *o = json_object_new_object ();
  json_object *k = NULL;
  uint8_t entropy[ENTROPY_BYTES];
  char b64[RT_B64_ENCODED_LEN (ENTROPY_BYTES) + 1];

  if (o == NULL || (unsigned) mode > RT_RESTORE_WAKE || hostname == NULL)
    return NULL;
  if (getrandom (entropy, sizeof entropy, 0) != sizeof entropy)
    return NULL;
  rt_b64_encode_into (b64, entropy, sizeof entropy);
  explicit_bzero (entropy, sizeof entropy);
  json_object_object_add (o, "entropy", json_object_new_string (b64));
  explicit_bzero (b64, sizeof b64);
  json_object_object_add (o, "timeMs", json_object_new_int64 (rt_epoch_ms ()));
  json_object_object_add (o, "hostname", json_object_new_string (hostname));
  json_object_object_add (o, "mode", json_object_new_string (modes[mode]));
  if (keep && mode != RT_RESTORE_CLONE)
    {
      k = json_object_new_array_ext ((int) (n_keep < INT32_MAX ? n_keep : INT32_MAX));
      if (k == NULL)
        return NULL;
      json_object_object_add (o, "keep", k);
      for (size_t i = 0; i < n_keep; i++)
        if (json_object_array_add (k, json_object_new_int64 (keep[i])) < 0)
          return NULL;
    }
  /* json-c gives NULL for a member it could not allocate: check them.  */
  if (rt_json_str (o, "entropy") == NULL || rt_json_str (o, "hostname") == NULL || rt_json_str (o, "mode") == NULL
      || !json_object_object_get_ex (o, "timeMs", NULL))
    return NULL;
  return json_object_get (o);
}

int
rt_guest_restore_as (struct rt_channel *ch, const char *hostname, enum rt_restore_mode mode, const uint32_t *keep,
                     size_t n_keep, int timeout_ms, rt_error **err)
{
  struct op op = { ch, rt_now_ms () + timeout_ms, "restore", 0, NULL };
  cleanup_json json_object *o = rt_guest_restore_request (hostname, mode, keep, n_keep);
  int ret = 0;

  if (o == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot build the RESTORE request: %s",
                         errno ? strerror (errno) : "out of memory");
  /* A clone's agent greets the host it sees connect, and drops what came
     before; a quiesced one (a child, a woken sandbox) sends no HELLO.  */
  if (mode == RT_RESTORE_CLONE)
    ret = op_wait_hello (&op, 1000, err);
  op.resend = o;
  if (ret == 0)
    ret = op_send_json (&op, RT_FRAME_RESTORE, 0, o, err);
  return ret < 0 ? ret : op_wait_done (&op, "restore", err);
}

int
rt_guest_restore (struct rt_channel *ch, const char *hostname, int timeout_ms, rt_error **err)
{
  return rt_guest_restore_as (ch, hostname, RT_RESTORE_CLONE, NULL, 0, timeout_ms, err);
}

static json_object *
exec_request (const char *const *argv, int timeout_ms)
{
  json_object *o = json_object_new_object ();
  json_object *a = json_object_new_array ();
  json_object *env = json_object_new_array ();

  if (o == NULL || a == NULL || env == NULL)
    {
      json_object_put (o);
      json_object_put (a);
      json_object_put (env);
      return NULL;
    }
  for (size_t i = 0; argv[i]; i++)
    json_object_array_add (a, json_object_new_string (argv[i]));
  json_object_array_add (env, json_object_new_string ("PATH=" RT_CLEAN_PATH));
  json_object_object_add (o, "argv", a);
  json_object_object_add (o, "env", env);
  json_object_object_add (o, "cwd", json_object_new_string ("/"));
  json_object_object_add (o, "user", json_object_new_string ("root"));
  json_object_object_add (o, "timeoutMs", json_object_new_int64 (timeout_ms));
  json_object_object_add (o, "stdin", json_object_new_boolean (false));
  return o;
}

/* EXIT {"exitCode":N}: the agent already gives 128+signal for a kill.  */
static int
run_exit (struct op *op, const uint8_t *payload, uint32_t len, int *exit_code, rt_error **err)
{
  cleanup_json json_object *o = rt_channel_parse_json (payload, len);
  json_object *v = NULL;
  int64_t code;

  if (o == NULL || !json_object_object_get_ex (o, "exitCode", &v) || !json_object_is_type (v, json_type_int))
    return op_fail (op, err, EPROTO, "malformed EXIT");
  code = json_object_get_int64 (v);
  if (code < 0 || code > 255 + 128)
    return op_fail (op, err, EPROTO, "exit code out of range");
  *exit_code = (int) code;
  return 0;
}

int
rt_guest_run (struct rt_channel *ch, const char *const *argv, int timeout_ms, int *exit_code, rt_error **err)
{
  struct op op = { ch, rt_now_ms () + timeout_ms, "run a command", 0 };
  cleanup_json json_object *req = exec_request (argv, timeout_ms);
  int ret;

  if (req == NULL)
    return rt_error_oom (err);
  ret = op_send_json (&op, RT_FRAME_EXEC, RUN_STREAM, req, err);
  while (ret == 0)
    {
      struct rt_frame_header h;
      const uint8_t *payload;
      uint8_t credit[4];

      ret = op_next (&op, &h, &payload, err);
      if (ret < 0)
        return ret;
      if (h.stream == RUN_STREAM && h.type == RT_FRAME_EXIT)
        return run_exit (&op, payload, h.len, exit_code, err);
      /* Stream 0's: the agent refused the connection (protocol_error).  */
      if ((h.stream == RUN_STREAM || h.stream == 0) && h.type == RT_FRAME_ERROR)
        return op_refused (&op, payload, h.len, err);
      if (h.stream == RUN_STREAM && (h.type == RT_FRAME_STDOUT || h.type == RT_FRAME_STDERR))
        {
          /* Discarded, but acknowledged: the guest stops at
             RT_WINDOW_INITIAL bytes without credit.  */
          if (h.len == 0)
            continue;
          rt_put_u32 (credit, h.len);
          ret = op_send (&op, RT_FRAME_WINDOW, RUN_STREAM, credit, sizeof credit, err);
          continue;
        }
      ret = op_skip (&op, err);
    }
  return ret;
}
