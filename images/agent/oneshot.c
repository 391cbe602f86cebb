/* oneshot.c - the benchmark modes: one command on the console (rt.cmd),
   the bare port's throughput (rt.rawbench).  */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "oneshot.h"
#include "spawn.h"
#include "users.h"

static int
b64_value (int c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

ssize_t
b64_decode (const char *in, uint8_t *out)
{
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;

  for (; *in && *in != '='; in++)
    {
      int v = b64_value ((unsigned char) *in);
      if (v < 0)
        return -1;
      acc = (acc << 6) | v;
      bits += 6;
      if (bits >= 8)
        {
          bits -= 8;
          out[n++] = (acc >> bits) & 0xff;
        }
    }
  return n;
}

/* Runs the rt.cmd command line (argv joined by NUL bytes) as the default
   user with its output on the console, then powers off.  For benchmarks.  */
void __attribute__ ((noreturn))
run_once (const char *b64, const char *proxy_url)
{
  cleanup_free uint8_t *buf = malloc (strlen (b64) + 1);
  cleanup_free char **argv = NULL;
  cleanup_strvec struct strv env = { 0 };
  cleanup_close int devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  struct spawn sp;
  struct user u;
  ssize_t len;
  size_t argc = 0;
  pid_t pid;
  int status = 0;

  len = buf ? b64_decode (b64, buf) : -1;
  if (len <= 0)
    {
      agent_log ("rt.cmd: invalid base64");
      power_off ();
    }
  buf[len] = '\0';
  argv = calloc (len + 2, sizeof *argv);
  if (argv == NULL)
    power_off ();
  for (ssize_t i = 0; i < len; i += strlen ((char *) buf + i) + 1)
    argv[argc++] = (char *) buf + i;
  if (resolve_user (DEFAULT_USER, &u) < 0 || env_base (&env, &u, proxy_url) < 0)
    power_off ();
  sp = (struct spawn){ argv, env.v, WORKSPACE, &u, { devnull, 1, 2 } };
  pid = spawn (&sp);
  if (pid < 0)
    {
      agent_log ("rt.cmd: cannot fork: %s", strerror (errno));
      power_off ();
    }
  for (;;)
    {
      pid_t r = waitpid (-1, &status, 0);
      if (r == pid || (r < 0 && errno != EINTR))
        break;
    }
  kill (-pid, SIGKILL);
  if (WIFSIGNALED (status))
    agent_log ("rt.cmd: killed by signal %d", WTERMSIG (status));
  else
    agent_log ("rt.cmd: exit code %d", WEXITSTATUS (status));
  power_off ();
}

/* Benchmark mode (rt.rawbench=BYTES): the bare virtio-serial port, no
   framing, as the baseline for the protocol's throughput.  Once the host
   connects: BYTES to the host, BYTES from the host, one 'D', power off.  */
void __attribute__ ((noreturn))
rawbench (const char *arg)
{
  static char buf[65536];
  long long total = atoll (arg), done;
  int fd = open_channel ();

  if (fd < 0 || total <= 0)
    power_off ();
  fcntl (fd, F_SETFL, 0);
  for (;;)
    {
      struct pollfd p = { .fd = fd, .events = POLLOUT };
      if (poll (&p, 1, -1) > 0 && !(p.revents & POLLHUP))
        break;
      sleep_ms (RECONNECT_POLL_MS);
    }
  memset (buf, 'x', sizeof buf);
  for (done = 0; done < total;)
    {
      ssize_t n = write (fd, buf, total - done < (long long) sizeof buf ? (size_t) (total - done) : sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        power_off ();
      done += n;
    }
  for (done = 0; done < total;)
    {
      ssize_t n = read (fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          sleep_ms (RECONNECT_POLL_MS);
          continue;
        }
      done += n;
    }
  rt_write_all (fd, "D", 1);
  sleep_ms (200);
  power_off ();
}
