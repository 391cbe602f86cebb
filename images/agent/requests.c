/* requests.c - what the host asks: EXEC, STDIN, SIGNAL, WINDOW, RESIZE,
   HELLO, SHUTDOWN; CONNECT goes to connect.c, FREEZE, QUIESCE and RESTORE
   to restore.c.  */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "channel.h"
#include "commands.h"
#include "connect.h"
#include "requests.h"
#include "restore.h"
#include "root.h"
#include "spawn.h"
#include "users.h"

struct exec_req
{
  json_object *json;
  const char **argv;
  struct strv env;
  const char *cwd;
  struct user user;
  int64_t timeout_ms;
  bool with_stdin;
  unsigned pty_cols, pty_rows; /* 0: no pty */
};

/* {"cols":N,"rows":N} with both in 1..RT_PTY_MAX_SIDE.  Return: 0, or -1.  */
static int
parse_size (json_object *o, unsigned *cols, unsigned *rows)
{
  json_object *c = o ? get_member (o, "cols") : NULL, *r = o ? get_member (o, "rows") : NULL;
  int64_t cv = json_object_is_type (c, json_type_int) ? json_object_get_int64 (c) : 0;
  int64_t rv = json_object_is_type (r, json_type_int) ? json_object_get_int64 (r) : 0;

  if (!json_object_is_type (o, json_type_object) || !rt_pty_size_ok (cv, rv))
    return -1;
  *cols = (unsigned) cv;
  *rows = (unsigned) rv;
  return 0;
}

/* "argv": a non-empty array of strings, the first not empty.  Return: 0,
   or -1 after answering ERROR.  */
static int
exec_parse_argv (struct agent *ag, uint32_t stream, struct exec_req *r)
{
  json_object *v = get_member (r->json, "argv");
  size_t n;

  if (v == NULL || !json_object_is_type (v, json_type_array) || json_object_array_length (v) == 0)
    goto bad_argv;
  n = json_object_array_length (v);
  r->argv = calloc (n + 1, sizeof *r->argv);
  if (r->argv == NULL)
    {
      send_error (ag, stream, "internal", "out of memory");
      return -1;
    }
  for (size_t i = 0; i < n; i++)
    {
      json_object *a = json_object_array_get_idx (v, i);
      if (!is_plain_string (a))
        goto bad_argv;
      r->argv[i] = json_object_get_string (a);
    }
  if (r->argv[0][0] == '\0')
    goto bad_argv;
  return 0;

bad_argv:
  send_error (ag, stream, "invalid_request", "'argv' must be a non-empty array of strings");
  return -1;
}

/* "cwd", "user", "timeoutMs", "stdin" and "pty", in that order.  */
static int
exec_parse_options (struct agent *ag, uint32_t stream, struct exec_req *r)
{
  const char *user = DEFAULT_USER;
  json_object *v;

  r->cwd = WORKSPACE;
  v = get_member (r->json, "cwd");
  if (v)
    {
      if (!is_plain_string (v) || json_object_get_string_len (v) == 0)
        {
          send_error (ag, stream, "invalid_request", "'cwd' must be a non-empty string");
          return -1;
        }
      r->cwd = json_object_get_string (v);
    }

  v = get_member (r->json, "user");
  if (v)
    {
      if (!is_plain_string (v))
        {
          send_error (ag, stream, "invalid_request", "'user' must be a string");
          return -1;
        }
      user = json_object_get_string (v);
    }
  if (resolve_user (user, &r->user) < 0)
    {
      send_error (ag, stream, "invalid_request", "unknown user '%.64s'", user);
      return -1;
    }

  v = get_member (r->json, "timeoutMs");
  if (v)
    {
      if (!json_object_is_type (v, json_type_int) || json_object_get_int64 (v) < 0)
        {
          send_error (ag, stream, "invalid_request", "'timeoutMs' must be a non-negative integer");
          return -1;
        }
      r->timeout_ms = json_object_get_int64 (v);
      if (r->timeout_ms > INT64_MAX / 4)
        r->timeout_ms = INT64_MAX / 4;
    }

  v = get_member (r->json, "stdin");
  if (v)
    {
      if (!json_object_is_type (v, json_type_boolean))
        {
          send_error (ag, stream, "invalid_request", "'stdin' must be a boolean");
          return -1;
        }
      r->with_stdin = json_object_get_boolean (v);
    }

  v = get_member (r->json, "pty");
  if (v && parse_size (v, &r->pty_cols, &r->pty_rows) < 0)
    {
      send_error (ag, stream, "invalid_request", "'pty' must be {\"cols\":N,\"rows\":N} with N in 1..%u",
                  RT_PTY_MAX_SIDE);
      return -1;
    }
  return 0;
}

