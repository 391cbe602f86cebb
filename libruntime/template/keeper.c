/* keeper.c - a template's keeper: one process per template holding its
   RAM as one sealed memfd, handed to every clone's monitor, so that the
   clones share its pages.  rt_template_ram_fd and rt_template_keeper_stop
   are declared in template/template.h, so this file has no header of its
   own.  See "Templates and clones" in docs/ARCHITECTURE.md.  */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vmm/privs.h"
#include "snapshot/ramfile.h"
#include "template/template.h"

#define ALL_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* How often an idle keeper looks whether its template is still there.  */
#define KEEPER_TICK_MS 1000
/* How long a caller waits for a keeper's answer.  */
#define KEEPER_ANSWER_S 5

/* <state>/.templates/<key's first 32 digits><suffix>, the dir made 0700.
   128 bits name a template as surely as 256, and leave room in a
   socket's 108 bytes for a longer state dir.  */
static char *
keeper_path (rt_context *ctx, const char *key, const char *suffix, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/.templates", ctx->state_dir);
  char *path;

  if (dir == NULL)
    return rt_error_oom (err), NULL;
  if (rt_mkdir_p (dir, 0700, err) < 0)
    return NULL;
  path = rt_strdup_printf ("%s/%.32s%s", dir, key, suffix);
  if (path == NULL)
    rt_error_oom (err);
  return path;
}

/* A sealed memfd of @memory_mib MiB holding the template's `ram` (opened
   in the dir @dfd), named after @key (what /proc/PID/fd shows).  */
