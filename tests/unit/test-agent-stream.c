/* test-agent-stream.c - the guest agent's terminals and connections
   (images/agent/requests.c, connect.c, commands.c, loop.c), run on the
   host from the agent's own sources: the test is the host end of the
   channel (a socketpair), sends frames and turns the agent's loop with
   serve_step.  Commands run here as root in /tmp.  Checked: a "pty"
   command sees its size and a terminal, gets typed input, follows a
   RESIZE, dies of a typed ^C (130), and ignores an empty STDIN; a bad
   "pty" is refused; CONNECT carries bytes both ways, shuts the guest
   side's writing at an empty STDIN (one that came while connecting too),
   ends with EXIT when the guest side closes, closes at a SIGNAL, is refused with connection_refused where
   nothing listens, and refuses a bad port.  */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "conn.h"
#include "loop.h"
#include "tap.h"

static struct agent ag;
static struct rt_frame_reader host_reader;
static int host = -1;

#define NSTREAMS 16
static struct
{
  char out[65536];
  size_t len;
  json_object *last; /* EXIT or ERROR payload */
  int last_type;
} st[NSTREAMS];

static void
send_frame_raw (uint8_t type, uint32_t stream, const void *p, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];
  rt_frame_encode_header (hdr, type, stream, (uint32_t) len);
  if (write (host, hdr, sizeof hdr) != (ssize_t) sizeof hdr || (len && write (host, p, len) != (ssize_t) len))
    abort ();
}

static void
send_str (uint8_t type, uint32_t stream, const char *s)
{
  send_frame_raw (type, stream, s, strlen (s));
}

/* Turns the agent and takes its frames for up to @ms, or until @until
   says done.  */
static void
run (int ms, bool (*until) (uint32_t), uint32_t arg)
{
  int64_t end = now_ms () + ms;

  while (now_ms () < end && !(until && until (arg)))
    {
      size_t avail;
      uint8_t *space;
      ssize_t n;
      struct rt_frame_header h;
      const uint8_t *p;

      serve_step (&ag, 10);
      space = rt_frame_reader_space (&host_reader, &avail);
      n = read (host, space, avail);
      if (n <= 0)
        continue;
      rt_frame_reader_filled (&host_reader, n);
      while (rt_frame_reader_next (&host_reader, &h, &p) == 1)
        {
          if (h.stream >= NSTREAMS)
            continue;
          if (h.type == RT_FRAME_STDOUT || h.type == RT_FRAME_STDERR)
            {
              uint8_t ack[4];
              size_t take = h.len < sizeof st[0].out - st[h.stream].len ? h.len : 0;
              memcpy (st[h.stream].out + st[h.stream].len, p, take);
              st[h.stream].len += take;
              rt_put_u32 (ack, h.len);
              send_frame_raw (RT_FRAME_WINDOW, h.stream, ack, 4);
            }
          else if (h.type == RT_FRAME_EXIT || h.type == RT_FRAME_ERROR)
            {
              st[h.stream].last = json_tokener_parse (h.len ? (const char *) p : "{}");
              st[h.stream].last_type = h.type;
            }
        }
    }
}

static bool
has_output (uint32_t s)
{
  return st[s].last != NULL;
}

static const char *want_text;

static bool
output_has (uint32_t s)
{
  st[s].out[st[s].len < sizeof st[s].out ? st[s].len : sizeof st[s].out - 1] = '\0';
  return strstr (st[s].out, want_text) != NULL || st[s].last;
}

static bool
wait_text (uint32_t s, const char *text)
{
  want_text = text;
  run (5000, output_has, s);
  return strstr (st[s].out, text) != NULL;
}

static int
exit_code (uint32_t s)
{
  json_object *v;
  run (5000, has_output, s);
  if (st[s].last_type != RT_FRAME_EXIT || !json_object_object_get_ex (st[s].last, "exitCode", &v))
    return -1;
  return json_object_get_int (v);
}

static const char *
error_code (uint32_t s)
{
  json_object *v;
  run (5000, has_output, s);
  if (st[s].last_type != RT_FRAME_ERROR || !json_object_object_get_ex (st[s].last, "code", &v))
    return "";
  return json_object_get_string (v);
}

