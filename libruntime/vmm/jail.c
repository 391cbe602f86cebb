/* jail.c - QEMU's start in its jail (jail.h): the parent's clone3 and
   the child's steps up to exec.  */
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmm/jail.h"

/* What a failed step writes on the report pipe.  */
struct jail_msg
{
  int err;
  char step[248];
};

void
rt_jail_init (struct rt_jail *j)
{
  memset (j, 0, sizeof (*j));
  for (size_t i = 0; i < RT_CGROUP_MAX_FDS; i++)
    j->cgroup_fds[i] = -1;
  for (size_t i = 0; i < RT_QEMU_NFDS; i++)
    j->fds[i] = -1;
  j->log_fd = -1;
  j->netns_fd = -1;
}

void
rt_jail_clear (struct rt_jail *j)
{
  for (size_t i = 0; i < j->n_binds; i++)
    {
      free (j->binds[i].src);
      free (j->binds[i].dst);
    }
  free (j->binds);
  for (size_t i = 0; i < j->n_dirs; i++)
    free (j->dirs[i]);
  free (j->dirs);
  free (j->root);
  j->binds = NULL;
  j->dirs = NULL;
  j->root = NULL;
  j->n_binds = j->n_dirs = 0;
}

/* Adds @path (under the root) to the dirs to make, once.  */
static int
add_dir (struct rt_jail *j, const char *path, size_t len)
{
  char **dirs;
  char *d;

  for (size_t i = 0; i < j->n_dirs; i++)
    if (strlen (j->dirs[i]) == strlen (j->root) + len && strncmp (j->dirs[i] + strlen (j->root), path, len) == 0)
      return 0;
  d = rt_strdup_printf ("%s%.*s", j->root, (int) len, path);
  dirs = d ? realloc (j->dirs, (j->n_dirs + 1) * sizeof (char *)) : NULL;
  if (dirs == NULL)
    {
      free (d);
      return -ENOMEM;
    }
  j->dirs = dirs;
  j->dirs[j->n_dirs++] = d;
  return 0;
}

int
rt_jail_bind (struct rt_jail *j, const char *src, const char *path, unsigned long flags, bool dir, rt_error **err)
{
  struct rt_jail_bind *binds;

  if (path[0] != '/' || j->root == NULL)
    return rt_error_set (err, EINVAL, "internal", "not a path in the jail: '%s'", path);
  /* Every directory above it, outermost first, then itself if a dir.  */
  for (const char *p = strchr (path + 1, '/'); p; p = strchr (p + 1, '/'))
    if (add_dir (j, path, p - path) < 0)
      return rt_error_oom (err);
  if (dir && add_dir (j, path, strlen (path)) < 0)
    return rt_error_oom (err);
  binds = realloc (j->binds, (j->n_binds + 1) * sizeof (*binds));
  if (binds == NULL)
    return rt_error_oom (err);
  j->binds = binds;
  binds[j->n_binds] = (struct rt_jail_bind){
    .src = strdup (src), .dst = rt_strdup_printf ("%s%s", j->root, path), .flags = flags, .dir = dir
  };
  if (binds[j->n_binds].src == NULL || binds[j->n_binds].dst == NULL)
    {
      free (binds[j->n_binds].src);
      free (binds[j->n_binds].dst);
      return rt_error_oom (err);
    }
  j->n_binds++;
  return 0;
}

/* ---- the child: system calls only ---------------------------------------- */

static void
append (char *buf, size_t size, size_t *len, const char *s)
{
  for (; s && *s && *len + 1 < size; s++)
    buf[(*len)++] = *s;
  buf[*len] = '\0';
}

/* Reports "@step @what" and errno on @report_fd, then dies.  */
static void __attribute__ ((noreturn))
fail (int report_fd, const char *step, const char *what)
{
  struct jail_msg m = { .err = errno };
  size_t len = 0;

  append (m.step, sizeof m.step, &len, step);
  if (what)
    {
      append (m.step, sizeof m.step, &len, " ");
      append (m.step, sizeof m.step, &len, what);
    }
  if (write (report_fd, &m, sizeof m) < 0)
    _exit (126);
  _exit (127);
}

/* Every fd the child still needs, lifted above QEMU's range (so that
   placing one cannot overwrite another), then QEMU's own put at 0 to
   3 + RT_QEMU_NFDS - 1.  */
