/* session-local.c - the local rt_session (see session-local.h): frames
   over the sandbox's session.sock (monitor/session.h has the protocol).  */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/exec-result.h"
#include "common/proto.h"
#include "common/sys.h"
#include "core/context.h"
#include "sandbox/handle.h"
#include "sandbox/session-local.h"
#include "vmm/channel.h"

/* How long an open waits for the monitor's answer (it answers at once
   unless it is stuck).  */
#define OPEN_TIMEOUT_MS 30000

struct local_session
{
  rt_session base;
  struct rt_frame_reader *reader;
  const uint8_t *out; /* output not yet handed out (in the reader) */
  size_t out_len;
  int out_stream;
  uint32_t inflight; /* stdin sent, not yet taken by the guest */
  bool input_closed;
  bool ended;
  rt_exec_result res;
  rt_error *end_err; /* what ended it instead of an exit */
};

/* Writes all of a frame: the monitor reads its clients at all times, so
   a full socket only waits for its next turn.  */
static int
send_frame (struct local_session *ls, uint8_t type, const void *data, size_t len, rt_error **err)
{
  uint8_t hdr[RT_FRAME_HEADER];
  struct iovec iov[2] = { { hdr, sizeof (hdr) }, { (void *) data, len } };
  struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

  rt_frame_encode_header (hdr, type, 0, len);
  while (iov[0].iov_len + iov[1].iov_len > 0)
    {
      ssize_t n = sendmsg (ls->base.fd, &msg, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        {
          struct pollfd p = { .fd = ls->base.fd, .events = POLLOUT };
          if (poll (&p, 1, OPEN_TIMEOUT_MS) == 0)
            return rt_error_set (err, ETIMEDOUT, "sandbox_not_ready", "the sandbox's monitor does not read");
          continue;
        }
      if (n < 0)
        return rt_error_set (err, errno, "sandbox_not_ready", "the sandbox's monitor went away: %s", strerror (errno));
      rt_iov2_advance (&msg, iov, (size_t) n);
    }
  return 0;
}

static int
send_json (struct local_session *ls, uint8_t type, json_object *o, rt_error **err)
{
  size_t len;
  const char *s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);
  return send_frame (ls, type, s, len, err);
}

/* The last frame: EXIT fills the result, ERROR becomes the end's error.  */
static void
take_end (struct local_session *ls, const struct rt_frame_header *h, const uint8_t *payload)
{
  cleanup_json json_object *o = rt_channel_parse_json (payload, h->len);
  const char *code = rt_json_str (o, "code"), *msg = rt_json_str (o, "message"), *hint = rt_json_str (o, "hint");

  ls->ended = true;
  if (h->type == RT_FRAME_EXIT)
    return rt_exec_result_from_json (o, &ls->res);
  rt_error_set (&ls->end_err, EIO, code ? code : "internal", "%s", msg ? msg : "the session ended in an error");
  if (hint)
    rt_error_hint (&ls->end_err, "%s", hint);
}

/* Takes one frame.  Return: 1 with one, 0 when none is whole yet (a read
   would block), <0 with @err set when the monitor went away.  */
static int
next_frame (struct local_session *ls, struct rt_frame_header *h, const uint8_t **payload, rt_error **err)
{
  for (;;)
    {
      int ret = rt_frame_reader_next (ls->reader, h, payload);
      size_t avail;
      uint8_t *space;
      ssize_t n;

      if (ret < 0)
        return rt_error_set (err, EPROTO, "internal", "the monitor sent a bad frame");
      if (ret > 0)
        return 1;
      space = rt_frame_reader_space (ls->reader, &avail);
      n = read (ls->base.fd, space, avail);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        return 0;
      if (n <= 0)
        {
          rt_error_set (err, EPIPE, "sandbox_not_ready", "the sandbox's monitor went away");
          return rt_error_hint (err, "it may have stopped: runtime sandbox get shows its state");
        }
      rt_frame_reader_filled (ls->reader, n);
    }
}

static long
local_read (rt_session *s, int *stream, void *buf, size_t size, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;
  struct rt_frame_header h;
  const uint8_t *payload;

  while (ls->out_len == 0)
    {
      int ret;
      if (ls->ended)
        return 0;
      ret = next_frame (ls, &h, &payload, err);
      if (ret < 0)
        {
          ls->ended = true;
          rt_error_set (&ls->end_err, EPIPE, (*err)->code, "%s", (*err)->msg);
          return ret;
        }
      if (ret == 0)
        return -EAGAIN;
      if (h.type == RT_FRAME_STDOUT || h.type == RT_FRAME_STDERR)
        {
          ls->out = payload;
          ls->out_len = h.len;
          ls->out_stream = h.type == RT_FRAME_STDOUT ? 1 : 2;
        }
      else if (h.type == RT_FRAME_WINDOW && h.len == 4)
        {
          uint32_t n = rt_get_u32 (payload);
          ls->inflight -= n < ls->inflight ? n : ls->inflight;
        }
      else if (h.type == RT_FRAME_EXIT || h.type == RT_FRAME_ERROR)
        take_end (ls, &h, payload);
    }
  size = size < ls->out_len ? size : ls->out_len;
  memcpy (buf, ls->out, size);
  ls->out += size;
  ls->out_len -= size;
  *stream = ls->out_stream;
  return (long) size;
}

