/* channel.c - the host's end of the agent protocol: connect, hello, exec.
   Everything read here comes from the guest, which is hostile: frames are
   checked by the codec, JSON by shape, and a broken channel is an error,
   never a crash or a hang.  */
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "channel.h"

#define STDIN_MAX (1024 * 1024)
#define KILL_GRACE_MS 5000
/* How long past its own timeout a command may take before the host gives up
   on the guest.  */
#define BACKSTOP_MS 15000

static int
queue_frame (struct rt_channel *ch, uint8_t type, uint32_t stream, const void *payload, size_t len, rt_error **err)
{
  size_t need = ch->out_len + RT_FRAME_HEADER + len;

  if (len > RT_FRAME_MAX_PAYLOAD)
    return rt_error_set (err, EMSGSIZE, "invalid_request", "request too large (%zu bytes)", len);
  if (need > ch->out_alloc)
    {
      size_t alloc = ch->out_alloc ? ch->out_alloc : 65536;
      uint8_t *nb;
      while (alloc < need)
        alloc *= 2;
      nb = realloc (ch->out, alloc);
      if (nb == NULL)
        return rt_error_oom (err);
      ch->out = nb;
      ch->out_alloc = alloc;
    }
  rt_frame_encode_header (ch->out + ch->out_len, type, stream, len);
  if (len)
    memcpy (ch->out + ch->out_len + RT_FRAME_HEADER, payload, len);
  ch->out_len = need;
  return 0;
}

static int
queue_json (struct rt_channel *ch, uint8_t type, uint32_t stream, json_object *obj, rt_error **err)
{
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN, &len);
  return queue_frame (ch, type, stream, s, len, err);
}

static int
channel_broken (rt_error **err, const char *why)
{
  rt_error_set (err, EPIPE, "internal", "lost the sandbox's agent: %s", why);
  return rt_error_hint (err, "the sandbox may have crashed; its console log is in its state directory");
}

/* Writes what is queued without blocking.  */
static int
flush_some (struct rt_channel *ch, rt_error **err)
{
  size_t off = 0;

  while (off < ch->out_len)
    {
      ssize_t n = send (ch->fd, ch->out + off, ch->out_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          if (errno == EAGAIN)
            break;
          return channel_broken (err, strerror (errno));
        }
      off += n;
    }
  memmove (ch->out, ch->out + off, ch->out_len - off);
  ch->out_len -= off;
  return 0;
}

/* Reads what is there into the frame reader.  0 on EOF.  */
static int
read_some (struct rt_channel *ch, rt_error **err)
{
  size_t avail;
  uint8_t *space = rt_frame_reader_space (ch->reader, &avail);
  ssize_t n;

  do
    n = recv (ch->fd, space, avail, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      if (errno == EAGAIN)
        return 1;
      return channel_broken (err, strerror (errno));
    }
  if (n == 0)
    return 0;
  rt_frame_reader_filled (ch->reader, n);
  return 1;
}

static json_object *
parse_json (const uint8_t *payload, uint32_t len)
{
  json_tokener *tok = json_tokener_new ();
  json_object *obj;

  if (tok == NULL)
    return NULL;
  obj = json_tokener_parse_ex (tok, (const char *) payload, len);
  if (obj && (json_tokener_get_error (tok) != json_tokener_success || !json_object_is_type (obj, json_type_object)))
    {
      json_object_put (obj);
      obj = NULL;
    }
  json_tokener_free (tok);
  return obj;
}

static int64_t
get_int (json_object *obj, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (obj, key, &v) ? json_object_get_int64 (v) : 0;
}

static const char *
get_str (json_object *obj, const char *key, const char *dflt)
{
  json_object *v;
  if (json_object_object_get_ex (obj, key, &v) && json_object_is_type (v, json_type_string))
    return json_object_get_string (v);
  return dflt;
}