/* The user's base environment, then "env" over it.  */
static int
exec_parse_env (struct agent *ag, uint32_t stream, struct exec_req *r)
{
  json_object *v;
  size_t n;

  if (env_base (&r->env, &r->user, ag->proxy_url) < 0)
    goto oom;
  v = get_member (r->json, "env");
  if (v && !json_object_is_type (v, json_type_array))
    {
      send_error (ag, stream, "invalid_env", "'env' must be an array of \"NAME=value\" strings");
      return -1;
    }
  n = v ? json_object_array_length (v) : 0;
  for (size_t i = 0; i < n; i++)
    {
      json_object *e = json_object_array_get_idx (v, i);
      const char *s, *eq;

      if (!is_plain_string (e))
        {
          send_error (ag, stream, "invalid_env", "'env' must be an array of \"NAME=value\" strings");
          return -1;
        }
      s = json_object_get_string (e);
      eq = strchr (s, '=');
      if (eq == NULL || !rt_env_name_valid (s, eq - s))
        {
          send_error (ag, stream, "invalid_env", "invalid environment entry '%.100s'", s);
          return -1;
        }
      if (env_set (&r->env, s, json_object_get_string_len (e)) < 0)
        goto oom;
    }
  return 0;

oom:
  send_error (ag, stream, "internal", "out of memory");
  return -1;
}

/* Checks an EXEC request.  Return: 0, or -1 after answering ERROR.  */
static int
exec_parse (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len, struct exec_req *r)
{
  r->json = parse_object (p, len);
  if (r->json == NULL)
    {
      send_error (ag, stream, "invalid_request", "EXEC payload is not a JSON object");
      return -1;
    }
  if (exec_parse_argv (ag, stream, r) < 0 || exec_parse_options (ag, stream, r) < 0
      || exec_parse_env (ag, stream, r) < 0)
    return -1;
  return 0;
}

/* The agent's ends of a command's pipes: @mine gets stdin's write end
   (or -1) and the read ends of stdout and stderr, @child the other ends.
   Return: 0, or -1 with errno set.  */
static int
exec_pipes (struct agent *ag, bool with_stdin, int mine[3], int child[3])
{
  int in[2] = { -1, -1 }, out[2], err[2];

  if (with_stdin && pipe2 (in, O_CLOEXEC) < 0)
    return -1;
  mine[0] = in[1];
  child[0] = with_stdin ? in[0] : fcntl (ag->devnull, F_DUPFD_CLOEXEC, 3);
  if (child[0] < 0 || pipe2 (out, O_CLOEXEC) < 0)
    return -1;
  mine[1] = out[0];
  child[1] = out[1];
  if (pipe2 (err, O_CLOEXEC) < 0)
    return -1;
  mine[2] = err[0];
  child[2] = err[1];
  fcntl (out[0], F_SETPIPE_SZ, PIPE_SIZE);
  fcntl (err[0], F_SETPIPE_SZ, PIPE_SIZE);
  if (in[1] >= 0)
    fcntl (in[1], F_SETPIPE_SZ, PIPE_SIZE);
  /* Only the agent's ends are non-blocking; the child's stay blocking.  */
  if ((in[1] >= 0 && fcntl (in[1], F_SETFL, O_NONBLOCK) < 0) || fcntl (out[0], F_SETFL, O_NONBLOCK) < 0
      || fcntl (err[0], F_SETFL, O_NONBLOCK) < 0)
    return -1;
  return 0;
}