static void
place_fds (struct rt_jail *j, int *report_fd, int *parent_fd)
{
  const int top = 3 + RT_QEMU_NFDS;
  int *lift[] = { report_fd, parent_fd, &j->netns_fd, &j->log_fd };
  int devnull;

  for (size_t i = 0; i < sizeof lift / sizeof lift[0]; i++)
    if (*lift[i] >= 0)
      {
        int fd = fcntl (*lift[i], F_DUPFD_CLOEXEC, top);
        if (fd < 0)
          fail (*report_fd, "move fds", NULL);
        *lift[i] = fd;
      }
  for (size_t i = 0; i < RT_CGROUP_MAX_FDS; i++)
    if (j->cgroup_fds[i] >= 0 && (j->cgroup_fds[i] = fcntl (j->cgroup_fds[i], F_DUPFD_CLOEXEC, top)) < 0)
      fail (*report_fd, "move fds", NULL);
  for (size_t i = 0; i < RT_QEMU_NFDS; i++)
    if (j->fds[i] >= 0 && (j->fds[i] = fcntl (j->fds[i], F_DUPFD_CLOEXEC, top)) < 0)
      fail (*report_fd, "move fds", NULL);
  /* dup2 clears close-on-exec on the copy: those are what QEMU gets.  */
  for (int i = 0; i < RT_QEMU_NFDS; i++)
    {
      if (j->fds[i] < 0)
        close (3 + i);
      else if (dup2 (j->fds[i], 3 + i) < 0)
        fail (*report_fd, "place fds", NULL);
    }
  devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || dup2 (devnull, 0) < 0 || dup2 (j->log_fd, 1) < 0 || dup2 (j->log_fd, 2) < 0)
    fail (*report_fd, "place fds", NULL);
  /* Whatever else the caller had open stays out of QEMU.  */
  if (syscall (SYS_close_range, top, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    fail (*report_fd, "close_range", NULL);
}

/* The new root: a tmpfs of empty mount points, each bound read-only to
   the one file QEMU opens there (writable only /dev/null and its own
   dir), pivoted into, the host's tree detached.  */
static void
build_root (const struct rt_jail *j, int report_fd)
{
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    fail (report_fd, "make the mounts private", NULL);
  if (mount ("tmpfs", j->root, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=1024") < 0)
    fail (report_fd, "mount the root tmpfs on", j->root);
  for (size_t i = 0; i < j->n_dirs; i++)
    if (mkdir (j->dirs[i], 0755) < 0)
      fail (report_fd, "mkdir", j->dirs[i]);
  for (size_t i = 0; i < j->n_binds; i++)
    {
      const struct rt_jail_bind *b = &j->binds[i];
      if (!b->dir)
        {
          int fd = open (b->dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
          if (fd < 0)
            fail (report_fd, "create the mount point", b->dst);
          close (fd);
        }
      if (mount (b->src, b->dst, NULL, MS_BIND, NULL) < 0)
        fail (report_fd, "bind", b->src);
      if (mount (NULL, b->dst, NULL, MS_BIND | MS_REMOUNT | b->flags, NULL) < 0)
        fail (report_fd, "remount", b->dst);
    }
  /* Mounted by the child of clone3, so of QEMU's own PID namespace:
     only its own process shows, and nothing but the pid dirs.  */
  if (j->proc)
    {
      char proc[PATH_MAX];
      if ((size_t) snprintf (proc, sizeof proc, "%s/proc", j->root) >= sizeof proc
          || (mkdir (proc, 0555) < 0 && errno != EEXIST)
          || mount ("proc", proc, "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") < 0)
        fail (report_fd, "mount /proc in", j->root);
    }
  /* pivot_root (".", "."): the old root is stacked on the new one, then
     detached; no directory for it is needed.  */
  if (chdir (j->root) < 0 || syscall (SYS_pivot_root, ".", ".") < 0)
    fail (report_fd, "pivot_root to", j->root);
  if (umount2 (".", MNT_DETACH) < 0 || chdir ("/") < 0)
    fail (report_fd, "detach the host's root", NULL);
  if (mount (NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
    fail (report_fd, "remount the root read-only", NULL);
}

/* The cgroup, the limits, then the credentials: the uid last but one,
   since everything before it needs root.  */
static void
drop_privileges (const struct rt_jail *j, int report_fd)
{
  struct rlimit zero = { 0, 0 };
  struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
  struct __user_cap_data_struct none[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

  for (size_t i = 0; i < RT_CGROUP_MAX_FDS; i++)
    if (j->cgroup_fds[i] >= 0 && write (j->cgroup_fds[i], "0", 1) != 1)
      fail (report_fd, "join the cgroup", NULL);
  if (setrlimit (RLIMIT_CORE, &zero) < 0 || setrlimit (RLIMIT_NOFILE, &j->nofile) < 0
      || setrlimit (RLIMIT_FSIZE, &j->fsize) < 0 || setrlimit (RLIMIT_NPROC, &j->nproc) < 0)
    fail (report_fd, "setrlimit", NULL);
  /* Past the file size limit a write fails with EFBIG instead of
     killing QEMU; an ignored signal stays ignored across exec.  */
  signal (SIGXFSZ, SIG_IGN);
  /* Raw system calls: glibc's wrappers would try to signal the threads
     the parent had.  */
  if (syscall (SYS_setgroups, j->kvm_gid > 0 ? 1 : 0, &j->kvm_gid) < 0)
    fail (report_fd, "setgroups", NULL);
  if (syscall (SYS_setresgid, j->uid, j->uid, j->uid) < 0)
    fail (report_fd, "setresgid", NULL);
  for (int cap = 0; cap <= j->cap_last; cap++)
    if (prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
      fail (report_fd, "drop the capability bounding set", NULL);
  if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
    fail (report_fd, "clear the ambient capabilities", NULL);
  /* From uid 0 to another: the permitted and effective sets empty.  */
  if (syscall (SYS_setresuid, j->uid, j->uid, j->uid) < 0)
    fail (report_fd, "setresuid", NULL);
  if (syscall (SYS_capset, &hdr, none) < 0)
    fail (report_fd, "clear the inheritable capabilities", NULL);
  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    fail (report_fd, "no_new_privs", NULL);
}

static void __attribute__ ((noreturn))
child (struct rt_jail *j, int report_fd, int parent_fd)
{
  struct pollfd parent = { .events = POLLIN };
  sigset_t none;

  /* Its own session keeps the terminal's Ctrl-C away from QEMU: the
     caller decides what an interrupt means.  */
  setsid ();
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  place_fds (j, &report_fd, &parent_fd);
  /* QEMU has no business with the host's network.  */
  if (j->netns_fd > 0 && setns (j->netns_fd, CLONE_NEWNET) < 0)
    fail (report_fd, "enter the sandbox's network namespace", NULL);
  if (!j->off)
    {
      build_root (j, report_fd);
      drop_privileges (j, report_fd);
    }
  else if (chdir ("/") < 0)
    fail (report_fd, "chdir /", NULL);
  /* Death of the caller must not leave a VM behind.  Set after the
     credentials change, which clears it; the caller may have died
     before: its pidfd says (getppid is 0 in a new PID namespace).  */
  if (prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    fail (report_fd, "PR_SET_PDEATHSIG", NULL);
  parent.fd = parent_fd;
  if (poll (&parent, 1, 0) != 0)
    _exit (1);
  execve (j->argv[0], j->argv, j->envp);
  fail (report_fd, "exec", j->argv[0]);
}

/* ---- the parent ------------------------------------------------------------ */

/* The child's report: 0 at EOF (exec happened), else its step.  */
static int
read_report (int fd, pid_t pid, rt_error **err)
{
  struct jail_msg m;
  ssize_t n;

  do
    n = read (fd, &m, sizeof m);
  while (n < 0 && errno == EINTR);
  if (n == 0)
    return 0;
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
  if (n != (ssize_t) sizeof m)
    return rt_error_set (err, EIO, "startup_failed", "the jail could not be set up: its process died");
  m.step[sizeof m.step - 1] = '\0';
  return rt_error_set (err, m.err, "startup_failed", "the jail could not be set up: %s: %s", m.step, strerror (m.err));
}

int
rt_jail_spawn (struct rt_jail *j, pid_t *pid, int *pidfd, uint64_t *setup_us, rt_error **err)
{
  cleanup_close int parent_fd = pidfd_open (getpid (), 0);
  int report[2], child_pidfd = -1, ret;
  struct clone_args ca = { .flags = CLONE_PIDFD, .pidfd = (uintptr_t) &child_pidfd, .exit_signal = SIGCHLD };
  uint64_t start;
  long p;

  if (parent_fd < 0)
    return rt_error_set (err, errno, "startup_failed", "pidfd_open: %s", strerror (errno));
  if (pipe2 (report, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "startup_failed", "pipe: %s", strerror (errno));
  /* QEMU is PID 1 of its own PID namespace: it sees no other process,
     and its pid and pidfd are ours directly.  */
  if (!j->off)
    ca.flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  start = rt_now_us ();
  p = syscall (SYS_clone3, &ca, sizeof ca);
  if (p == 0)
    {
      close (report[0]);
      child (j, report[1], parent_fd);
    }
  close (report[1]);
  if (p < 0)
    {
      close (report[0]);
      return rt_error_set (err, errno, "startup_failed", "the jail could not be set up: clone3: %s", strerror (errno));
    }
  ret = read_report (report[0], (pid_t) p, err);
  close (report[0]);
  if (ret < 0)
    {
      close (child_pidfd);
      return ret;
    }
  *setup_us = rt_now_us () - start;
  *pid = (pid_t) p;
  *pidfd = child_pidfd;
  return 0;
}
