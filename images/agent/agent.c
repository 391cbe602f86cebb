/* agent.c - the guest agent: PID 1 of a sandbox VM.
 *
 * Boots the guest (pseudo filesystems, kernel modules, root disk,
 * switch_root), then serves the host over the virtio-serial port
 * RT_CHANNEL_NAME with the framed protocol of proto.h: runs commands, streams
 * their output under per-stream flow control, reports their exit.
 *
 * It is init: it must never exit (the kernel would panic), it reaps every
 * orphan, and nothing the host or the user's code does may crash it.  It is
 * single-threaded around one poll() loop; all its own fds are O_CLOEXEC.
 */
#ifndef _GNU_SOURCE
# define _GNU_SOURCE
#endif

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"
#include "common/proto.h"
#include "common/util.h"

#define AGENT_NAME "runtime-agent"
#define DEFAULT_PATH "/workspace/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_USER "runtime"
#define DEFAULT_UID 1000
#define WORKSPACE "/workspace"

#define MAX_CMDS 256
#define OUT_CHUNK (256u * 1024u)           /* largest STDOUT/STDERR payload */
/* Under TCG every syscall is dear: big pipes and frames mean few of them.  */
#define PIPE_SIZE (1024 * 1024)
#define STDIN_MAX (2u * 1024u * 1024u)     /* queued STDIN bytes per stream */
#define DRAIN_MAX (1024u * 1024u + OUT_CHUNK) /* read after exit, per pipe */
/* The outgoing queue.  Output is read from pipes only while less than
   OUTQ_DATA_MAX is queued, so the rest always has room for control frames
   (each under CTRL_MAX); input is taken only while CTRL_MAX is free.  */
#define OUTQ_CAP (2u * 1024u * 1024u)
#define OUTQ_DATA_MAX (1024u * 1024u)
#define CTRL_MAX 4096u
#define MAX_GROUPS 64

#define CMDLINE_MAX 8192
#define WAIT_DEVICE_MS 10000
#define DEVICE_POLL_MS 3
#define RECONNECT_POLL_MS 5
#define RESYNC_QUIET_MS 100

/* The outgoing frames: bytes [head, head + len) of buf.  */
struct outq
{
  size_t head, len;
  uint8_t buf[OUTQ_CAP];
};

struct cmd
{
  bool used;
  bool orphan;    /* its connection is gone: output dropped, no EXIT */
  bool exited;    /* main process reaped; draining what is left in the pipes */
  bool timed_out;
  bool stdin_eof; /* empty STDIN seen: close once the queue is written */
  uint32_t stream;
  pid_t pid;      /* also its process group */
  int status;
  int fd[3];      /* stdin (write end), stdout, stderr (read ends); -1 closed */
  size_t drain_left[3];
  uint64_t unacked; /* STDOUT+STDERR payload bytes not yet acknowledged */
  int64_t start_ms, end_ms, deadline_ms; /* deadline 0: none */
  uint8_t *inq;   /* STDIN bytes the child has not read yet */
  size_t inq_off, inq_len, inq_cap;
};

enum conn_state
{
  CONN_DOWN,     /* host not connected */
  CONN_UP,
  CONN_POISONED, /* bad framing: input dropped until the host disconnects
                    or stays quiet for RESYNC_QUIET_MS */
};

struct agent
{
  int chan;
  int sigfd;
  int devnull;
  enum conn_state state;
  bool input_pending; /* the reader may hold frames not handled yet */
  int64_t last_input_ms; /* when poisoned: last input dropped */
  size_t ncmds;
  struct cmd cmds[MAX_CMDS];
  struct pollfd pfd[2 + 3 * MAX_CMDS]; /* the loop's poll set */
  struct
  {
    struct cmd *c; /* NULL: the signalfd or the channel */
    int i;         /* which of c->fd */
  } who[2 + 3 * MAX_CMDS];
  /* Big buffers: the agent lives in static storage, not on the stack.  */
  struct outq outq;
  struct rt_frame_reader reader;
  uint8_t scratch[OUT_CHUNK]; /* where an orphan's output is read to */
  char cmdline[CMDLINE_MAX];  /* the kernel's, read once at boot */
  /* The proxy URL every command sees once the network is up (rt.net); the
     host's egress proxy listens on the gateway.  */
  char proxy_url[64];
};


static void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

static int64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms (int ms)
{
  struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };

  while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
    ;
}

static void
write_all (int fd, const char *buf, size_t len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, buf, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return;
      buf += n;
      len -= n;
    }
}

/* Console messages: fd 2 is /dev/console once boot_early() ran.  */
static void RT_PRINTF (1, 2)
agent_log (const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  int n;

  n = snprintf (buf, sizeof buf, AGENT_NAME ": ");
  va_start (ap, fmt);
  vsnprintf (buf + n, sizeof buf - n - 1, fmt, ap);
  va_end (ap);
  n = strlen (buf);
  buf[n++] = '\n';
  write_all (2, buf, n);
}

static void __attribute__ ((noreturn))
power_off (void)
{
  sync ();
  reboot (RB_POWER_OFF);
  /* Still here: exiting would panic the kernel, so wait to be killed.  */
  agent_log ("power off failed: %s", strerror (errno));
  for (;;)
    pause ();
}

/* ---- boot -------------------------------------------------------------- */

static void
mkdir_quiet (const char *path, mode_t mode)
{
  if (mkdir (path, mode) < 0 && errno != EEXIST)
    agent_log ("cannot create '%s': %s", path, strerror (errno));
}

static int
mount_fs (const char *src, const char *target, const char *type, unsigned long flags, const char *data)
{
  mkdir_quiet (target, 0755);
  if (mount (src, target, type, flags, data) < 0)
    {
      agent_log ("cannot mount %s on %s: %s", type, target, strerror (errno));
      return -1;
    }
  return 0;
}

/* Mounts /proc, /sys, /dev and puts the console on fds 0-2: the kernel
   leaves them closed when the initramfs has no /dev/console.  */