/* A pty instead: the child's three are its slave, the agent reads and
   (with stdin) writes its master.  Return: 0, or -1 with errno set.  */
static int
exec_pty (const struct exec_req *r, int mine[3], int child[3])
{
  int master, slave;

  if (pty_open (r->pty_cols, r->pty_rows, &r->user, &master, &slave) < 0)
    return -1;
  mine[1] = master;
  child[0] = slave;
  if ((child[1] = fcntl (slave, F_DUPFD_CLOEXEC, 3)) < 0 || (child[2] = fcntl (slave, F_DUPFD_CLOEXEC, 3)) < 0)
    return -1;
  if (r->with_stdin && (mine[0] = fcntl (master, F_DUPFD_CLOEXEC, 3)) < 0)
    return -1;
  return 0;
}

/* Checks what the request alone cannot: the stream, the slot, the cwd.
   Return: the free slot, or NULL after answering ERROR.  */
static struct cmd *
exec_slot (struct agent *ag, uint32_t stream, const struct exec_req *r)
{
  struct stat st;
  int cwd_err;

  if (ag->ncmds >= MAX_CMDS)
    {
      send_error (ag, stream, "too_many_commands", "at most %d commands may run at once", MAX_CMDS);
      return NULL;
    }
  /* Checked here, as root, so that the common mistake gets a clear answer;
     the child still reports what only the user's permissions refuse.  */
  cwd_err = stat (r->cwd, &st) < 0 ? errno : S_ISDIR (st.st_mode) ? 0 : ENOTDIR;
  if (cwd_err)
    {
      send_error (ag, stream, "file_not_found", "cannot enter '%.200s': %s", r->cwd, strerror (cwd_err));
      return NULL;
    }
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (!ag->cmds[i].used)
      return &ag->cmds[i];
  send_error (ag, stream, "too_many_commands", "at most %d commands may run at once", MAX_CMDS);
  return NULL;
}

static void
handle_exec (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len)
{
  struct exec_req r = { 0 };
  int mine[3] = { -1, -1, -1 }, child[3] = { -1, -1, -1 };
  struct cmd *c;
  struct spawn sp;
  pid_t pid;

  if (stream == 0)
    {
      send_error (ag, 0, "invalid_request", "EXEC needs a stream other than 0");
      return;
    }
  if (cmd_find (ag, stream))
    {
      send_error (ag, stream, "stream_in_use", "stream %u already runs a command", stream);
      return;
    }
  if (exec_parse (ag, stream, p, len, &r) < 0 || (c = exec_slot (ag, stream, &r)) == NULL)
    goto out;
  if ((r.pty_cols ? exec_pty (&r, mine, child) : exec_pipes (ag, r.with_stdin, mine, child)) < 0)
    {
      send_error (ag, stream, "internal", "cannot set up the command's %s: %s", r.pty_cols ? "terminal" : "pipes",
                  strerror (errno));
      goto out;
    }
  sp = (struct spawn){ (char **) r.argv, r.env.v, r.cwd, &r.user, { child[0], child[1], child[2] }, r.pty_cols > 0 };
  pid = spawn (&sp);
  if (pid < 0)
    {
      send_error (ag, stream, "internal", "cannot fork: %s", strerror (errno));
      goto out;
    }
  c->used = true;
  c->pty = r.pty_cols > 0;
  c->stream = stream;
  c->pid = pid;
  for (int i = 0; i < 3; i++)
    c->fd[i] = steal_fd (&mine[i]);
  c->start_ms = now_ms ();
  c->deadline_ms = r.timeout_ms > 0 ? c->start_ms + r.timeout_ms : 0;
  ag->ncmds++;
out:
  for (int i = 0; i < 3; i++)
    {
      close_fd (&mine[i]);
      close_fd (&child[i]);
    }
  free (r.argv);
  strv_clear (&r.env);
  json_object_put (r.json);
}

