/* stdin.c - a guest command's stdin streamed from the host (stdin.h).  */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "monitor/client.h"
#include "sandbox/stdin.h"

int
rt_stdin_fifo (rt_sandbox *sb, char **fifo, rt_error **err)
{
  unsigned char rnd[6];

  if (getrandom (rnd, sizeof (rnd), 0) != sizeof (rnd))
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  *fifo = rt_strdup_printf ("%s/upload-%02x%02x%02x%02x%02x%02x", sb->dir, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                            rnd[5]);
  if (*fifo == NULL)
    return rt_error_oom (err);
  if (mkfifo (*fifo, 0600) < 0)
    return rt_error_set (err, errno, "internal", "cannot make '%s': %s", *fifo, strerror (errno));
  return 0;
}

int
rt_exec_stdin_path (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, const char *fifo,
                    rt_exec_result *res, rt_error **err)
{
  cleanup_json json_object *req = rt_command_request (argv, opts, err);

  if (req == NULL)
    return -EINVAL;
  json_object_object_add (req, "stdinPath", json_object_new_string (fifo));
  return rt_api_stream (sb->sock, sb->id, "exec", req, opts, res, NULL, err);
}

/* Child: copy @fd into the FIFO, which blocks until the monitor opens it.
   Only async-signal-safe calls: the parent may have threads.  */
static void __attribute__ ((noreturn))
feed_child (const char *fifo, int fd)
{
  char buf[65536];
  int out;

  prctl (PR_SET_PDEATHSIG, SIGKILL);
  signal (SIGPIPE, SIG_IGN);
  out = open (fifo, O_WRONLY | O_CLOEXEC);
  if (out < 0)
    _exit (1);
  for (;;)
    {
      ssize_t n = read (fd, buf, sizeof (buf)), off = 0;
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        _exit (n < 0);
      while (off < n)
        {
          ssize_t w = write (out, buf + off, n - off);
          if (w < 0 && errno == EINTR)
            continue;
          if (w <= 0)
            _exit (1);
          off += w;
        }
    }
}

int
rt_exec_stdin_fd (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, int fd, rt_exec_result *res,
                  rt_error **err)
{
  cleanup_free char *fifo = NULL;
  int ret, status;
  pid_t pid;

  if (rt_stdin_fifo (sb, &fifo, err) < 0)
    return -EIO;
  pid = fork ();
  if (pid == 0)
    feed_child (fifo, fd);
  if (pid < 0)
    {
      unlink (fifo);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  ret = rt_exec_stdin_path (sb, argv, opts, fifo, res, err);
  /* If the monitor never opened the FIFO, the child still waits for it.  */
  if (waitpid (pid, &status, WNOHANG) == 0)
    kill (pid, SIGKILL);
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  unlink (fifo);
  return ret;
}