static size_t
local_writable (rt_session *s)
{
  struct local_session *ls = (struct local_session *) s;
  return ls->input_closed || ls->ended ? 0 : RT_WINDOW_INITIAL - ls->inflight;
}

static int
local_write (rt_session *s, const void *buf, size_t len, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;

  for (size_t off = 0; off < len; off += RT_FRAME_MAX_PAYLOAD)
    {
      size_t n = len - off < RT_FRAME_MAX_PAYLOAD ? len - off : RT_FRAME_MAX_PAYLOAD;
      if (send_frame (ls, RT_FRAME_STDIN, (const uint8_t *) buf + off, n, err) < 0)
        return -EPIPE;
      ls->inflight += n;
    }
  return 0;
}

static int
local_close_input (rt_session *s, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;

  if (ls->input_closed || ls->ended)
    return 0;
  ls->input_closed = true;
  return send_frame (ls, RT_FRAME_STDIN, NULL, 0, err);
}

static int
local_resize (rt_session *s, unsigned cols, unsigned rows, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;
  cleanup_json json_object *o = json_object_new_object ();

  if (ls->ended)
    return 0;
  json_object_object_add (o, "cols", json_object_new_int64 (cols));
  json_object_object_add (o, "rows", json_object_new_int64 (rows));
  return send_json (ls, RT_FRAME_RESIZE, o, err);
}

static int
local_signal (rt_session *s, int signal, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;
  cleanup_json json_object *o = json_object_new_object ();

  if (ls->ended)
    return 0;
  json_object_object_add (o, "signal", json_object_new_int (signal));
  return send_json (ls, RT_FRAME_SIGNAL, o, err);
}

static int
local_result (rt_session *s, rt_exec_result *res, rt_error **err)
{
  struct local_session *ls = (struct local_session *) s;

  if (!ls->ended)
    return rt_error_set (err, EINVAL, "usage", "the session has not ended");
  if (ls->end_err)
    {
      rt_error_set (err, ls->end_err->status, ls->end_err->code, "%s", ls->end_err->msg);
      if (ls->end_err->hint)
        rt_error_hint (err, "%s", ls->end_err->hint);
      return -EIO;
    }
  *res = ls->res;
  return 0;
}

/* Closing the socket is the end: the monitor kills the command or closes
   the connection.  */
static void
local_free (rt_session *s)
{
  struct local_session *ls = (struct local_session *) s;

  if (ls->base.fd >= 0)
    close (ls->base.fd);
  free (ls->reader);
  rt_error_free (ls->end_err);
  free (ls);
}

static const struct rt_session_ops local_ops = {
  .read = local_read,
  .writable = local_writable,
  .write = local_write,
  .close_input = local_close_input,
  .resize = local_resize,
  .signal = local_signal,
  .result = local_result,
  .free = local_free,
};

static int
connect_monitor (rt_sandbox *sb, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  int fd;

  if ((size_t) snprintf (addr.sun_path, sizeof (addr.sun_path), "%s/session.sock", sb->dir) >= sizeof (addr.sun_path))
    return rt_error_set (err, ENAMETOOLONG, "internal", "the sandbox's directory path is too long");
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "socket: %s", strerror (errno));
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0)
    {
      int e = errno;
      close (fd);
      rt_error_set (err, e, "sandbox_not_ready", "cannot reach the sandbox's monitor: %s", strerror (e));
      rt_error_hint (err, "it may have stopped: runtime sandbox get shows its state");
      return rt_sandbox_not_ready_yet (sb, -e, err);
    }
  return fd;
}

/* Waits for the monitor's answer to the open: WINDOW 0, or an ERROR.  */
static int
wait_opened (struct local_session *ls, rt_error **err)
{
  struct rt_frame_header h;
  const uint8_t *payload;
  struct pollfd p = { .fd = ls->base.fd, .events = POLLIN };
  int ret;

  while ((ret = next_frame (ls, &h, &payload, err)) == 0)
    if (poll (&p, 1, OPEN_TIMEOUT_MS) == 0)
      return rt_error_set (err, ETIMEDOUT, "sandbox_not_ready", "the sandbox's monitor does not answer");
  if (ret < 0)
    return ret;
  if (h.type == RT_FRAME_ERROR)
    {
      take_end (ls, &h, payload);
      *err = steal_pointer (&ls->end_err);
      return -EIO;
    }
  if (h.type != RT_FRAME_WINDOW)
    return rt_error_set (err, EPROTO, "internal", "the monitor answered the session's open with frame %u", h.type);
  return 0;
}

int
rt_session_local_open (rt_sandbox *sb, uint8_t type, json_object *request, bool pty, rt_session **out, rt_error **err)
{
  struct local_session *ls = calloc (1, sizeof (*ls));
  int fd;

  if (ls == NULL || (ls->reader = malloc (sizeof (*ls->reader))) == NULL)
    {
      free (ls);
      return rt_error_oom (err);
    }
  rt_frame_reader_init (ls->reader);
  ls->base.ops = &local_ops;
  ls->base.pty = pty;
  ls->base.fd = -1;
  fd = connect_monitor (sb, err);
  if (fd < 0)
    {
      local_free (&ls->base);
      return fd;
    }
  ls->base.fd = fd;
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
  if (send_json (ls, type, request, err) < 0 || wait_opened (ls, err) < 0)
    {
      local_free (&ls->base);
      return -EIO;
    }
  *out = &ls->base;
  return 0;
}
