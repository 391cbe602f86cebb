/* vm.c - runs one QEMU microvm: its disk overlay, its process, its end.
   The command line itself is qemu-args.c's.  */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "vmm/accel.h"
#include "vmm/qemu-args.h"
#include "vmm/vm.h"

/* Where the disk's writes go: @cfg->disk_dir, 0700, with "live" a
   symlink to the state dir: the reaper (sandbox/store.c) removes a disk
   dir whose state dir is gone, even one another state dir's.  */
static int
make_disk_dir (const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *live = rt_strdup_printf ("%s/live", cfg->disk_dir);

  if (live == NULL)
    return rt_error_oom (err);
  if (mkdir (cfg->disk_dir, 0700) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", cfg->disk_dir, strerror (errno));
  vm->disk_dir = strdup (cfg->disk_dir);
  if (vm->disk_dir == NULL)
    {
      rmdir (cfg->disk_dir);
      return rt_error_oom (err);
    }
  if (symlink (cfg->dir, live) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", live, strerror (errno));
  return 0;
}

/* A larger disk: a qcow2 overlay of @cfg->disk_mib over the shared base,
   in the disk dir; the agent grows the file system (rt.growfs).  Its
   virtual size is the sandbox's disk: the guest cannot write past it, so
   the file stays under that plus qcow2's metadata (an L2 entry per 64 KiB
   cluster and a refcount: under 0.1%).  */
static int
make_overlay (const struct rt_vm_config *cfg, const char *dir, char **path, rt_error **err)
{
  cleanup_free char *overlay = rt_strdup_printf ("%s/overlay.qcow2", dir);
  cleanup_free char *size = rt_strdup_printf ("%uM", cfg->disk_mib);
  cleanup_free char *qemu_img = rt_find_program ("qemu-img");
  cleanup_free char *out = NULL;
  char *img_argv[] = { qemu_img, (char *) "create", (char *) "-q", (char *) "-f", (char *) "qcow2", (char *) "-b",
                       (char *) cfg->disk, (char *) "-F", (char *) "raw", overlay, size, NULL };
  int rc;

  if (qemu_img == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-img not found");
      return rt_error_hint (err, "apt-get install qemu-utils");
    }
  if (overlay == NULL || size == NULL)
    return rt_error_oom (err);
  rc = rt_run_capture (img_argv, &out, err);
  if (rc < 0)
    return rc;
  if (rc != 0)
    return rt_error_set (err, EIO, "startup_failed", "qemu-img could not make the disk: %s", out ? out : "");
  *path = steal_pointer (&overlay);
  return 0;
}

/* In the child, between fork and exec: never returns.  @env: QEMU's whole
   environment.  */
static void
exec_qemu (const struct rt_vm_config *cfg, char **argv, char **env, int logfd)
{
  int devnull = open ("/dev/null", O_RDONLY);
  pid_t parent = getppid ();
  sigset_t all;

  /* Its own session keeps the terminal's Ctrl-C away from QEMU: the
     caller decides what an interrupt means.  Death of the caller must
     not leave a VM behind.  */
  setsid ();
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () != parent)
    _exit (1);
  sigemptyset (&all);
  sigprocmask (SIG_SETMASK, &all, NULL);
  dup2 (devnull, 0);
  dup2 (logfd, 1);
  dup2 (logfd, 2);
  /* The console socket moves to fd 4 first: it may be fd 3, where the
     tap goes.  */
  if (cfg->console_fd > 0)
    {
      int con = cfg->console_fd == 3 ? fcntl (3, F_DUPFD_CLOEXEC, 5) : cfg->console_fd;
      if (con == 4)
        fcntl (4, F_SETFD, 0);
      else if (cfg->tap_fd == 4)
        {
          /* The tap's fd is taken next: keep a copy out of the way.  */
          dup2 (4, 3);
          dup2 (con, 4);
        }
      else
        dup2 (con, 4);
    }
  if (cfg->tap_fd > 0)
    {
      if (cfg->tap_fd == 3 || (cfg->tap_fd == 4 && cfg->console_fd > 0))
        fcntl (3, F_SETFD, 0);
      else
        dup2 (cfg->tap_fd, 3);
    }
  /* QEMU has no business with the host's network.  */
  if (cfg->netns_fd > 0 && setns (cfg->netns_fd, CLONE_NEWNET) < 0)
    {
      dprintf (2, "cannot enter the sandbox's network namespace: %s\n", strerror (errno));
      _exit (127);
    }
  /* Nothing of the caller's directory either: its paths are all absolute.
     exec makes QEMU dumpable again (it has no option to undo that): its
     /proc/PID/environ is readable by its own user, so it holds nothing
     but what it needs (spawn_qemu).  */
  if (chdir ("/") < 0)
    _exit (127);
  execve (argv[0], argv, env);
  dprintf (2, "cannot run %s: %s\n", argv[0], strerror (errno));
  _exit (127);
}

/* Runs @argv with its output in <dir>/qemu.log; fills vm->pid and
   vm->pidfd.  */
static int
spawn_qemu (const struct rt_vm_config *cfg, char **argv, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *log = rt_strdup_printf ("%s/qemu.log", cfg->dir);
  /* snapshot=on puts its temporary overlay (the size of the base disk) in
     $TMPDIR: keep it in the disk dir, off the state dir's RAM, so that it
     goes with the sandbox even after a SIGKILL.  Else an environment from
     nothing: no secret of the caller's reaches QEMU.  */
  cleanup_free char *tmpdir = rt_strdup_printf ("TMPDIR=%s", cfg->disk_dir ? cfg->disk_dir : cfg->dir);
  char *env[] = { (char *) "PATH=" RT_CLEAN_PATH, tmpdir, NULL };
  int logfd;
  pid_t pid;

  if (log == NULL || tmpdir == NULL)
    return rt_error_oom (err);
  logfd = open (log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", log, strerror (errno));
  pid = fork ();
  if (pid < 0)
    {
      close (logfd);
      return rt_error_set (err, errno, "startup_failed", "fork: %s", strerror (errno));
    }
  if (pid == 0)
    exec_qemu (cfg, argv, env, logfd);
  close (logfd);
  vm->pid = pid;
  vm->pidfd = pidfd_open (pid, 0);
  if (vm->pidfd < 0)
    {
      int e = errno;
      rt_vm_kill (vm);
      return rt_error_set (err, e, "startup_failed", "pidfd_open: %s", strerror (e));
    }
  fcntl (vm->pidfd, F_SETFD, FD_CLOEXEC);
  return 0;
}

int
rt_vm_start (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *qmp = rt_strdup_printf ("%s/qmp.sock", cfg->dir);
  cleanup_free char *overlay = NULL;
  cleanup_strv char **argv = NULL;
  bool tcg = strcmp (cfg->accel, "tcg") == 0;
  struct rt_qemu_args args = { .qemu = ctx->qemu, .accel = cfg->accel, .vcpu = cfg->vcpu,
                               .memory_mib = cfg->memory_mib, .vmlinux = cfg->vmlinux,
                               .initramfs = cfg->initramfs, .cmdline = cfg->cmdline, .tap = cfg->tap_fd > 0,
                               .disk = cfg->disk, .disk_overlay = cfg->disk && cfg->disk_mib > 0,
                               .console_sock = cfg->console_fd > 0 };
  int ret;

  memset (vm, 0, sizeof (*vm));
  vm->pid = -1;
  vm->pidfd = -1;
  if (ctx->qemu == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-system-x86_64 not found");
      return rt_error_hint (err, "apt-get install qemu-system-x86");
    }
  args.tsc_khz = tcg ? rt_host_tsc_khz () : 0;
  vm->agent_sock = rt_strdup_printf ("%s/agent.sock", cfg->dir);
  vm->console_log = rt_strdup_printf ("%s/console.log", cfg->dir);
  if (cfg->disk && cfg->disk_dir)
    {
      ret = make_disk_dir (cfg, vm, err);
      if (ret < 0)
        return ret;
    }
  if (args.disk_overlay)
    {
      ret = make_overlay (cfg, cfg->disk_dir ? cfg->disk_dir : cfg->dir, &overlay, err);
      if (ret < 0)
        return ret;
      args.disk = overlay;
    }
  if (qmp == NULL || vm->agent_sock == NULL || vm->console_log == NULL)
    return rt_error_oom (err);
  args.console_log = vm->console_log;
  args.agent_sock = cfg->channel ? vm->agent_sock : NULL;
  args.qmp_sock = qmp;
  ret = rt_qemu_argv (&args, &argv, err);
  if (ret < 0)
    return ret;
  return spawn_qemu (cfg, argv, vm, err);
}

int
rt_vm_wait (struct rt_vm *vm, int timeout_ms, int *status)
{
  struct pollfd pfd = { .fd = vm->pidfd, .events = POLLIN };
  int st = 0;

  if (vm->pid <= 0)
    return 1;
  if (timeout_ms != 0 && poll (&pfd, 1, timeout_ms) <= 0)
    return 0;
  if (waitpid (vm->pid, &st, WNOHANG) != vm->pid)
    return 0;
  vm->pid = -1;
  if (status)
    *status = st;
  return 1;
}

void
rt_vm_kill (struct rt_vm *vm)
{
  if (vm->pid > 0)
    {
      kill (vm->pid, SIGKILL);
      while (waitpid (vm->pid, NULL, 0) < 0 && errno == EINTR)
        ;
      vm->pid = -1;
    }
  if (vm->pidfd >= 0)
    close (vm->pidfd);
  vm->pidfd = -1;
  /* QEMU is gone: nothing writes the disk any more.  */
  if (vm->disk_dir)
    rt_rm_rf (vm->disk_dir, NULL);
  free (vm->agent_sock);
  free (vm->console_log);
  free (vm->disk_dir);
  vm->agent_sock = vm->console_log = vm->disk_dir = NULL;
}

int
rt_vm_startup_error (struct rt_vm *vm, rt_error **err, const char *what)
{
  cleanup_free char *tail = vm->console_log ? rt_file_tail (vm->console_log, 40) : NULL;
  const char *show = tail, *panic;
  int lines = 0;

  rt_error_set (err, EIO, "startup_failed", "the sandbox did not start: %s", what);
  if (tail == NULL || *tail == '\0')
    return rt_error_hint (err, "the guest printed nothing on its console");
  /* A panic's cause is on the lines just before its stack dump.  */
  panic = strstr (tail, "Kernel panic");
  if (panic)
    {
      for (show = panic; show > tail && lines < 3; show--)
        if (show[-1] == '\n' && ++lines == 3)
          break;
      return rt_error_hint (err, "console:\n%.*s", (int) (strchrnul (panic, '\n') - show), show);
    }
  for (show = tail + strlen (tail); show > tail; show--)
    if (show[-1] == '\n' && ++lines == 8)
      break;
  return rt_error_hint (err, "last console lines:\n%s", show);
}