#define PTY_EXEC(cmd, stdin_)                                                                                          \
  "{\"argv\":[\"/bin/sh\",\"-c\",\"" cmd "\"],\"cwd\":\"/tmp\",\"user\":\"root\",\"stdin\":" stdin_                       \
  ",\"env\":[\"TERM=dumb\"],\"pty\":{\"cols\":77,\"rows\":11}}"

static void
test_pty (void)
{
  send_str (RT_FRAME_EXEC, 1, PTY_EXEC ("stty size; tty; read x; echo got:$x; stty size; exit 3", "true"));
  ok (wait_text (1, "11 77"), "a pty command sees the size asked for");
  ok (wait_text (1, "/dev/pts/"), "its stdin is a terminal");
  send_frame_raw (RT_FRAME_STDIN, 1, NULL, 0); /* ignored: a pty has no EOF */
  send_str (RT_FRAME_RESIZE, 1, "{\"cols\":120,\"rows\":40}");
  send_str (RT_FRAME_STDIN, 1, "hello\r");
  ok (wait_text (1, "got:hello"), "typed input reaches it (and an empty STDIN did not end it)");
  ok (wait_text (1, "40 120"), "a RESIZE changes its size");
  ok (exit_code (1) == 3, "its exit code comes back");

  send_str (RT_FRAME_EXEC, 2, PTY_EXEC ("echo ready; sleep 100", "true"));
  ok (wait_text (2, "ready"), "a second pty command started");
  send_str (RT_FRAME_STDIN, 2, "\x03");
  ok (exit_code (2) == 130, "a typed ^C ends it by SIGINT (130), not the agent");

  send_str (RT_FRAME_EXEC, 3, PTY_EXEC ("stty size; exit 0", "false"));
  ok (wait_text (3, "11 77") && exit_code (3) == 0, "a pty without stdin runs");

  send_str (RT_FRAME_EXEC, 4,
            "{\"argv\":[\"/bin/true\"],\"cwd\":\"/tmp\",\"user\":\"root\",\"pty\":{\"cols\":0,\"rows\":11}}");
  ok (strcmp (error_code (4), "invalid_request") == 0, "a pty of 0 columns is refused");
  send_str (RT_FRAME_EXEC, 5,
            "{\"argv\":[\"/bin/true\"],\"cwd\":\"/tmp\",\"user\":\"root\",\"pty\":{\"cols\":80,\"rows\":1001}}");
  ok (strcmp (error_code (5), "invalid_request") == 0, "a pty of 1001 rows is refused");
  send_str (RT_FRAME_EXEC, 6, "{\"argv\":[\"/bin/true\"],\"cwd\":\"/tmp\",\"user\":\"root\",\"pty\":[80,24]}");
  ok (strcmp (error_code (6), "invalid_request") == 0, "a pty that is not an object is refused");
}

static int
listener (int *port)
{
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof sin;
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0 || bind (fd, (struct sockaddr *) &sin, sizeof sin) < 0 || listen (fd, 4) < 0
      || getsockname (fd, (struct sockaddr *) &sin, &len) < 0)
    abort ();
  *port = ntohs (sin.sin_port);
  return fd;
}

static int
accept_turning (int lfd)
{
  int64_t end = now_ms () + 5000;
  fcntl (lfd, F_SETFL, O_NONBLOCK);
  while (now_ms () < end)
    {
      int fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0)
        return fd;
      run (10, NULL, 0);
    }
  return -1;
}

/* Reads what the guest side got, turning the agent meanwhile.  Return:
   the bytes (0 at EOF), -1 when nothing came.  */
static ssize_t
read_turning (int fd, char *buf, size_t size)
{
  int64_t end = now_ms () + 5000;
  fcntl (fd, F_SETFL, O_NONBLOCK);
  while (now_ms () < end)
    {
      ssize_t n = read (fd, buf, size);
      if (n >= 0)
        return n;
      run (10, NULL, 0);
    }
  return -1;
}