static void
handle_stdin (struct agent *ag, struct cmd *c, const uint8_t *p, size_t len)
{
  if (c->fd[0] < 0 || c->stdin_eof)
    return;
  /* A terminal has no end of input; 0x04 is the user's to send.  */
  if (len == 0 && c->pty)
    return;
  if (len == 0)
    {
      c->stdin_eof = true;
      cmd_write_stdin (ag, c);
      return;
    }
  if (c->inq_len + len > STDIN_MAX)
    {
      cmd_fail (ag, c, "stdin_overflow", "more than %u bytes of stdin are waiting for the command",
                STDIN_MAX);
      return;
    }
  if (c->inq_off > 0 && c->inq_off + c->inq_len + len > c->inq_cap)
    {
      memmove (c->inq, c->inq + c->inq_off, c->inq_len);
      c->inq_off = 0;
    }
  if (c->inq_len + len > c->inq_cap)
    {
      size_t cap = c->inq_cap ? c->inq_cap : 64 * 1024;
      uint8_t *q;

      while (cap < c->inq_len + len)
        cap *= 2;
      q = realloc (c->inq, cap);
      if (q == NULL)
        {
          cmd_fail (ag, c, "internal", "out of memory for stdin");
          return;
        }
      c->inq = q;
      c->inq_cap = cap;
    }
  memcpy (c->inq + c->inq_off + c->inq_len, p, len);
  c->inq_len += len;
  cmd_write_stdin (ag, c);
}

static void
handle_signal (struct agent *ag, struct cmd *c, const uint8_t *p, size_t len)
{
  cleanup_json json_object *o = parse_object (p, len);
  json_object *v = o ? get_member (o, "signal") : NULL;
  int64_t sig = json_object_is_type (v, json_type_int) ? json_object_get_int64 (v) : 0;

  if (sig < 1 || sig > 64)
    {
      cmd_fail (ag, c, "invalid_request", "SIGNAL needs {\"signal\":N} with N in 1..64");
      return;
    }
  cmd_kill (c, (int) sig);
}

static void
handle_resize (struct agent *ag, struct cmd *c, const uint8_t *p, size_t len)
{
  cleanup_json json_object *o = parse_object (p, len);
  unsigned cols, rows;

  if (parse_size (o, &cols, &rows) < 0)
    {
      cmd_fail (ag, c, "invalid_request", "RESIZE needs {\"cols\":N,\"rows\":N} with N in 1..%u",
                RT_PTY_MAX_SIDE);
      return;
    }
  /* The kernel sends SIGWINCH to the terminal's foreground group.  */
  if (c->pty && c->fd[1] >= 0)
    pty_resize (c->fd[1], cols, rows);
}

/* A whole file of at most 4 MiB, NUL-terminated; NULL when unreadable.  */
static char *
read_small_file (const char *path)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  char *buf = NULL;

  if (fd < 0 || rt_read_all (fd, 4 * 1024 * 1024, &buf, NULL) < 0)
    return NULL;
  return buf;
}

/* The host's egress CA for a sandbox with secrets: into the trust store
   the tools read, once.  */