static int
load_ram (int dfd, const char *dir, const char *key, unsigned memory_mib, int *out, rt_error **err)
{
  cleanup_close int src = openat (dfd, "ram", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_close int mfd = -1;
  cleanup_free char *what = rt_strdup_printf ("%s/ram", dir);
  off_t size = (off_t) memory_mib << 20;
  char name[64];
  int ret;

  snprintf (name, sizeof name, "rt-template-%.12s", key);
  if (what == NULL)
    return rt_error_oom (err);
  if (src < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", what, strerror (errno));
  mfd = memfd_create (name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mfd < 0 || ftruncate (mfd, size) < 0)
    return rt_error_set (err, errno, "internal", "cannot make a memfd of %u MiB: %s", memory_mib, strerror (errno));
  ret = rt_ramfile_read (src, mfd, (uint64_t) size, 0, what, err);
  if (ret < 0)
    return ret;
  if (fcntl (mfd, F_ADD_SEALS, ALL_SEALS) < 0)
    return rt_error_set (err, errno, "internal", "cannot seal the memfd: %s", strerror (errno));
  *out = steal_fd (&mfd);
  return 0;
}

/* Whether @fd is what a keeper must give: a memfd of @memory_mib MiB with
   every seal.  */
static int
check_ram_fd (int fd, unsigned memory_mib, rt_error **err)
{
  char link[64], target[64];
  struct stat st;
  ssize_t n;
  int seals = fcntl (fd, F_GET_SEALS);

  snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink (link, target, sizeof target - 1);
  if (n > 0)
    target[n] = '\0';
  if (n < 7 || strncmp (target, "/memfd:", 7) != 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)
      || st.st_size != (off_t) memory_mib << 20 || seals < 0 || (seals & ALL_SEALS) != ALL_SEALS)
    return rt_error_set (err, EPROTO, "internal", "the template keeper gave no sealed memfd of %u MiB", memory_mib);
  return 0;
}

/* Asks the keeper at @sock.  Return: 1 with *fd received, 0 when no
   keeper answers (none, a dead one's socket, one exiting), <0 on error.  */
static int
ask_keeper (const char *sock, int *fd, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  struct timeval tv = { .tv_sec = KEEPER_ANSWER_S };
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  char byte;
  struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
  struct cmsghdr *c;
  cleanup_close int s = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ssize_t n;

  if (strlen (sock) >= sizeof addr.sun_path)
    return rt_error_set (err, ENAMETOOLONG, "internal", "socket path too long: %s", sock);
  strcpy (addr.sun_path, sock);
  if (s < 0)
    return rt_error_set (err, errno, "internal", "socket: %s", strerror (errno));
  setsockopt (s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect (s, (struct sockaddr *) &addr, sizeof addr) < 0)
    {
      if (errno == ENOENT || errno == ECONNREFUSED)
        return 0;
      return rt_error_set (err, errno, "internal", "cannot reach the template keeper '%s': %s", sock, strerror (errno));
    }
  do
    n = recvmsg (s, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  c = n > 0 ? CMSG_FIRSTHDR (&msg) : NULL;
  if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN (sizeof (int)))
    return 0;
  memcpy (fd, CMSG_DATA (c), sizeof (int));
  return 1;
}

static void
send_fd (int conn, int fd)
{
  union
  {
    char buf[CMSG_SPACE (sizeof (int))];
    struct cmsghdr align;
  } u;
  struct iovec iov = { .iov_base = (char *) "F", .iov_len = 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
  struct cmsghdr *c = CMSG_FIRSTHDR (&msg);

  memset (u.buf, 0, sizeof u.buf);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (c), &fd, sizeof (int));
  sendmsg (conn, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* What a keeper knows: its template dir by identity (a dir made again
   under the same key is another RAM), its socket by identity (never
   unlink a successor's).  */
struct keeper
{
  const char *dir, *sock;
  dev_t dir_dev, sock_dev;
  ino_t dir_ino, sock_ino;
  unsigned keep_s;
};

static bool
same_file (const char *path, dev_t dev, ino_t ino)
{
  struct stat st;
  return lstat (path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static void __attribute__ ((noreturn))
keeper_exit (const struct keeper *k)
{
  if (same_file (k->sock, k->sock_dev, k->sock_ino))
    unlink (k->sock);
  _exit (0);
}

/* The keeper's loop: fd 3 listens, fd 4 is the memfd.  */
static void __attribute__ ((noreturn))
keeper_loop (const struct keeper *k)
{
  uint64_t last = rt_now_ms ();

  for (;;)
    {
      struct pollfd p = { .fd = 3, .events = POLLIN };
      uint64_t now = rt_now_ms (), left = last + (uint64_t) k->keep_s * 1000 - now;
      int conn;
      struct ucred cred;
      socklen_t len = sizeof cred;

      if (now >= last + (uint64_t) k->keep_s * 1000 || !same_file (k->dir, k->dir_dev, k->dir_ino))
        keeper_exit (k);
      if (poll (&p, 1, left < KEEPER_TICK_MS ? (int) left : KEEPER_TICK_MS) <= 0)
        continue;
      conn = accept4 (3, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (conn < 0)
        continue;
      /* Checked before the answer: a caller asking for a removed
         template gets no RAM, and this keeper goes.  */
      if (!same_file (k->dir, k->dir_dev, k->dir_ino))
        keeper_exit (k);
      if (getsockopt (conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid ())
        {
          send_fd (conn, 4);
          last = rt_now_ms ();
        }
      close (conn);
    }
}

/* Empties the effective, permitted and inheritable sets (no privilege
   needed) and the ambient one.  Return: 0, or -1.  */
static int
drop_held_caps (void)
{
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[2];

  memset (data, 0, sizeof data);
  prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  return syscall (SYS_capset, &hdr, data) < 0 ? -1 : 0;
}

/* In the keeper (the grandchild): nothing of the caller's stays.  */
static void __attribute__ ((noreturn))
keeper_main (const struct keeper *k, int listen_fd, int mfd)
{
  sigset_t none;
  int null;

  prctl (PR_SET_DUMPABLE, 0);
  if (chdir ("/") < 0)
    _exit (1);
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  signal (SIGPIPE, SIG_IGN);
  signal (SIGINT, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
  null = open ("/dev/null", O_RDWR);
  if (null < 0 || dup2 (null, 0) < 0 || dup2 (null, 1) < 0 || dup2 (null, 2) < 0)
    _exit (1);
  /* fd 3 listens, fd 4 the memfd, nothing else stays open.  */
  if (mfd == 3)
    mfd = fcntl (mfd, F_DUPFD_CLOEXEC, 5);
  if (mfd < 0 || (listen_fd != 3 && dup3 (listen_fd, 3, O_CLOEXEC) < 0) || (mfd != 4 && dup3 (mfd, 4, O_CLOEXEC) < 0))
    _exit (1);
  close_range (5, ~0U, 0);
  /* It only answers root on a 0600 socket in a 0700 dir it owns, and
     looks at a dir root owns: no capability is needed for that.  A caller
     that gave up CAP_SETPCAP (a monitor after its start) cannot shrink
     the bounding set: then at least every set it holds is emptied.  */
  if (rt_drop_privileges (0, NULL) < 0 && drop_held_caps () < 0)
    _exit (1);
  keeper_loop (k);
}

/* Starts the keeper of @t holding @mfd, listening at @sock (a dead
   keeper's socket there is replaced).  Called with the key's lock held,
   so there is one keeper at a time.  */
static int
start_keeper (rt_context *ctx, const struct rt_template *t, const struct stat *dir_st, const char *sock, int mfd,
              rt_error **err)
{
  struct keeper k = { .dir = t->dir, .sock = sock, .dir_dev = dir_st->st_dev, .dir_ino = dir_st->st_ino,
                      .keep_s = ctx->template_keep_s };
  cleanup_close int lfd = rt_listen_unix (sock, SOCK_NONBLOCK, err);
  struct stat st;
  pid_t pid;
  int status;

  if (lfd < 0)
    return lfd;
  if (chmod (sock, 0600) < 0 || lstat (sock, &st) < 0)
    {
      unlink (sock);
      return rt_error_set (err, errno, "internal", "cannot secure '%s': %s", sock, strerror (errno));
    }
  k.sock_dev = st.st_dev;
  k.sock_ino = st.st_ino;
  pid = fork ();
  if (pid < 0)
    {
      unlink (sock);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  if (pid == 0)
    {
      /* Double fork and setsid, as the monitor (monitor/monitor.c): no
         one has to reap it, no terminal's signal reaches it.  */
      setsid ();
      if (fork () != 0)
        _exit (0);
      keeper_main (&k, lfd, mfd);
    }
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  return 0;
}

/* Under the key's lock: asks again, else loads the RAM and starts its
   keeper with the same memfd.  */
static int
load_and_keep (rt_context *ctx, const struct rt_template *t, const char *sock, int *fd, rt_error **err)
{
  cleanup_close int dfd = -1, mfd = -1;
  struct stat st;
  int ret = ask_keeper (sock, fd, err);

  if (ret != 0)
    return ret;
  dfd = open (t->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0 || fstat (dfd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot open the template '%s': %s", t->dir, strerror (errno));
  ret = load_ram (dfd, t->dir, t->key, t->memory_mib, &mfd, err);
  if (ret < 0)
    return ret;
  ret = start_keeper (ctx, t, &st, sock, mfd, err);
  if (ret < 0)
    return ret;
  *fd = steal_fd (&mfd);
  return 1;
}

int
rt_template_ram_fd (rt_context *ctx, const struct rt_template *t, int *fd, rt_error **err)
{
  cleanup_free char *sock = keeper_path (ctx, t->key, ".sock", err);
  cleanup_free char *lock = NULL;
  cleanup_close int lockfd = -1, got = -1;
  int ret;

  *fd = -1;
  if (sock == NULL || (lock = keeper_path (ctx, t->key, ".lock", err)) == NULL)
    return -ENOMEM;
  ret = ask_keeper (sock, &got, err);
  if (ret == 0)
    {
      ret = rt_lock_file (lock, &lockfd, err);
      if (ret < 0)
        return ret;
      ret = load_and_keep (ctx, t, sock, &got, err);
    }
  if (ret < 0)
    return ret;
  ret = check_ram_fd (got, t->memory_mib, err);
  if (ret < 0)
    return ret;
  *fd = steal_fd (&got);
  return 0;
}

void
rt_template_keeper_stop (rt_context *ctx, const char *key)
{
  cleanup_free char *sock = keeper_path (ctx, key, ".sock", NULL);
  cleanup_free char *lock = keeper_path (ctx, key, ".lock", NULL);
  cleanup_close int lockfd = -1;
  uint64_t until = rt_now_ms () + 2000;
  int fd = -1;

  /* Its answer to a removed template is to close and exit; what it
     might still hand out here (a race with a new template of this key)
     is dropped.  */
  while (sock && rt_now_ms () < until && ask_keeper (sock, &fd, NULL) > 0)
    {
      close (fd);
      fd = -1;
      usleep (50 * 1000);
    }
  /* A socket nobody answers on is a killed keeper's: gone too, under the
     lock a starter holds while it binds a new one.  */
  if (sock && lock && access (sock, F_OK) == 0 && rt_lock_file (lock, &lockfd, NULL) == 0
      && ask_keeper (sock, &fd, NULL) == 0)
    unlink (sock);
  if (fd >= 0)
    close (fd);
}