int
rt_channel_connect (struct rt_channel *ch, const char *sock, int vm_pidfd, int timeout_ms, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  uint64_t deadline = rt_now_ms () + timeout_ms;
  int ret;

  memset (ch, 0, sizeof (*ch));
  ch->fd = -1;
  ch->vm_pidfd = vm_pidfd;
  ch->next_stream = 1;
  if (strlen (sock) >= sizeof (addr.sun_path))
    return rt_error_set (err, ENAMETOOLONG, "startup_failed", "socket path too long: %s", sock);
  strcpy (addr.sun_path, sock);
  ch->reader = malloc (sizeof (*ch->reader));
  if (ch->reader == NULL)
    return rt_error_oom (err);
  rt_frame_reader_init (ch->reader);

  /* QEMU creates the socket a few milliseconds after it starts.  */
  for (;;)
    {
      struct pollfd pfd = { .fd = vm_pidfd, .events = POLLIN };
      ch->fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (ch->fd < 0)
        return rt_error_set (err, errno, "startup_failed", "socket: %s", strerror (errno));
      if (connect (ch->fd, (struct sockaddr *) &addr, sizeof (addr)) == 0)
        break;
      if (errno != ENOENT && errno != ECONNREFUSED)
        return rt_error_set (err, errno, "startup_failed", "cannot connect to '%s': %s", sock, strerror (errno));
      close (ch->fd);
      ch->fd = -1;
      if (poll (&pfd, 1, 2) > 0)
        return rt_error_set (err, EIO, "startup_failed", "QEMU exited while starting");
      if (rt_now_ms () > deadline)
        return rt_error_set (err, ETIMEDOUT, "startup_failed", "QEMU did not open the agent socket");
    }

  /* Wait for the agent's HELLO.  */
  for (;;)
    {
      struct pollfd pfd[2] = { { .fd = ch->fd, .events = POLLIN }, { .fd = vm_pidfd, .events = POLLIN } };
      struct rt_frame_header h;
      const uint8_t *payload;
      int64_t left = (int64_t) deadline - (int64_t) rt_now_ms ();

      if (left <= 0)
        return rt_error_set (err, ETIMEDOUT, "startup_failed", "the guest agent did not answer within %d s",
                             timeout_ms / 1000);
      if (poll (pfd, 2, left) < 0 && errno != EINTR)
        return rt_error_set (err, errno, "startup_failed", "poll: %s", strerror (errno));
      if (pfd[1].revents)
        return rt_error_set (err, EIO, "startup_failed", "the VM exited during boot");
      if (!pfd[0].revents)
        continue;
      ret = read_some (ch, err);
      if (ret < 0)
        return ret;
      if (ret == 0)
        {
          struct pollfd dead = { .fd = vm_pidfd, .events = POLLIN };
          if (poll (&dead, 1, 1000) > 0)
            return rt_error_set (err, EIO, "startup_failed", "the VM exited during boot");
          return rt_error_set (err, EPIPE, "startup_failed", "QEMU closed the agent socket");
        }
      while ((ret = rt_frame_reader_next (ch->reader, &h, &payload)) > 0)
        if (h.type == RT_FRAME_HELLO && h.stream == 0)
          {
            json_object *hello = parse_json (payload, h.len);
            int64_t version = hello ? get_int (hello, "version") : -1;
            json_object_put (hello);
            if (version != RT_PROTO_VERSION)
              return rt_error_set (err, EPROTO, "startup_failed",
                                   "the guest agent speaks protocol %lld, this runtime %d", (long long) version,
                                   RT_PROTO_VERSION);
            return 0;
          }
      if (ret < 0)
        return rt_error_set (err, -ret, "startup_failed", "garbled frame from the guest agent");
    }
}

static json_object *
strv_to_json (json_object *arr, char *const *v)
{
  for (; v && *v; v++)
    json_object_array_add (arr, json_object_new_string (*v));
  return arr;
}