static void
boot_early (void)
{
  int fd;

  mount_fs ("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_fs ("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_fs ("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");

  fd = open ("/dev/console", O_RDWR | O_NOCTTY);
  if (fd < 0)
    fd = open ("/dev/null", O_RDWR);
  if (fd >= 0)
    {
      for (int i = 0; i < 3; i++)
        if (fd != i)
          dup2 (fd, i);
      if (fd > 2)
        close (fd);
    }
}

static void
read_cmdline (struct agent *ag)
{
  cleanup_close int fd = open ("/proc/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n;

  if (fd < 0)
    return;
  n = read (fd, ag->cmdline, sizeof ag->cmdline - 1);
  ag->cmdline[n > 0 ? n : 0] = '\0';
}

/* Value of `key=` on the kernel command line, copied into buf; NULL when
   absent.  Values are unquoted words (base64, host names).  */
static const char *
cmdline_get (const struct agent *ag, const char *key, char *buf, size_t size)
{
  size_t klen = strlen (key);
  const char *p = ag->cmdline;

  while (*p)
    {
      size_t len;

      while (*p && isspace ((unsigned char) *p))
        p++;
      len = strcspn (p, " \t\n");
      if (len > klen && strncmp (p, key, klen) == 0 && p[klen] == '=')
        {
          size_t vlen = len - klen - 1;
          if (vlen >= size)
            {
              agent_log ("kernel argument %s is too long", key);
              return NULL;
            }
          memcpy (buf, p + klen + 1, vlen);
          buf[vlen] = '\0';
          return buf;
        }
      p += len;
    }
  return NULL;
}

/* Load order that satisfies the dependencies of the usual modules in one
   pass; anything else follows, and later passes catch what is left.  */
static const char *const module_order[] = {
  "virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console", "failover",
  "net_failover", "virtio_net", "libcrc32c", "overlay", "erofs", "squashfs",
};

static size_t
module_rank (const char *file)
{
  size_t n = sizeof module_order / sizeof module_order[0];

  for (size_t i = 0; i < n; i++)
    {
      size_t len = strlen (module_order[i]);
      if (strncmp (file, module_order[i], len) == 0 && strcmp (file + len, ".ko") == 0)
        return i;
    }
  return n;
}

static int
module_cmp (const void *a, const void *b)
{
  const char *x = *(const char *const *) a, *y = *(const char *const *) b;
  size_t rx = module_rank (x), ry = module_rank (y);

  if (rx != ry)
    return rx < ry ? -1 : 1;
  return strcmp (x, y);
}

/* Loads every /lib/modules/ *.ko with finit_module.  There is no
   modules.dep: retry the failures (unknown symbols) while a pass makes
   progress.  */
static void
load_modules (void)
{
  enum { MAX_MODULES = 128 };
  cleanup_dir DIR *d = opendir ("/lib/modules");
  static char names[MAX_MODULES][NAME_MAX + 1];
  char *pending[MAX_MODULES];
  int errs[MAX_MODULES];
  size_t n = 0;
  struct dirent *de;
  bool progress = true;

  if (d == NULL)
    return;
  while ((de = readdir (d)) != NULL)
    {
      size_t len = strlen (de->d_name);
      if (len < 4 || strcmp (de->d_name + len - 3, ".ko") != 0)
        continue;
      if (n == MAX_MODULES)
        {
          agent_log ("too many modules, ignoring %s", de->d_name);
          continue;
        }
      memcpy (names[n], de->d_name, len + 1);
      pending[n] = names[n];
      n++;
    }
  qsort (pending, n, sizeof pending[0], module_cmp);

  while (n > 0 && progress)
    {
      size_t left = 0;

      progress = false;
      for (size_t i = 0; i < n; i++)
        {
          char path[sizeof "/lib/modules/" + NAME_MAX];
          int fd, ret;

          snprintf (path, sizeof path, "/lib/modules/%s", pending[i]);
          fd = open (path, O_RDONLY | O_CLOEXEC);
          if (fd < 0)
            {
              errs[left] = errno;
              pending[left++] = pending[i];
              continue;
            }
          ret = syscall (SYS_finit_module, fd, "", 0);
          if (ret < 0 && errno != EEXIST)
            {
              errs[left] = errno;
              pending[left++] = pending[i];
            }
          else
            progress = true;
          close (fd);
        }
      n = left;
    }
  for (size_t i = 0; i < n; i++)
    agent_log ("cannot load module %s: %s", pending[i], strerror (errs[i]));
}

static bool
wait_for_path (const char *path, int timeout_ms)
{
  int64_t end = now_ms () + timeout_ms;
  struct stat st;

  for (;;)
    {
      if (stat (path, &st) == 0)
        return true;
      if (now_ms () >= end)
        return false;
      sleep_ms (DEVICE_POLL_MS);
    }
}

/* Mounts /dev/vda on /newroot, moves /dev /proc /sys into it and makes it
   the root (switch_root; the initramfs stays in memory, it is tiny).  Powers
   off with a console line on failure: without a root there is nothing to
   serve.  */
static void
switch_root (void)
{
  static const char *const moved[] = { "/dev", "/proc", "/sys" };

  if (!wait_for_path ("/dev/vda", WAIT_DEVICE_MS))
    {
      agent_log ("FATAL: root disk /dev/vda did not appear within %d s", WAIT_DEVICE_MS / 1000);
      power_off ();
    }
  mkdir_quiet ("/newroot", 0755);
  if (mount ("/dev/vda", "/newroot", "ext4", MS_NOATIME, NULL) < 0)
    {
      agent_log ("FATAL: cannot mount root disk /dev/vda (ext4): %s", strerror (errno));
      power_off ();
    }
  for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
    {
      char target[32];

      snprintf (target, sizeof target, "/newroot%s", moved[i]);
      mkdir_quiet (target, 0755);
      if (mount (moved[i], target, NULL, MS_MOVE, NULL) < 0)
        {
          agent_log ("FATAL: cannot move %s to the new root: %s", moved[i], strerror (errno));
          power_off ();
        }
    }
  if (chdir ("/newroot") < 0 || mount ("/newroot", "/", NULL, MS_MOVE, NULL) < 0 || chroot (".") < 0
      || chdir ("/") < 0)
    {
      agent_log ("FATAL: cannot switch to the new root: %s", strerror (errno));
      power_off ();
    }
}

/* ---- users ------------------------------------------------------------- */

struct user
{
  uid_t uid;
  gid_t gid;
  char name[64];
  char home[256];
  gid_t groups[MAX_GROUPS];
  int ngroups;
};

/* Splits a colon-separated line in place; returns the number of fields.  */
static int
split_colons (char *line, char **fields, int max)
{
  int n = 0;

  line[strcspn (line, "\n")] = '\0';
  while (n < max)
    {
      fields[n++] = line;
      line = strchr (line, ':');
      if (line == NULL)
        break;
      *line++ = '\0';
    }
  return n;
}

static bool
parse_id (const char *s, unsigned long *out)
{
  char *end;

  if (!isdigit ((unsigned char) *s))
    return false;
  errno = 0;
  *out = strtoul (s, &end, 10);
  return errno == 0 && *end == '\0' && *out < UINT32_MAX;
}

/* /etc/passwd by hand: NSS does not work in a static binary.  */
static int
passwd_lookup (const char *name, struct user *u)
{
  cleanup_file FILE *f = fopen ("/etc/passwd", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;

  if (f == NULL)
    return -1;
  while (getline (&line, &cap, f) > 0)
    {
      char *fl[7];
      unsigned long uid, gid;

      if (split_colons (line, fl, 7) != 7 || strcmp (fl[0], name) != 0)
        continue;
      if (!parse_id (fl[2], &uid) || !parse_id (fl[3], &gid))
        return -1;
      u->uid = uid;
      u->gid = gid;
      snprintf (u->home, sizeof u->home, "%s", fl[5][0] ? fl[5] : "/");
      return 0;
    }
  return -1;
}

/* Supplementary groups, as initgroups() would find them.  */
static void
group_lookup (struct user *u)
{
  cleanup_file FILE *f = fopen ("/etc/group", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;

  u->groups[0] = u->gid;
  u->ngroups = 1;
  if (f == NULL)
    return;
  while (getline (&line, &cap, f) > 0 && u->ngroups < MAX_GROUPS)
    {
      char *fl[4], *save = NULL;
      unsigned long gid;

      if (split_colons (line, fl, 4) != 4 || !parse_id (fl[2], &gid) || gid == u->gid)
        continue;
      for (char *m = strtok_r (fl[3], ",", &save); m; m = strtok_r (NULL, ",", &save))
        if (strcmp (m, u->name) == 0)
          {
            u->groups[u->ngroups++] = gid;
            break;
          }
    }
}

static int
resolve_user (const char *name, struct user *u)
{
  memset (u, 0, sizeof *u);
  if (name[0] == '\0' || strlen (name) >= sizeof u->name || strpbrk (name, ":/\n") != NULL)
    return -1;
  snprintf (u->name, sizeof u->name, "%s", name);
  if (passwd_lookup (name, u) < 0)
    {
      if (strcmp (name, "root") == 0)
        u->uid = u->gid = 0;
      else if (strcmp (name, DEFAULT_USER) == 0)
        {
          u->uid = u->gid = DEFAULT_UID;
          snprintf (u->home, sizeof u->home, WORKSPACE);
        }
      else
        return -1;
    }
  if (strcmp (name, "root") == 0)
    snprintf (u->home, sizeof u->home, "/root");
  group_lookup (u);
  return 0;
}

/* ---- the new root ------------------------------------------------------ */

static bool
hostname_valid (const char *s)
{
  size_t len = strlen (s);

  if (len == 0 || len > 64 || s[0] == '-' || s[0] == '.')
    return false;
  for (; *s; s++)
    if (!isalnum ((unsigned char) *s) && *s != '-' && *s != '.')
      return false;
  return true;
}

static void
loopback_up (void)
{
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;

  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (fd < 0 || ioctl (fd, SIOCGIFFLAGS, &ifr) < 0)
    goto fail;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl (fd, SIOCSIFFLAGS, &ifr) < 0)
    goto fail;
  return;
fail:
  agent_log ("cannot bring lo up: %s", strerror (errno));
}

static int
write_file (const char *path, const char *text)
{
  cleanup_close int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

  if (fd < 0)
    return -1;
  write_all (fd, text, strlen (text));
  return 0;
}

static int
set_inet (struct sockaddr *sa, const char *text)
{
  struct sockaddr_in *in = (struct sockaddr_in *) sa;

  memset (in, 0, sizeof *in);
  in->sin_family = AF_INET;
  return inet_pton (AF_INET, text, &in->sin_addr) == 1 ? 0 : -1;
}

/* rt.net=GUEST,GATEWAY: eth0 gets GUEST/24, the default route and the
   resolver are the gateway.  Nothing here is a security boundary: the
   host decides what leaves the tap, whatever root does in here.  */
static void
setup_net (struct agent *ag, const char *spec)
{
  char guest[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN], resolv[128];
  const char *comma = strchr (spec, ',');
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;
  struct rtentry rt;

  if (comma == NULL || (size_t) (comma - spec) >= sizeof guest || strlen (comma + 1) >= sizeof gw)
    goto bad;
  memcpy (guest, spec, comma - spec);
  guest[comma - spec] = '\0';
  strcpy (gw, comma + 1);
  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "eth0");
  if (set_inet (&ifr.ifr_addr, guest) < 0)
    goto bad;
  if (fd < 0 || ioctl (fd, SIOCSIFADDR, &ifr) < 0)
    goto fail;
  set_inet (&ifr.ifr_netmask, "255.255.255.0");
  if (ioctl (fd, SIOCSIFNETMASK, &ifr) < 0 || ioctl (fd, SIOCGIFFLAGS, &ifr) < 0)
    goto fail;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl (fd, SIOCSIFFLAGS, &ifr) < 0)
    goto fail;
  memset (&rt, 0, sizeof rt);
  if (set_inet (&rt.rt_gateway, gw) < 0)
    goto bad;
  set_inet (&rt.rt_dst, "0.0.0.0");
  set_inet (&rt.rt_genmask, "0.0.0.0");
  rt.rt_flags = RTF_UP | RTF_GATEWAY;
  if (ioctl (fd, SIOCADDRT, &rt) < 0 && errno != EEXIST)
    goto fail;
  snprintf (resolv, sizeof resolv, "nameserver %s\noptions timeout:2 attempts:2\n", gw);
  unlink ("/etc/resolv.conf");
  if (write_file ("/etc/resolv.conf", resolv) < 0)
    agent_log ("cannot write /etc/resolv.conf: %s", strerror (errno));
  snprintf (ag->proxy_url, sizeof ag->proxy_url, "http://%s:3128", gw);
  return;
bad:
  agent_log ("ignoring invalid rt.net '%s'", spec);
  return;
fail:
  agent_log ("cannot configure eth0: %s", strerror (errno));
}

static void
setup_root (const struct agent *ag)
{
  static const char *const dev_links[][2] = {
    { "/proc/self/fd", "/dev/fd" },
    { "/proc/self/fd/0", "/dev/stdin" },
    { "/proc/self/fd/1", "/dev/stdout" },
    { "/proc/self/fd/2", "/dev/stderr" },
  };
  char name[128];
  const char *hostname = cmdline_get (ag, "rt.hostname", name, sizeof name);
  struct user u;

  mount_fs ("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=620,ptmxmode=666");
  mount_fs ("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_fs ("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_fs ("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  /* What udev would add and what shells expect (/dev/fd for <(…)).  */
  for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++)
    if (symlink (dev_links[i][0], dev_links[i][1]) < 0 && errno != EEXIST)
      agent_log ("cannot create %s: %s", dev_links[i][1], strerror (errno));

  loopback_up ();

  if (hostname && !hostname_valid (hostname))
    {
      agent_log ("ignoring invalid rt.hostname '%s'", hostname);
      hostname = NULL;
    }
  if (hostname == NULL)
    hostname = "runtime";
  if (sethostname (hostname, strlen (hostname)) < 0)
    agent_log ("cannot set the host name: %s", strerror (errno));

  mkdir_quiet (WORKSPACE, 0755);
  if (resolve_user (DEFAULT_USER, &u) == 0 && lchown (WORKSPACE, u.uid, u.gid) < 0)
    agent_log ("cannot chown " WORKSPACE ": %s", strerror (errno));
}

/* ---- spawning ---------------------------------------------------------- */

/* A NULL-terminated string vector that owns its strings.  */
struct strv
{
  char **v;
  size_t n, cap;
};

static void
strv_clear (struct strv *s)
{
  for (size_t i = 0; i < s->n; i++)
    free (s->v[i]);
  free (s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}
#define cleanup_strvec __attribute__ ((cleanup (strv_clear)))

/* Sets KEY=VALUE (`entry`, length `len`), replacing an entry of the same
   key.  Return: 0, or -1 when out of memory.  */
static int
env_set (struct strv *s, const char *entry, size_t len)
{
  size_t klen = strchr (entry, '=') - entry + 1;
  char *copy = strndup (entry, len);

  if (copy == NULL)
    return -1;
  for (size_t i = 0; i < s->n; i++)
    if (strncmp (s->v[i], entry, klen) == 0)
      {
        free (s->v[i]);
        s->v[i] = copy;
        return 0;
      }
  if (s->n + 2 > s->cap)
    {
      size_t cap = s->cap ? s->cap * 2 : 16;
      char **v = realloc (s->v, cap * sizeof *v);
      if (v == NULL)
        {
          free (copy);
          return -1;
        }
      s->v = v;
      s->cap = cap;
    }
  s->v[s->n++] = copy;
  s->v[s->n] = NULL;
  return 0;
}

static int
env_setf (struct strv *s, const char *key, const char *value)
{
  char buf[512];
  int n = snprintf (buf, sizeof buf, "%s=%s", key, value);

  if (n < 0 || (size_t) n >= sizeof buf)
    return -1;
  return env_set (s, buf, n);
}

static int
env_base (struct strv *s, const struct user *u, const char *proxy_url)
{
  if (env_setf (s, "PATH", DEFAULT_PATH) < 0 || env_setf (s, "HOME", u->home) < 0
      || env_setf (s, "USER", u->name) < 0 || env_setf (s, "LOGNAME", u->name) < 0
      || env_setf (s, "LANG", "C.UTF-8") < 0)
    return -1;
  /* Both spellings: curl reads only the lower-case http_proxy.  */
  if (proxy_url[0]
      && (env_setf (s, "HTTP_PROXY", proxy_url) < 0 || env_setf (s, "HTTPS_PROXY", proxy_url) < 0
          || env_setf (s, "http_proxy", proxy_url) < 0 || env_setf (s, "https_proxy", proxy_url) < 0
          || env_setf (s, "NO_PROXY", "localhost,127.0.0.1,::1") < 0
          || env_setf (s, "no_proxy", "localhost,127.0.0.1,::1") < 0))
    return -1;
  return 0;
}

/* POSIX portable names: [A-Za-z_][A-Za-z0-9_]*  */
static bool
env_name_valid (const char *s, size_t len)
{
  if (len == 0 || isdigit ((unsigned char) s[0]))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!isalnum ((unsigned char) s[i]) && s[i] != '_')
      return false;
  return true;
}

struct spawn
{
  char **argv;
  char **envp;
  const char *cwd;
  const struct user *user;
  int fd[3];
};

static void __attribute__ ((noreturn))
child_exec (const struct spawn *s)
{
  sigset_t none;
  int err;

  /* The agent blocks SIGCHLD and ignores SIGPIPE; the command must not
     inherit either.  */
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    signal (sig, SIG_DFL);
  /* Own session and process group: signals and the final SIGKILL reach
     everything it starts.  */
  setsid ();
  for (int i = 0; i < 3; i++)
    if (s->fd[i] != i && dup2 (s->fd[i], i) < 0)
      _exit (127);
  if (setgroups (s->user->ngroups, s->user->groups) < 0 || setgid (s->user->gid) < 0
      || setuid (s->user->uid) < 0)
    {
      dprintf (2, "runtime: cannot switch to user '%s': %s\n", s->user->name, strerror (errno));
      _exit (127);
    }
  if (chdir (s->cwd) < 0)
    {
      dprintf (2, "runtime: cannot enter '%s': %s\n", s->cwd, strerror (errno));
      _exit (127);
    }
  /* glibc's execvpe searches the caller's PATH, not envp's.  */
  environ = s->envp;
  execvpe (s->argv[0], s->argv, s->envp);
  err = errno;
  dprintf (2, "runtime: cannot run '%s': %s\n", s->argv[0], strerror (err));
  _exit (err == EACCES ? 126 : 127);
}

static pid_t
spawn (const struct spawn *s)
{
  pid_t pid = fork ();

  if (pid == 0)
    child_exec (s);
  return pid;
}

/* ---- one-shot mode (rt.cmd) -------------------------------------------- */

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

/* Decodes base64 (standard or URL alphabet, padding optional) into out,
   which must hold strlen(in) bytes.  Return: length, or -1.  */
static ssize_t
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
static void __attribute__ ((noreturn))
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

/* ---- the channel ------------------------------------------------------- */

/* Returns room for n contiguous bytes at the tail, or NULL.  */
static uint8_t *
outq_reserve (struct outq *q, size_t n)
{
  if (q->len + n > OUTQ_CAP)
    return NULL;
  if (q->head + q->len + n > OUTQ_CAP)
    {
      memmove (q->buf, q->buf + q->head, q->len);
      q->head = 0;
    }
  return q->buf + q->head + q->len;
}

static void
outq_reset (struct outq *q)
{
  q->head = q->len = 0;
}

static int
send_frame (struct agent *ag, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  uint8_t *p;

  if (ag->state != CONN_UP)
    return 0;
  p = outq_reserve (&ag->outq, RT_FRAME_HEADER + len);
  if (p == NULL)
    return -1;
  rt_frame_encode_header (p, type, stream, len);
  if (len)
    memcpy (p + RT_FRAME_HEADER, payload, len);
  ag->outq.len += RT_FRAME_HEADER + len;
  return 0;
}

static int
send_json (struct agent *ag, uint8_t type, uint32_t stream, json_object *o)
{
  const char *s;
  size_t len;

  if (o == NULL)
    return -1;
  s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);
  if (s == NULL)
    return -1;
  return send_frame (ag, type, stream, s, len);
}

static void RT_PRINTF (4, 5)
send_error (struct agent *ag, uint32_t stream, const char *code, const char *fmt, ...)
{
  cleanup_json json_object *o = json_object_new_object ();
  char msg[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  if (o == NULL)
    return;
  json_object_object_add (o, "code", json_object_new_string (code));
  json_object_object_add (o, "message", json_object_new_string (msg));
  if (send_json (ag, RT_FRAME_ERROR, stream, o) < 0)
    agent_log ("dropped error for stream %u: %s", stream, msg);
}

static void
send_hello (struct agent *ag)
{
  cleanup_json json_object *o = json_object_new_object ();

  if (o == NULL)
    return;
  json_object_object_add (o, "version", json_object_new_int (RT_PROTO_VERSION));
  json_object_object_add (o, "agent", json_object_new_string (AGENT_NAME " " RT_VERSION));
  send_json (ag, RT_FRAME_HELLO, 0, o);
}

/* Parses a control payload; it must be one JSON object.  */
static json_object *
parse_object (const uint8_t *p, size_t len)
{
  json_tokener *tok = json_tokener_new_ex (16);
  json_object *o;
  size_t end;

  if (tok == NULL || len > INT_MAX)
    {
      if (tok)
        json_tokener_free (tok);
      return NULL;
    }
  o = json_tokener_parse_ex (tok, (const char *) p, (int) len);
  end = json_tokener_get_parse_end (tok);
  if (o != NULL && json_tokener_get_error (tok) == json_tokener_success)
    for (; end < len; end++)
      if (!isspace (p[end]))
        break;
  json_tokener_free (tok);
  if (o == NULL || end != len || !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      return NULL;
    }
  return o;
}

/* A member that is present and not null.  */
static json_object *
get_member (json_object *o, const char *key)
{
  json_object *v = NULL;

  json_object_object_get_ex (o, key, &v);
  return json_object_is_type (v, json_type_null) ? NULL : v;
}

static bool
is_plain_string (json_object *v)
{
  return json_object_is_type (v, json_type_string)
         && strlen (json_object_get_string (v)) == (size_t) json_object_get_string_len (v);
}

/* ---- commands ---------------------------------------------------------- */

static struct cmd *
cmd_find (struct agent *ag, uint32_t stream)
{
  if (stream == 0)
    return NULL;
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (ag->cmds[i].used && !ag->cmds[i].orphan && ag->cmds[i].stream == stream)
      return &ag->cmds[i];
  return NULL;
}

static void
cmd_free (struct agent *ag, struct cmd *c)
{
  for (int i = 0; i < 3; i++)
    close_fd (&c->fd[i]);
  free (c->inq);
  memset (c, 0, sizeof *c);
  c->fd[0] = c->fd[1] = c->fd[2] = -1;
  ag->ncmds--;
}

static void
cmd_close_stdin (struct cmd *c)
{
  close_fd (&c->fd[0]);
  free (c->inq);
  c->inq = NULL;
  c->inq_off = c->inq_len = c->inq_cap = 0;
}

/* Signals the command's process group.  Right after fork the child may not
   have called setsid yet: then signal it alone.  */
static void
cmd_kill (struct cmd *c, int sig)
{
  if (c->exited)
    return;
  if (kill (-c->pid, sig) < 0 && errno == ESRCH)
    kill (c->pid, sig);
}

/* The stream loses its connection: the process keeps running (and ends on
   its own or at its timeout), its output is read and dropped.  */
static void
cmd_orphan (struct cmd *c)
{
  c->orphan = true;
  c->stream = 0;
  cmd_close_stdin (c);
}

/* Ends a live stream with ERROR, which must be its last frame: the command
   is killed so that no EXIT has to follow.  */
static void RT_PRINTF (4, 5)
cmd_fail (struct agent *ag, struct cmd *c, const char *code, const char *fmt, ...)
{
  char msg[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  cmd_kill (c, SIGKILL);
  send_error (ag, c->stream, code, "%s", msg);
  cmd_orphan (c);
}

/* Feeds queued stdin to the command and tells the host how much it took
   (WINDOW, guest→host): the host keeps at most RT_WINDOW_INITIAL bytes of
   stdin in flight, so a large upload never overflows the queue.  */
static void
cmd_write_stdin (struct agent *ag, struct cmd *c)
{
  size_t taken = 0;

  while (c->inq_len > 0 && c->fd[0] >= 0)
    {
      ssize_t n = write (c->fd[0], c->inq + c->inq_off, c->inq_len);
      if (n > 0)
        {
          c->inq_off += n;
          c->inq_len -= n;
          taken += n;
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      /* EPIPE: the command closed its stdin, the rest has nowhere to go:
         it counts as taken, or the host would wait for credit forever.  */
      taken += c->inq_len;
      cmd_close_stdin (c);
      break;
    }
  if (taken > 0 && c->stream != 0)
    {
      uint8_t ack[4];
      rt_put_u32 (ack, (uint32_t) taken);
      send_frame (ag, RT_FRAME_WINDOW, c->stream, ack, sizeof ack);
    }
  if (c->inq_len > 0 || c->fd[0] < 0)
    return;
  c->inq_off = 0;
  if (c->inq_cap > 256 * 1024)
    {
      free (c->inq);
      c->inq = NULL;
      c->inq_cap = 0;
    }
  if (c->stdin_eof)
    cmd_close_stdin (c);
}

enum read_result
{
  READ_DATA,
  READ_BLOCKED, /* window or queue full: try again later */
  READ_AGAIN,   /* pipe empty */
  READ_CLOSED,
};

/* One read from stdout (i = 1) or stderr (i = 2) into a STDOUT/STDERR frame
   built in place in the queue.  */
static enum read_result
cmd_read (struct agent *ag, struct cmd *c, int i)
{
  size_t want = OUT_CHUNK;
  uint8_t *frame = NULL, *dst = ag->scratch;
  ssize_t n;

  if (c->exited)
    {
      if (c->drain_left[i] == 0)
        goto closed;
      if (want > c->drain_left[i])
        want = c->drain_left[i];
    }
  if (!c->orphan)
    {
      if (ag->state != CONN_UP || c->unacked >= RT_WINDOW_INITIAL
          || ag->outq.len + RT_FRAME_HEADER >= OUTQ_DATA_MAX)
        return READ_BLOCKED;
      if (want > RT_WINDOW_INITIAL - c->unacked)
        want = RT_WINDOW_INITIAL - c->unacked;
      if (want > OUTQ_DATA_MAX - ag->outq.len - RT_FRAME_HEADER)
        want = OUTQ_DATA_MAX - ag->outq.len - RT_FRAME_HEADER;
      frame = outq_reserve (&ag->outq, RT_FRAME_HEADER + want);
      if (frame == NULL)
        return READ_BLOCKED;
      dst = frame + RT_FRAME_HEADER;
    }
  do
    n = read (c->fd[i], dst, want);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN)
    return READ_AGAIN;
  if (n <= 0)
    goto closed;
  if (c->exited)
    c->drain_left[i] -= n;
  if (frame)
    {
      rt_frame_encode_header (frame, i == 1 ? RT_FRAME_STDOUT : RT_FRAME_STDERR, c->stream, n);
      ag->outq.len += RT_FRAME_HEADER + n;
      c->unacked += n;
    }
  return READ_DATA;
closed:
  close_fd (&c->fd[i]);
  return READ_CLOSED;
}

/* After the exit: read what the command left in its pipes (until empty,
   EOF or the budget is spent), as far as the window allows.  */
static void
cmd_drain (struct agent *ag, struct cmd *c)
{
  for (int i = 1; i <= 2; i++)
    while (c->fd[i] >= 0)
      {
        enum read_result r = cmd_read (ag, c, i);
        if (r == READ_AGAIN)
          close_fd (&c->fd[i]);
        else if (r == READ_BLOCKED)
          return;
      }
}

static void
cmd_send_exit (struct agent *ag, struct cmd *c)
{
  cleanup_json json_object *o = json_object_new_object ();
  int code = 0, sig = 0;

  if (WIFEXITED (c->status))
    code = WEXITSTATUS (c->status);
  else if (WIFSIGNALED (c->status))
    {
      sig = WTERMSIG (c->status);
      code = 128 + sig;
    }
  if (c->timed_out)
    code = 124;
  if (o == NULL)
    return;
  json_object_object_add (o, "exitCode", json_object_new_int (code));
  json_object_object_add (o, "signal", json_object_new_int (sig));
  json_object_object_add (o, "timedOut", json_object_new_boolean (c->timed_out));
  json_object_object_add (o, "durationMs", json_object_new_int64 (c->end_ms - c->start_ms));
  send_json (ag, RT_FRAME_EXIT, c->stream, o);
}

static void
reap (struct agent *ag)
{
  struct signalfd_siginfo si;

  while (read (ag->sigfd, &si, sizeof si) > 0)
    ;
  for (;;)
    {
      int status;
      pid_t pid = waitpid (-1, &status, WNOHANG);

      if (pid < 0 && errno == EINTR)
        continue;
      if (pid <= 0)
        return;
      for (size_t i = 0; i < MAX_CMDS; i++)
        {
          struct cmd *c = &ag->cmds[i];
          if (!c->used || c->exited || c->pid != pid)
            continue;
          /* Whatever it started ends with it.  */
          kill (-pid, SIGKILL);
          c->exited = true;
          c->status = status;
          c->end_ms = now_ms ();
          c->drain_left[1] = c->drain_left[2] = DRAIN_MAX;
          cmd_close_stdin (c);
          break;
        }
    }
}

/* ---- requests ---------------------------------------------------------- */

struct exec_req
{
  json_object *json;
  const char **argv;
  struct strv env;
  const char *cwd;
  struct user user;
  int64_t timeout_ms;
  bool with_stdin;
};

/* Checks an EXEC request.  Return: 0, or -1 after answering ERROR.  */
static int
exec_parse (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len, struct exec_req *r)
{
  json_object *v;
  const char *user = DEFAULT_USER;
  size_t n;

  r->json = parse_object (p, len);
  if (r->json == NULL)
    goto invalid_json;

  v = get_member (r->json, "argv");
  if (v == NULL || !json_object_is_type (v, json_type_array) || json_object_array_length (v) == 0)
    goto bad_argv;
  n = json_object_array_length (v);
  r->argv = calloc (n + 1, sizeof *r->argv);
  if (r->argv == NULL)
    goto oom;
  for (size_t i = 0; i < n; i++)
    {
      json_object *a = json_object_array_get_idx (v, i);
      if (!is_plain_string (a))
        goto bad_argv;
      r->argv[i] = json_object_get_string (a);
    }
  if (r->argv[0][0] == '\0')
    goto bad_argv;

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
      if (eq == NULL || !env_name_valid (s, eq - s))
        {
          send_error (ag, stream, "invalid_env", "invalid environment entry '%.100s'", s);
          return -1;
        }
      if (env_set (&r->env, s, json_object_get_string_len (e)) < 0)
        goto oom;
    }
  return 0;

invalid_json:
  send_error (ag, stream, "invalid_request", "EXEC payload is not a JSON object");
  return -1;
bad_argv:
  send_error (ag, stream, "invalid_request", "'argv' must be a non-empty array of strings");
  return -1;
oom:
  send_error (ag, stream, "internal", "out of memory");
  return -1;
}

static void
handle_exec (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len)
{
  struct exec_req r = { 0 };
  int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
  struct cmd *c = NULL;
  struct spawn sp;
  struct stat st;
  int cwd_err;
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
  if (exec_parse (ag, stream, p, len, &r) < 0)
    goto out;
  if (ag->ncmds >= MAX_CMDS)
    {
      send_error (ag, stream, "too_many_commands", "at most %d commands may run at once", MAX_CMDS);
      goto out;
    }
  /* Checked here, as root, so that the common mistake gets a clear answer;
     the child still reports what only the user's permissions refuse.  */
  cwd_err = stat (r.cwd, &st) < 0 ? errno : S_ISDIR (st.st_mode) ? 0 : ENOTDIR;
  if (cwd_err)
    {
      send_error (ag, stream, "file_not_found", "cannot enter '%.200s': %s", r.cwd, strerror (cwd_err));
      goto out;
    }
  if ((r.with_stdin && pipe2 (in, O_CLOEXEC) < 0) || pipe2 (out, O_CLOEXEC) < 0 || pipe2 (err, O_CLOEXEC) < 0)
    {
      send_error (ag, stream, "internal", "cannot create pipes: %s", strerror (errno));
      goto out;
    }
  fcntl (out[0], F_SETPIPE_SZ, PIPE_SIZE);
  fcntl (err[0], F_SETPIPE_SZ, PIPE_SIZE);
  if (in[1] >= 0)
    fcntl (in[1], F_SETPIPE_SZ, PIPE_SIZE);
  /* Only the agent's ends are non-blocking; the child's stay blocking.  */
  if ((in[1] >= 0 && fcntl (in[1], F_SETFL, O_NONBLOCK) < 0) || fcntl (out[0], F_SETFL, O_NONBLOCK) < 0
      || fcntl (err[0], F_SETFL, O_NONBLOCK) < 0)
    {
      send_error (ag, stream, "internal", "cannot set up pipes: %s", strerror (errno));
      goto out;
    }
  for (size_t i = 0; i < MAX_CMDS && c == NULL; i++)
    if (!ag->cmds[i].used)
      c = &ag->cmds[i];

  sp = (struct spawn){ (char **) r.argv, r.env.v, r.cwd, &r.user,
                       { r.with_stdin ? in[0] : ag->devnull, out[1], err[1] } };
  pid = spawn (&sp);
  if (pid < 0)
    {
      send_error (ag, stream, "internal", "cannot fork: %s", strerror (errno));
      goto out;
    }
  c->used = true;
  c->stream = stream;
  c->pid = pid;
  c->fd[0] = in[1];
  c->fd[1] = out[0];
  c->fd[2] = err[0];
  in[1] = out[0] = err[0] = -1;
  c->start_ms = now_ms ();
  c->deadline_ms = r.timeout_ms > 0 ? c->start_ms + r.timeout_ms : 0;
  ag->ncmds++;
out:
  for (int i = 0; i < 2; i++)
    {
      close_fd (&in[i]);
      close_fd (&out[i]);
      close_fd (&err[i]);
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

/* A whole file of at most 4 MiB, NUL-terminated; NULL when unreadable.  */
static char *
read_small_file (const char *path)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  char *buf;
  size_t done = 0;

  if (fd < 0 || fstat (fd, &st) < 0 || st.st_size > 4 * 1024 * 1024)
    return NULL;
  buf = malloc (st.st_size + 1);
  while (buf && done < (size_t) st.st_size)
    {
      ssize_t n = read (fd, buf + done, st.st_size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += n;
    }
  if (buf)
    buf[done] = '\0';
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
      write_all (fd, "\n", 1);
    write_all (fd, pem, len);
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

static void
handle_frame (struct agent *ag, const struct rt_frame_header *h, const uint8_t *p)
{
  struct cmd *c = NULL;

  switch (h->type)
    {
    case RT_FRAME_HELLO:
    case RT_FRAME_SHUTDOWN:
      if (h->stream != 0)
        {
          send_error (ag, 0, "invalid_request", "frame type %u belongs on stream 0, not %u", h->type,
                      h->stream);
          return;
        }
      if (h->type == RT_FRAME_SHUTDOWN)
        shutdown_now ();
      handle_hello (ag, p, h->len);
      return;

    case RT_FRAME_EXEC:
      handle_exec (ag, h->stream, p, h->len);
      return;

    case RT_FRAME_STDIN:
    case RT_FRAME_SIGNAL:
    case RT_FRAME_WINDOW:
      /* Frames for streams that are gone (or never were) are ignored: the
         host may not have seen the EXIT yet.  */
      c = cmd_find (ag, h->stream);
      if (c == NULL)
        return;
      if (h->type == RT_FRAME_STDIN)
        handle_stdin (ag, c, p, h->len);
      else if (h->type == RT_FRAME_SIGNAL)
        handle_signal (ag, c, p, h->len);
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

/* ---- connection -------------------------------------------------------- */

static void
orphan_all (struct agent *ag)
{
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (ag->cmds[i].used)
      cmd_orphan (&ag->cmds[i]);
}

/* The host went away (EOF).  Running commands stay; their streams die with
   the connection.  */
static void
conn_drop (struct agent *ag)
{
  ssize_t n;
  size_t avail;

  orphan_all (ag);
  outq_reset (&ag->outq);
  rt_frame_reader_init (&ag->reader);
  ag->input_pending = false;
  ag->state = CONN_DOWN;
  /* What the old host sent and we did not read would otherwise greet the
     next one.  Bounded: a new host may already be talking.  */
  for (int i = 0; i < 64; i++)
    {
      n = read (ag->chan, rt_frame_reader_space (&ag->reader, &avail), avail);
      if (n == 0 || (n < 0 && errno != EINTR))
        break;
    }
}

/* The byte stream cannot be resynchronised after a bad header: say so,
   then drop input until the host reconnects.  */
static void
conn_poison (struct agent *ag, int err)
{
  agent_log ("bad frame from the host (%s); waiting for it to reconnect", strerror (-err));
  orphan_all (ag);
  send_error (ag, 0, "protocol_error", "bad frame header (%s); reconnect", strerror (-err));
  ag->state = CONN_POISONED;
  ag->last_input_ms = now_ms ();
  ag->input_pending = false;
  rt_frame_reader_init (&ag->reader);
}

static void
conn_check (struct agent *ag)
{
  struct pollfd pfd = { ag->chan, POLLIN, 0 };
  int r = poll (&pfd, 1, 0);

  /* While the host is away the port reports POLLHUP (and reads EOF).  */
  if (r < 0 || (r == 1 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))))
    return;
  ag->state = CONN_UP;
  rt_frame_reader_init (&ag->reader);
  ag->input_pending = false;
  outq_reset (&ag->outq);
  send_hello (ag);
}

/* A host that got protocol_error should reconnect, but a quick reconnect is
   invisible here (the port only reports whether a host is connected now),
   and its new host waits silently for HELLO.  So once the input has been
   quiet for a while (the host writes whole frames, so a pause is a frame
   boundary), start afresh with a HELLO.  */
static void
conn_resync (struct agent *ag, int64_t now)
{
  if (ag->state != CONN_POISONED || ag->outq.len > 0 || now - ag->last_input_ms < RESYNC_QUIET_MS)
    return;
  ag->state = CONN_DOWN;
  conn_check (ag);
}

static void
process_input (struct agent *ag)
{
  while (ag->state == CONN_UP && ag->input_pending && OUTQ_CAP - ag->outq.len >= CTRL_MAX)
    {
      struct rt_frame_header h;
      const uint8_t *p;
      int r = rt_frame_reader_next (&ag->reader, &h, &p);

      if (r == 0)
        ag->input_pending = false;
      else if (r < 0)
        conn_poison (ag, r);
      else
        handle_frame (ag, &h, p);
    }
}

static void
chan_read (struct agent *ag)
{
  size_t avail;
  uint8_t *buf = rt_frame_reader_space (&ag->reader, &avail);
  ssize_t n;

  do
    n = read (ag->chan, buf, avail);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN)
    return;
  if (n <= 0)
    {
      if (n < 0)
        agent_log ("channel read: %s", strerror (errno));
      conn_drop (ag);
      return;
    }
  if (ag->state != CONN_UP)
    {
      ag->last_input_ms = now_ms (); /* poisoned: dropped */
      return;
    }
  rt_frame_reader_filled (&ag->reader, n);
  ag->input_pending = true;
  process_input (ag);
}

static void
chan_flush (struct agent *ag)
{
  while (ag->outq.len > 0 && ag->state != CONN_DOWN)
    {
      ssize_t n = write (ag->chan, ag->outq.buf + ag->outq.head, ag->outq.len);
      if (n > 0)
        {
          ag->outq.head += n;
          ag->outq.len -= n;
          continue;
        }
      if (n < 0 && (errno == EINTR))
        continue;
      if (n < 0 && errno != EAGAIN)
        {
          agent_log ("channel write: %s", strerror (errno));
          conn_drop (ag);
        }
      return;
    }
  if (ag->outq.len == 0)
    ag->outq.head = 0;
}

/* Finds the port named RT_CHANNEL_NAME (no udev: its name is in sysfs) and
   opens it.  */
static int
open_channel (void)
{
  int64_t end = now_ms () + WAIT_DEVICE_MS;
  char dev[64] = "";

  while (dev[0] == '\0')
    {
      cleanup_dir DIR *d = opendir ("/sys/class/virtio-ports");
      struct dirent *de;

      while (d && (de = readdir (d)) != NULL)
        {
          char path[PATH_MAX], name[64];
          cleanup_close int fd = -1;
          ssize_t n;

          if (de->d_name[0] == '.')
            continue;
          snprintf (path, sizeof path, "/sys/class/virtio-ports/%s/name", de->d_name);
          fd = open (path, O_RDONLY | O_CLOEXEC);
          if (fd < 0 || (n = read (fd, name, sizeof name - 1)) <= 0)
            continue;
          name[n] = '\0';
          name[strcspn (name, "\n")] = '\0';
          if (strcmp (name, RT_CHANNEL_NAME) == 0)
            {
              snprintf (dev, sizeof dev, "/dev/%.32s", de->d_name);
              break;
            }
        }
      if (dev[0] == '\0')
        {
          if (now_ms () >= end)
            return -1;
          sleep_ms (DEVICE_POLL_MS);
        }
    }
  for (;;)
    {
      int fd = open (dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0)
        return fd;
      if (errno != ENOENT || now_ms () >= end)
        {
          agent_log ("cannot open %s: %s", dev, strerror (errno));
          return -1;
        }
      sleep_ms (DEVICE_POLL_MS);
    }
}

/* ---- the loop ---------------------------------------------------------- */

/* Work that needs no event: frames already buffered, draining exited
   commands, EXIT frames, timeouts, writing the queue.  */
static void
pump (struct agent *ag, int64_t now)
{
  process_input (ag);
  for (size_t i = 0; i < MAX_CMDS; i++)
    {
      struct cmd *c = &ag->cmds[i];

      if (!c->used)
        continue;
      if (!c->exited && c->deadline_ms && now >= c->deadline_ms)
        {
          cmd_kill (c, SIGKILL);
          c->timed_out = true;
          c->deadline_ms = 0;
        }
      if (!c->exited)
        continue;
      cmd_drain (ag, c);
      if (c->fd[1] >= 0 || c->fd[2] >= 0)
        continue;
      if (!c->orphan)
        {
          if (OUTQ_CAP - ag->outq.len < CTRL_MAX)
            continue; /* no room for EXIT yet */
          cmd_send_exit (ag, c);
        }
      cmd_free (ag, c);
    }
  chan_flush (ag);
}

static void __attribute__ ((noreturn))
serve (struct agent *ag)
{
  struct pollfd *pfd = ag->pfd;
  sigset_t mask;
  bool announced = false;

  for (size_t i = 0; i < MAX_CMDS; i++)
    ag->cmds[i].fd[0] = ag->cmds[i].fd[1] = ag->cmds[i].fd[2] = -1;
  ag->devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  sigemptyset (&mask);
  sigaddset (&mask, SIGCHLD);
  ag->sigfd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (ag->sigfd < 0 || ag->devnull < 0)
    {
      agent_log ("FATAL: cannot set up: %s", strerror (errno));
      power_off ();
    }
  ag->chan = open_channel ();
  if (ag->chan < 0)
    {
      agent_log ("FATAL: no virtio-serial port named " RT_CHANNEL_NAME);
      power_off ();
    }
  ag->state = CONN_DOWN;
  rt_frame_reader_init (&ag->reader);

  for (;;)
    {
      int64_t now = now_ms ();
      int timeout = -1, n = 0, ready;

      if (ag->state == CONN_DOWN)
        {
          conn_check (ag);
          if (ag->state == CONN_UP && !announced)
            {
              agent_log ("ready %" PRId64 " ms after boot", now);
              announced = true;
            }
        }
      conn_resync (ag, now);
      pump (ag, now);

      pfd[n] = (struct pollfd){ ag->sigfd, POLLIN, 0 };
      ag->who[n++].c = NULL;
      if (ag->state == CONN_DOWN)
        timeout = RECONNECT_POLL_MS;
      else if (ag->state == CONN_POISONED && ag->outq.len == 0)
        {
          int64_t left = ag->last_input_ms + RESYNC_QUIET_MS - now;
          timeout = left > 0 ? (int) left : 0;
        }
      if (ag->state != CONN_DOWN)
        {
          short ev = 0;
          if (!ag->input_pending)
            ev |= POLLIN;
          if (ag->outq.len > 0)
            ev |= POLLOUT;
          pfd[n] = (struct pollfd){ ag->chan, ev, 0 };
          ag->who[n++].c = NULL;
        }
      for (size_t i = 0; i < MAX_CMDS; i++)
        {
          struct cmd *c = &ag->cmds[i];

          if (!c->used || c->exited)
            continue;
          if (c->deadline_ms)
            {
              int64_t left = c->deadline_ms - now;
              if (left < 0)
                left = 0;
              if (timeout < 0 || left < timeout)
                timeout = left > INT_MAX ? INT_MAX : (int) left;
            }
          /* Out of window (or queue): leave the data in the pipe, so the
             command blocks when it fills.  */
          if (c->orphan
              || (ag->state == CONN_UP && c->unacked < RT_WINDOW_INITIAL
                  && ag->outq.len + RT_FRAME_HEADER < OUTQ_DATA_MAX))
            for (int k = 1; k <= 2; k++)
              if (c->fd[k] >= 0)
                {
                  pfd[n] = (struct pollfd){ c->fd[k], POLLIN, 0 };
                  ag->who[n].c = c;
                  ag->who[n++].i = k;
                }
          if (c->fd[0] >= 0 && c->inq_len > 0)
            {
              pfd[n] = (struct pollfd){ c->fd[0], POLLOUT, 0 };
              ag->who[n].c = c;
              ag->who[n++].i = 0;
            }
        }

      ready = poll (pfd, n, timeout);
      if (ready < 0)
        {
          if (errno != EINTR)
            {
              agent_log ("poll: %s", strerror (errno));
              sleep_ms (10);
            }
          continue;
        }
      if (ready == 0)
        continue;

      if (pfd[0].revents)
        reap (ag);
      for (int k = 1; k < n; k++)
        {
          struct cmd *c = ag->who[k].c;
          short re = pfd[k].revents;

          if (re == 0)
            continue;
          if (c == NULL)
            {
              if (ag->state == CONN_DOWN)
                continue; /* dropped while handling an earlier fd */
              if (re & POLLOUT)
                chan_flush (ag);
              if (ag->state != CONN_DOWN && (re & (POLLIN | POLLHUP | POLLERR)))
                {
                  if (!ag->input_pending)
                    chan_read (ag);
                  else if (re & (POLLHUP | POLLERR))
                    conn_drop (ag);
                }
              continue;
            }
          /* The command may have been orphaned or failed since poll().  */
          if (!c->used || c->fd[ag->who[k].i] != pfd[k].fd)
            continue;
          if (ag->who[k].i == 0)
            cmd_write_stdin (ag, c);
          else
            cmd_read (ag, c, ag->who[k].i);
        }
    }
}

/* The sandbox's disk is larger than its image's file system (--disk):
   grow the mounted ext4 online to fill it.  */
static void
grow_root (void)
{
  int status = 0;
  pid_t pid = fork ();

  if (pid == 0)
    {
      int fd = open ("/dev/null", O_RDWR);
      if (fd >= 0)
        {
          dup2 (fd, 0);
          dup2 (fd, 1);
        }
      execl ("/sbin/resize2fs", "resize2fs", "/dev/vda", (char *) NULL);
      _exit (127);
    }
  if (pid < 0 || waitpid (pid, &status, 0) < 0 || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
    agent_log ("cannot grow the root file system (resize2fs: %d)", WIFEXITED (status) ? WEXITSTATUS (status) : -1);
}

/* Benchmark mode (rt.rawbench=BYTES): the bare virtio-serial port, no
   framing, as the baseline for the protocol's throughput.  Once the host
   connects: BYTES to the host, BYTES from the host, one 'D', power off.  */
static void __attribute__ ((noreturn))
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
  write_all (fd, "D", 1);
  sleep_ms (200);
  power_off ();
}

int
main (void)
{
  char probe[8];
  static char cmd[CMDLINE_MAX];
  static struct agent ag_storage;
  struct agent *ag = &ag_storage;
  sigset_t mask;

  /* SIGCHLD goes to a signalfd; writes to a closed pipe return EPIPE.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGCHLD);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  signal (SIGPIPE, SIG_IGN);
  reboot (RB_DISABLE_CAD);

  boot_early ();
  read_cmdline (ag);
  if (cmdline_get (ag, "rt.probe", probe, sizeof probe) && strcmp (probe, "1") == 0)
    {
      static const char ok[] = AGENT_NAME ": probe ok\n";
      int fd = open ("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
      write_all (fd >= 0 ? fd : 2, ok, sizeof ok - 1);
      power_off ();
    }

  load_modules ();
  switch_root ();
  setup_root (ag);
  if (cmdline_get (ag, "rt.growfs", probe, sizeof probe) && strcmp (probe, "1") == 0)
    grow_root ();
  if (cmdline_get (ag, "rt.net", cmd, sizeof cmd))
    setup_net (ag, cmd);
  if (cmdline_get (ag, "rt.cmd", cmd, sizeof cmd))
    run_once (cmd, ag->proxy_url);
  if (cmdline_get (ag, "rt.rawbench", cmd, sizeof cmd))
    rawbench (cmd);
  serve (ag);
}
