/* channel.c - the host's end of the agent channel: connect and hello (the
   monitor's event loop takes it from there).
   Everything read here comes from the guest, which is hostile: frames are
   checked by the codec, JSON by shape, and a broken channel is an error,
   never a crash or a hang.  */
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vmm/channel.h"

static int
channel_broken (rt_error **err, const char *why)
{
  rt_error_set (err, EPIPE, "internal", "lost the sandbox's agent: %s", why);
  return rt_error_hint (err, "the sandbox may have crashed; its console log is in its state directory");
}

int
rt_channel_read (struct rt_channel *ch, rt_error **err)
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

json_object *
rt_channel_parse_json (const uint8_t *payload, uint32_t len)
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

int
rt_channel_open (struct rt_channel *ch, const char *sock, int vm_pidfd, struct rt_console *con, uint64_t deadline,
                 rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };

  memset (ch, 0, sizeof (*ch));
  ch->fd = -1;
  ch->vm_pidfd = vm_pidfd;
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
        return 0;
      if (errno != ENOENT && errno != ECONNREFUSED)
        return rt_error_set (err, errno, "startup_failed", "cannot connect to '%s': %s", sock, strerror (errno));
      close (ch->fd);
      ch->fd = -1;
      if (con)
        rt_console_drain (con);
      if (poll (&pfd, 1, 2) > 0)
        return rt_error_set (err, EIO, "startup_failed", "QEMU exited while starting");
      if (rt_now_ms () > deadline)
        return rt_error_set (err, ETIMEDOUT, "startup_failed", "QEMU did not open the agent socket");
    }
}

int
rt_channel_connect (struct rt_channel *ch, const char *sock, int vm_pidfd, struct rt_console *con, int timeout_ms,
                    rt_error **err)
{
  uint64_t deadline = rt_now_ms () + timeout_ms;
  int ret = rt_channel_open (ch, sock, vm_pidfd, con, deadline, err);

  if (ret < 0)
    return ret;

  /* Wait for the agent's HELLO.  */
  for (;;)
    {
      struct pollfd pfd[3] = { { .fd = ch->fd, .events = POLLIN },
                               { .fd = vm_pidfd, .events = POLLIN },
                               { .fd = con ? con->sock : -1, .events = POLLIN } };
      struct rt_frame_header h;
      const uint8_t *payload;
      int64_t left = (int64_t) deadline - (int64_t) rt_now_ms ();

      if (left <= 0)
        return rt_error_set (err, ETIMEDOUT, "startup_failed", "the guest agent did not answer within %d s",
                             timeout_ms / 1000);
      if (poll (pfd, 3, left) < 0 && errno != EINTR)
        return rt_error_set (err, errno, "startup_failed", "poll: %s", strerror (errno));
      /* The console is read while the guest boots: QEMU waits on a full
         console socket, and so would the guest.  */
      if (pfd[2].revents)
        rt_console_drain (con);
      if (pfd[1].revents)
        return rt_error_set (err, EIO, "startup_failed", "the VM exited during boot");
      if (!pfd[0].revents)
        continue;
      ret = rt_channel_read (ch, err);
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
            json_object *hello = rt_channel_parse_json (payload, h.len);
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

void
rt_channel_close (struct rt_channel *ch)
{
  if (ch->fd >= 0)
    close (ch->fd);
  ch->fd = -1;
  free (ch->reader);
  ch->reader = NULL;
}