static void
test_connect (void)
{
  char port_json[64], buf[64];
  int port, lfd = listener (&port), peer;
  ssize_t n;

  snprintf (port_json, sizeof port_json, "{\"port\":%d}", port);
  send_str (RT_FRAME_CONNECT, 7, port_json);
  peer = accept_turning (lfd);
  ok (peer >= 0, "CONNECT reaches a listener on the guest's loopback");
  send_str (RT_FRAME_STDIN, 7, "ping");
  n = read_turning (peer, buf, sizeof buf);
  ok (n == 4 && memcmp (buf, "ping", 4) == 0, "STDIN bytes arrive at it");
  ok (write (peer, "pong", 4) == 4 && wait_text (7, "pong"), "its bytes come back as STDOUT");
  send_frame_raw (RT_FRAME_STDIN, 7, NULL, 0);
  ok (read_turning (peer, buf, sizeof buf) == 0, "an empty STDIN shuts its write side (EOF there)");
  ok (write (peer, "late", 4) == 4 && wait_text (7, "pongl"), "the other direction still flows after");
  close (peer);
  ok (exit_code (7) == 0 && strcmp (st[7].out, "ponglate") == 0, "its close ends the stream with EXIT 0, every byte first");

  send_str (RT_FRAME_CONNECT, 8, port_json);
  peer = accept_turning (lfd);
  send_str (RT_FRAME_SIGNAL, 8, "{\"signal\":15}");
  ok (peer >= 0 && read_turning (peer, buf, sizeof buf) == 0, "a SIGNAL closes the connection");
  ok (exit_code (8) == 0, "and the stream ends with EXIT");
  close (peer);

  /* Right behind the CONNECT, the end of input comes while connecting.  */
  send_str (RT_FRAME_CONNECT, 14, port_json);
  send_frame_raw (RT_FRAME_STDIN, 14, NULL, 0);
  peer = accept_turning (lfd);
  ok (peer >= 0 && read_turning (peer, buf, sizeof buf) == 0,
      "an empty STDIN right behind the CONNECT shuts its write side once connected");
  close (peer);
  ok (exit_code (14) == 0, "… and its close ends the stream with EXIT");
  close (lfd);

  /* The port is free again: nothing listens there.  */
  send_str (RT_FRAME_CONNECT, 9, port_json);
  ok (strcmp (error_code (9), "connection_refused") == 0, "a port nobody listens on is connection_refused");
  send_str (RT_FRAME_CONNECT, 13, port_json);
  send_str (RT_FRAME_STDIN, 13, "GET / HTTP/1.0\r\n\r\n");
  ok (strcmp (error_code (13), "connection_refused") == 0, "… also when its first bytes came before the refusal");
  send_str (RT_FRAME_CONNECT, 10, "{\"port\":0}");
  ok (strcmp (error_code (10), "invalid_request") == 0, "port 0 is refused");
  send_str (RT_FRAME_CONNECT, 11, "{\"port\":65536}");
  ok (strcmp (error_code (11), "invalid_request") == 0, "port 65536 is refused");
  send_str (RT_FRAME_CONNECT, 12, "[1]");
  ok (strcmp (error_code (12), "invalid_request") == 0, "a payload that is not an object is refused");
  send_str (RT_FRAME_CONNECT, 0, port_json);
  ok (strcmp (error_code (0), "invalid_request") == 0, "CONNECT on stream 0 is refused");
  run (100, NULL, 0);
  ok (ag.ncmds == 0, "nothing is left running (%zu)", ag.ncmds);
}

int
main (void)
{
  int sv[2];
  sigset_t mask;

  if (getuid () != 0)
    {
      printf ("1..0 # SKIP commands run as root\n");
      return 0;
    }
  signal (SIGPIPE, SIG_IGN);
  sigemptyset (&mask);
  sigaddset (&mask, SIGCHLD);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    abort ();
  fcntl (sv[0], F_SETFL, O_NONBLOCK);
  fcntl (sv[1], F_SETFL, O_NONBLOCK);
  for (size_t i = 0; i < MAX_CMDS; i++)
    ag.cmds[i].fd[0] = ag.cmds[i].fd[1] = ag.cmds[i].fd[2] = -1;
  ag.chan = sv[0];
  host = sv[1];
  ag.devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  ag.sigfd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  ag.state = CONN_UP;
  rt_frame_reader_init (&ag.reader);
  rt_frame_reader_init (&host_reader);

  test_pty ();
  test_connect ();
  return tap_done ();
}
