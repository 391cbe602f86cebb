/* qmp.c - one QMP command to QEMU (stop, cont), synchronously.  QMP is a
   line-oriented JSON protocol: a greeting, qmp_capabilities, then commands;
   asynchronous events may arrive between replies and are skipped.  */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vmm/qmp.h"

#define QMP_TIMEOUT_MS 3000

/* Reads one reply line ("return" or "error"), skipping events.  */
static int
read_reply (int fd, char *buf, size_t size, size_t *fill, json_object **out, uint64_t deadline, rt_error **err)
{
  for (;;)
    {
      char *nl;
      while ((nl = memchr (buf, '\n', *fill)))
        {
          json_object *obj;
          size_t line = nl - buf + 1;
          *nl = '\0';
          obj = json_tokener_parse (buf);
          memmove (buf, buf + line, *fill - line);
          *fill -= line;
          if (obj && (json_object_object_get_ex (obj, "return", NULL) || json_object_object_get_ex (obj, "error", NULL)
                      || json_object_object_get_ex (obj, "QMP", NULL)))
            {
              *out = obj;
              return 0;
            }
          json_object_put (obj);
        }
      {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int64_t left = (int64_t) deadline - (int64_t) rt_now_ms ();
        ssize_t n;
        if (left <= 0 || poll (&pfd, 1, left) <= 0)
          return rt_error_set (err, ETIMEDOUT, "internal", "QEMU did not answer on QMP");
        if (*fill + 1 >= size)
          return rt_error_set (err, EMSGSIZE, "internal", "QMP line too long");
        n = read (fd, buf + *fill, size - *fill - 1);
        if (n <= 0)
          return rt_error_set (err, EPIPE, "internal", "QMP connection closed");
        *fill += n;
      }
    }
}

int
rt_qmp_command (const char *sock, const char *command, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  uint64_t deadline = rt_now_ms () + QMP_TIMEOUT_MS;
  char buf[16384];
  size_t fill = 0;
  int ret;

  if (fd < 0 || strlen (sock) >= sizeof (addr.sun_path))
    return rt_error_set (err, errno ? errno : ENAMETOOLONG, "internal", "cannot reach QMP at '%s'", sock);
  strcpy (addr.sun_path, sock);
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0)
    return rt_error_set (err, errno, "internal", "cannot connect to QMP at '%s': %s", sock, strerror (errno));
  for (int step = 0; step < 3; step++)
    {
      cleanup_json json_object *reply = NULL;
      json_object *e;
      ret = read_reply (fd, buf, sizeof (buf), &fill, &reply, deadline, err);
      if (ret < 0)
        return ret;
      if (json_object_object_get_ex (reply, "error", &e))
        return rt_error_set (err, EIO, "internal", "QEMU refused '%s': %s", command,
                             json_object_to_json_string (e));
      if (step == 0)
        ret = rt_write_all (fd, "{\"execute\":\"qmp_capabilities\"}\n", 31);
      else if (step == 1)
        {
          cleanup_free char *cmd = rt_strdup_printf ("{\"execute\":\"%s\"}\n", command);
          ret = cmd ? rt_write_all (fd, cmd, strlen (cmd)) : -ENOMEM;
        }
      if (ret < 0)
        return rt_error_set (err, -ret, "internal", "cannot write to QMP: %s", strerror (-ret));
    }
  return 0;
}