static int
deliver (const rt_exec_opts *opts, int stream, const uint8_t *buf, size_t len)
{
  if (opts->on_output == NULL || len == 0)
    return 0;
  return opts->on_output (opts->data, stream, (const char *) buf, len);
}

int
rt_channel_exec (struct rt_channel *ch, char *const argv[], char *const *env, const char *cwd,
                 const rt_exec_opts *opts, rt_exec_result *res, rt_error **err)
{
  static const rt_exec_opts no_opts = { .cancel_fd = -1 };
  json_object *req, *arr;
  uint32_t stream;
  uint64_t kill_at = 0, give_up_at = 0;
  bool cancelled = false, output_failed = false;
  int ret;

  if (opts == NULL)
    opts = &no_opts;
  memset (res, 0, sizeof (*res));
  if (argv == NULL || argv[0] == NULL)
    return rt_error_set (err, EINVAL, "usage", "no command given");
  if (opts->stdin_len > STDIN_MAX)
    return rt_error_set (err, E2BIG, "usage", "standard input is over 1 MiB");
  stream = ch->next_stream++;

  req = json_object_new_object ();
  json_object_object_add (req, "argv", strv_to_json (json_object_new_array (), argv));
  arr = strv_to_json (json_object_new_array (), env);
  json_object_object_add (req, "env", strv_to_json (arr, opts->env));
  json_object_object_add (req, "cwd", json_object_new_string (opts->cwd ? opts->cwd : cwd ? cwd : "/workspace"));
  json_object_object_add (req, "user", json_object_new_string (opts->user ? opts->user : "runtime"));
  json_object_object_add (req, "timeoutMs", json_object_new_int64 (opts->timeout_ms));
  json_object_object_add (req, "stdin", json_object_new_boolean (opts->stdin_len > 0));
  ret = queue_json (ch, RT_FRAME_EXEC, stream, req, err);
  json_object_put (req);
  if (ret < 0)
    return ret;
  if (opts->stdin_len > 0)
    {
      const uint8_t *p = opts->stdin_data;
      size_t left = opts->stdin_len;
      while (left > 0)
        {
          size_t chunk = left < 65536 ? left : 65536;
          ret = queue_frame (ch, RT_FRAME_STDIN, stream, p, chunk, err);
          if (ret < 0)
            return ret;
          p += chunk;
          left -= chunk;
        }
      ret = queue_frame (ch, RT_FRAME_STDIN, stream, NULL, 0, err);
      if (ret < 0)
        return ret;
    }
  if (opts->timeout_ms > 0)
    give_up_at = rt_now_ms () + opts->timeout_ms + BACKSTOP_MS;

  for (;;)
    {
      struct pollfd pfd[3] = {
        { .fd = ch->fd, .events = POLLIN | (ch->out_len ? POLLOUT : 0) },
        { .fd = ch->vm_pidfd, .events = POLLIN },
        { .fd = (opts->cancel_fd > 0 && !cancelled) ? opts->cancel_fd : -1, .events = POLLIN },
      };
      struct rt_frame_header h;
      const uint8_t *payload;
      int timeout = -1;
      uint64_t now = rt_now_ms ();

      if (kill_at)
        timeout = kill_at > now ? (int) (kill_at - now) : 0;
      if (give_up_at)
        {
          int t = give_up_at > now ? (int) (give_up_at - now) : 0;
          timeout = timeout < 0 || t < timeout ? t : timeout;
        }
      if (poll (pfd, 3, timeout) < 0)
        {
          if (errno == EINTR)
            continue;
          return rt_error_set (err, errno, "internal", "poll: %s", strerror (errno));
        }
      now = rt_now_ms ();
      if (pfd[1].revents)
        return channel_broken (err, "the VM exited");
      if (give_up_at && now >= give_up_at)
        return channel_broken (err, "no answer after the command's timeout");
      if (pfd[2].revents)
        {
          /* The caller was interrupted: give the command a chance to end
             cleanly, then kill its process group.  */
          json_object *sig = json_object_new_object ();
          json_object_object_add (sig, "signal", json_object_new_int (SIGTERM));
          ret = queue_json (ch, RT_FRAME_SIGNAL, stream, sig, err);
          json_object_put (sig);
          if (ret < 0)
            return ret;
          cancelled = true;
          res->interrupted = true;
          kill_at = now + KILL_GRACE_MS;
        }
      if (kill_at && now >= kill_at)
        {
          json_object *sig = json_object_new_object ();
          json_object_object_add (sig, "signal", json_object_new_int (SIGKILL));
          ret = queue_json (ch, RT_FRAME_SIGNAL, stream, sig, err);
          json_object_put (sig);
          if (ret < 0)
            return ret;
          kill_at = 0;
        }
      if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
        {
          ret = read_some (ch, err);
          if (ret < 0)
            return ret;
          if (ret == 0)
            return channel_broken (err, "the agent socket closed");
        }
      while ((ret = rt_frame_reader_next (ch->reader, &h, &payload)) > 0)
        {
          if (h.stream != stream)
            continue;
          if (h.type == RT_FRAME_STDOUT || h.type == RT_FRAME_STDERR)
            {
              uint8_t ack[4];
              if (!output_failed && deliver (opts, h.type == RT_FRAME_STDOUT ? 1 : 2, payload, h.len) < 0)
                {
                  /* Nobody can read the output any more: stop the command
                     rather than let it run unseen.  */
                  output_failed = true;
                  kill_at = now;
                }
              rt_put_u32 (ack, h.len);
              ret = queue_frame (ch, RT_FRAME_WINDOW, stream, ack, sizeof (ack), err);
              if (ret < 0)
                return ret;
            }
          else if (h.type == RT_FRAME_EXIT)
            {
              json_object *exit = parse_json (payload, h.len);
              json_object *to;
              if (exit == NULL)
                return channel_broken (err, "malformed exit message");
              res->exit_code = (int) get_int (exit, "exitCode");
              res->signal = (int) get_int (exit, "signal");
              res->duration_ms = (uint64_t) get_int (exit, "durationMs");
              res->timed_out = json_object_object_get_ex (exit, "timedOut", &to) && json_object_get_boolean (to);
              json_object_put (exit);
              if (res->exit_code < 0 || res->exit_code > 255)
                res->exit_code = 255;
              if (res->timed_out)
                res->exit_code = 124;
              if (output_failed)
                return rt_error_set (err, EPIPE, "internal", "the command's output could not be written");
              return 0;
            }
          else if (h.type == RT_FRAME_ERROR)
            {
              json_object *e = parse_json (payload, h.len);
              const char *code = e ? get_str (e, "code", "internal") : "internal";
              const char *msg = e ? get_str (e, "message", "the agent refused the command") : "garbled error";
              /* Only codes the product documents may reach the user.  */
              if (strcmp (code, "file_not_found") != 0 && strcmp (code, "invalid_env") != 0
                  && strcmp (code, "invalid_request") != 0)
                code = "internal";
              ret = rt_error_set (err, EINVAL, code, "%s", msg);
              json_object_put (e);
              return ret;
            }
        }
      if (ret < 0)
        return channel_broken (err, "garbled frame");
      if ((pfd[0].revents & POLLOUT) || ch->out_len)
        {
          ret = flush_some (ch, err);
          if (ret < 0)
            return ret;
        }
    }
}

int
rt_channel_shutdown (struct rt_channel *ch, rt_error **err)
{
  int ret = queue_frame (ch, RT_FRAME_SHUTDOWN, 0, NULL, 0, err);
  if (ret < 0)
    return ret;
  return flush_some (ch, err);
}

void
rt_channel_close (struct rt_channel *ch)
{
  if (ch->fd >= 0)
    close (ch->fd);
  ch->fd = -1;
  free (ch->reader);
  free (ch->out);
  ch->reader = NULL;
  ch->out = NULL;
  ch->out_len = ch->out_alloc = 0;
}
