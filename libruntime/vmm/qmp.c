/* qmp.c - QMP sessions and one-shot commands (qmp.h).  QMP is a
   line-oriented JSON protocol: a greeting, qmp_capabilities, then
   commands; asynchronous events may arrive between replies and are
   skipped.  QEMU runs in its jail, but what it says is still read with
   care: lines are bounded and replies checked by shape.  */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vmm/qmp.h"

#define QMP_TIMEOUT_MS 3000

/* Reads one reply line ("return", "error" or the greeting), skipping
   events.  */
static int
read_reply (struct rt_qmp *q, json_object **out, uint64_t deadline, rt_error **err)
{
  for (;;)
    {
      char *nl;
      while ((nl = memchr (q->buf, '\n', q->fill)))
        {
          json_object *obj;
          size_t line = nl - q->buf + 1;
          *nl = '\0';
          obj = json_tokener_parse (q->buf);
          memmove (q->buf, q->buf + line, q->fill - line);
          q->fill -= line;
          if (json_object_is_type (obj, json_type_object)
              && (json_object_object_get_ex (obj, "return", NULL) || json_object_object_get_ex (obj, "error", NULL)
                  || json_object_object_get_ex (obj, "QMP", NULL)))
            {
              *out = obj;
              return 0;
            }
          json_object_put (obj);
        }
      {
        struct pollfd pfd = { .fd = q->fd, .events = POLLIN };
        int64_t left = (int64_t) deadline - (int64_t) rt_now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&pfd, 1, left) <= 0)
          return rt_error_set (err, ETIMEDOUT, "internal", "QEMU did not answer on QMP");
        if (q->fill + 1 >= sizeof q->buf)
          return rt_error_set (err, EMSGSIZE, "internal", "QMP line too long");
        n = read (q->fd, q->buf + q->fill, sizeof q->buf - q->fill - 1);
        if (n <= 0)
          return rt_error_set (err, EPIPE, "internal", "QMP connection closed");
        q->fill += n;
      }
    }
}

/* Writes @s, with @fd attached when >= 0.  */
static int
send_line (struct rt_qmp *q, const char *s, int fd, rt_error **err)
{
  size_t len = strlen (s);
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  struct iovec iov = { .iov_base = (void *) s, .iov_len = len };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
  ssize_t n;

  if (fd >= 0)
    {
      struct cmsghdr *c;
      memset (&u, 0, sizeof u);
      msg.msg_control = u.buf;
      msg.msg_controllen = sizeof u.buf;
      c = CMSG_FIRSTHDR (&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN (sizeof (int));
      memcpy (CMSG_DATA (c), &fd, sizeof (int));
    }
  do
    n = sendmsg (q->fd, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return rt_error_set (err, errno, "internal", "cannot write to QMP: %s", strerror (errno));
  /* The rest, if the socket took only part (the fd went with the first
     byte).  */
  if ((size_t) n < len && rt_write_all (q->fd, s + n, len - n) < 0)
    return rt_error_set (err, errno, "internal", "cannot write to QMP: %s", strerror (errno));
  return 0;
}

int
rt_qmp_exec (struct rt_qmp *q, const char *json, int fd, json_object **reply, int timeout_ms, rt_error **err)
{
  cleanup_free char *line = rt_strdup_printf ("%s\n", json);
  cleanup_json json_object *r = NULL;
  json_object *v;
  int ret;

  if (reply)
    *reply = NULL;
  if (line == NULL)
    return rt_error_oom (err);
  ret = send_line (q, line, fd, err);
  if (ret == 0)
    ret = read_reply (q, &r, rt_now_ms () + timeout_ms, err);
  if (ret < 0)
    return ret;
  if (json_object_object_get_ex (r, "error", &v))
    {
      json_object *desc = NULL;
      cleanup_free char *cut = NULL, *why = NULL;
      json_object_object_get_ex (v, "desc", &desc);
      /* QEMU's text, on one line and bounded: it may be a guest's.  */
      cut = strndup (desc ? json_object_get_string (desc) : json_object_to_json_string (v), 200);
      why = cut ? rt_text_escape (cut, false) : NULL;
      return rt_error_set (err, EIO, "internal", "QEMU refused %.60s: %s", json, why ? why : "?");
    }
  if (!json_object_object_get_ex (r, "return", &v))
    return rt_error_set (err, EPROTO, "internal", "QEMU answered %.60s with no result", json);
  if (reply)
    *reply = json_object_get (v);
  return 0;
}

int
rt_qmp_open (struct rt_qmp *q, const char *sock, int timeout_ms, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  uint64_t deadline = rt_now_ms () + timeout_ms;
  cleanup_json json_object *greeting = NULL;
  int ret;

  q->fill = 0;
  q->fd = -1;
  if (strlen (sock) >= sizeof (addr.sun_path))
    return rt_error_set (err, ENAMETOOLONG, "internal", "cannot reach QMP at '%s'", sock);
  strcpy (addr.sun_path, sock);
  for (;;)
    {
      q->fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (q->fd < 0)
        return rt_error_set (err, errno, "internal", "socket: %s", strerror (errno));
      if (connect (q->fd, (struct sockaddr *) &addr, sizeof (addr)) == 0)
        break;
      close (q->fd);
      q->fd = -1;
      if ((errno != ENOENT && errno != ECONNREFUSED) || rt_now_ms () > deadline)
        return rt_error_set (err, errno, "internal", "cannot connect to QMP at '%s': %s", sock, strerror (errno));
      poll (NULL, 0, 2);
    }
  ret = read_reply (q, &greeting, deadline, err);
  if (ret == 0)
    ret = rt_qmp_exec (q, "{\"execute\":\"qmp_capabilities\"}", -1, NULL, timeout_ms, err);
  if (ret < 0)
    rt_qmp_close (q);
  return ret;
}

void
rt_qmp_close (struct rt_qmp *q)
{
  if (q->fd >= 0)
    close (q->fd);
  q->fd = -1;
}

int
rt_qmp_command (const char *sock, const char *command, rt_error **err)
{
  struct rt_qmp q;
  cleanup_free char *cmd = rt_strdup_printf ("{\"execute\":\"%s\"}", command);
  int ret;

  if (cmd == NULL)
    return rt_error_oom (err);
  ret = rt_qmp_open (&q, sock, QMP_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_qmp_exec (&q, cmd, -1, NULL, QMP_TIMEOUT_MS, err);
  rt_qmp_close (&q);
  return ret;
}
