/* connect.c - CONNECT (see connect.h).  The connection is a command
   without a process: fd[1] reads from the socket into STDOUT frames and
   fd[0], a second descriptor of the same socket, takes STDIN, so the
   windows, queues and orphaning of commands.c apply unchanged.  */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"
#include "connect.h"

static struct cmd *
free_slot (struct agent *ag)
{
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (!ag->cmds[i].used)
      return &ag->cmds[i];
  return NULL;
}

static void
refused (struct agent *ag, uint32_t stream, int port, int err)
{
  if (err == ECONNREFUSED)
    send_error (ag, stream, "connection_refused", "nothing listens on port %d in the sandbox", port);
  else
    send_error (ag, stream, "connection_refused", "cannot connect to port %d in the sandbox: %s", port,
                strerror (err));
}

void
handle_connect (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len)
{
  cleanup_json json_object *o = parse_object (p, len);
  json_object *v = o ? get_member (o, "port") : NULL;
  int64_t port = json_object_is_type (v, json_type_int) ? json_object_get_int64 (v) : 0;
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  cleanup_close int fd = -1;
  struct cmd *c;
  int dup_fd;

  if (stream == 0)
    {
      send_error (ag, 0, "invalid_request", "CONNECT needs a stream other than 0");
      return;
    }
  if (cmd_find (ag, stream))
    {
      send_error (ag, stream, "stream_in_use", "stream %u is already in use", stream);
      return;
    }
  if (port < 1 || port > 65535)
    {
      send_error (ag, stream, "invalid_request", "CONNECT needs {\"port\":N} with N in 1..65535");
      return;
    }
  if (ag->ncmds >= MAX_CMDS || (c = free_slot (ag)) == NULL)
    {
      send_error (ag, stream, "too_many_commands", "at most %d commands may run at once", MAX_CMDS);
      return;
    }
  fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    {
      send_error (ag, stream, "internal", "cannot make a socket: %s", strerror (errno));
      return;
    }
  sin.sin_port = htons ((uint16_t) port);
  if (connect (fd, (struct sockaddr *) &sin, sizeof sin) < 0 && errno != EINPROGRESS)
    {
      refused (ag, stream, (int) port, errno);
      return;
    }
  dup_fd = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0)
    {
      send_error (ag, stream, "internal", "cannot duplicate a socket: %s", strerror (errno));
      return;
    }
  c->used = true;
  c->sock = true;
  c->connecting = true; /* checked at its first POLLOUT, even if done */
  c->stream = stream;
  c->port = (int) port;
  c->fd[0] = dup_fd;
  c->fd[1] = steal_fd (&fd);
  c->start_ms = now_ms ();
  ag->ncmds++;
}

void
connect_finish (struct agent *ag, struct cmd *c)
{
  int err = 0;
  socklen_t len = sizeof err;

  if (getsockopt (c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) < 0)
    err = errno;
  if (err == 0)
    {
      c->connecting = false;
      /* An end of input that came while connecting waited for this: with
         no bytes queued, nothing else would shut the write side.  */
      if (c->stdin_eof)
        cmd_write_stdin (ag, c);
      return;
    }
  /* ERROR must be the stream's last frame: no EXIT follows.  */
  refused (ag, c->stream, c->port, err);
  cmd_sock_end (c, 1);
  cmd_orphan (c);
}