static void
install_trust (const char *pem)
{
  static const char begin[] = "-----BEGIN CERTIFICATE-----";
  cleanup_free char *bundle = NULL;
  size_t len = strlen (pem);

  if (strncmp (pem, begin, sizeof begin - 1) != 0 || len > 16384)
    {
      agent_log ("ignoring a trust certificate that is not PEM");
      return;
    }
  mkdir_quiet ("/usr/local", 0755);
  mkdir_quiet ("/usr/local/share", 0755);
  mkdir_quiet ("/usr/local/share/ca-certificates", 0755);
  if (write_file (RT_GUEST_CA_FILE, pem) < 0)
    agent_log ("cannot write " RT_GUEST_CA_FILE ": %s", strerror (errno));
  bundle = read_small_file (RT_GUEST_CA_BUNDLE);
  if (bundle && strstr (bundle, pem))
    return;
  mkdir_quiet ("/etc/ssl", 0755);
  mkdir_quiet ("/etc/ssl/certs", 0755);
  {
    /* Followed if a link: some images link the bundle elsewhere.  */
    cleanup_close int fd = open (RT_GUEST_CA_BUNDLE, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      {
        agent_log ("cannot add the egress CA to " RT_GUEST_CA_BUNDLE ": %s", strerror (errno));
        return;
      }
    if (bundle && *bundle && bundle[strlen (bundle) - 1] != '\n')
      rt_write_all (fd, "\n", 1);
    rt_write_all (fd, pem, len);
  }
}

static void
handle_hello (struct agent *ag, const uint8_t *p, size_t len)
{
  cleanup_json json_object *o = parse_object (p, len);
  json_object *v = o ? get_member (o, "version") : NULL;
  json_object *trust = o ? get_member (o, "trust") : NULL;

  if (json_object_is_type (trust, json_type_string))
    install_trust (json_object_get_string (trust));
  if (!json_object_is_type (v, json_type_int))
    send_error (ag, 0, "invalid_request", "HELLO needs {\"version\":N}");
  else if (json_object_get_int64 (v) != RT_PROTO_VERSION)
    send_error (ag, 0, "unsupported_version", "this agent speaks protocol version %d, not %" PRId64,
                RT_PROTO_VERSION, (int64_t) json_object_get_int64 (v));
}

static void __attribute__ ((noreturn))
shutdown_now (void)
{
  kill (-1, SIGKILL); /* everything but init */
  power_off ();
}

void
handle_frame (struct agent *ag, const struct rt_frame_header *h, const uint8_t *p)
{
  struct cmd *c = NULL;

  switch (h->type)
    {
    case RT_FRAME_HELLO:
    case RT_FRAME_SHUTDOWN:
    case RT_FRAME_FREEZE:
    case RT_FRAME_RESTORE:
    case RT_FRAME_QUIESCE:
      if (h->stream != 0)
        {
          send_error (ag, 0, "invalid_request", "frame type %u belongs on stream 0, not %u", h->type,
                      h->stream);
          return;
        }
      if (h->type == RT_FRAME_SHUTDOWN)
        shutdown_now ();
      if (h->type == RT_FRAME_FREEZE)
        handle_freeze (ag);
      else if (h->type == RT_FRAME_RESTORE)
        handle_restore (ag, p, h->len);
      else if (h->type == RT_FRAME_QUIESCE)
        handle_quiesce (ag);
      else
        handle_hello (ag, p, h->len);
      return;

    case RT_FRAME_EXEC:
      handle_exec (ag, h->stream, p, h->len);
      return;

    case RT_FRAME_CONNECT:
      handle_connect (ag, h->stream, p, h->len);
      return;

    case RT_FRAME_STDIN:
    case RT_FRAME_SIGNAL:
    case RT_FRAME_WINDOW:
    case RT_FRAME_RESIZE:
      /* Frames for streams that are gone (or never were) are ignored: the
         host may not have seen the EXIT yet.  */
      c = cmd_find (ag, h->stream);
      if (c == NULL)
        return;
      if (h->type == RT_FRAME_STDIN)
        handle_stdin (ag, c, p, h->len);
      else if (h->type == RT_FRAME_SIGNAL)
        handle_signal (ag, c, p, h->len);
      else if (h->type == RT_FRAME_RESIZE)
        handle_resize (ag, c, p, h->len);
      else if (h->len != 4)
        cmd_fail (ag, c, "invalid_request", "WINDOW payload must be 4 bytes");
      else
        {
          uint32_t acked = rt_get_u32 (p);
          c->unacked -= acked < c->unacked ? acked : c->unacked;
        }
      return;

    default:
      send_error (ag, 0, "invalid_request", "unexpected frame type %u from the host (stream %u)", h->type,
                  h->stream);
      return;
    }
}
