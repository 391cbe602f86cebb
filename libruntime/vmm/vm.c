/* vm.c - builds the QEMU microvm command line and runs it.  */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "vmm/accel.h"
#include "vmm/vm.h"

#define MAX_ARGS 64

int
rt_vm_start (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *mem = rt_strdup_printf ("%u", cfg->memory_mib);
  cleanup_free char *smp = rt_strdup_printf ("%u", cfg->vcpu);
  cleanup_free char *console = rt_strdup_printf ("file:%s/console.log", cfg->dir);
  cleanup_free char *append = NULL, *chardev = NULL, *drive = NULL, *qmp = NULL, *log = NULL, *tsc = NULL;
  const char *argv[MAX_ARGS];
  unsigned long khz = 0;
  bool tcg = strcmp (cfg->accel, "tcg") == 0;
  int n = 0, logfd;
  pid_t pid;

  memset (vm, 0, sizeof (*vm));
  vm->pid = -1;
  vm->pidfd = -1;
  if (ctx->qemu == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-system-x86_64 not found");
      return rt_error_hint (err, "apt-get install qemu-system-x86");
    }
  /* Without the TSC frequency, TCG guests hang at random after "Marking
     TSC unstable" (docs/ARCHITECTURE.md).  */
  if (tcg && (khz = rt_host_tsc_khz ()) > 0)
    tsc = rt_strdup_printf (" tsc_early_khz=%lu", khz);
  append = rt_strdup_printf ("console=ttyS0 quiet panic=-1 reboot=t%s%s%s%s", tsc ? tsc : "",
                             cfg->disk && cfg->disk_mib > 0 ? " rt.growfs=1" : "", cfg->cmdline ? " " : "",
                             cfg->cmdline ? cfg->cmdline : "");
  vm->agent_sock = rt_strdup_printf ("%s/agent.sock", cfg->dir);
  vm->console_log = rt_strdup_printf ("%s/console.log", cfg->dir);
  chardev = rt_strdup_printf ("socket,id=agent,path=%s,server=on,wait=off", vm->agent_sock);
  qmp = rt_strdup_printf ("unix:%s/qmp.sock,server=on,wait=off", cfg->dir);
  log = rt_strdup_printf ("%s/qemu.log", cfg->dir);
  if (cfg->disk && cfg->disk_mib > 0)
    {
      /* A larger disk: a qcow2 overlay of that size over the shared base,
         in the state dir; the agent grows the file system (rt.growfs).  */
      cleanup_free char *overlay = rt_strdup_printf ("%s/overlay.qcow2", cfg->dir);
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
      drive = rt_strdup_printf ("id=root,file=%s,format=qcow2,if=none,discard=unmap", overlay);
    }
  else if (cfg->disk)
    drive = rt_strdup_printf ("id=root,file=%s,format=raw,if=none,snapshot=on,discard=unmap", cfg->disk);
  if (!mem || !smp || !console || !append || !vm->agent_sock || !vm->console_log || !chardev || !qmp || !log
      || (cfg->disk && !drive))
    return rt_error_oom (err);

  argv[n++] = ctx->qemu;
  argv[n++] = "-M";
  argv[n++] = "microvm,x-option-roms=off,isa-serial=on,rtc=on";
  argv[n++] = "-accel";
  argv[n++] = tcg ? "tcg,tb-size=64" : "kvm";
  argv[n++] = "-cpu";
  argv[n++] = tcg ? "max" : "host";
  argv[n++] = "-m";
  argv[n++] = mem;
  argv[n++] = "-smp";
  argv[n++] = smp;
  /* Named threads ("CPU 0/TCG"): the meter bills exactly those.  */
  argv[n++] = "-name";
  argv[n++] = "runtime,debug-threads=on";
  argv[n++] = "-nodefaults";
  argv[n++] = "-no-user-config";
  argv[n++] = "-display";
  argv[n++] = "none";
  argv[n++] = "-no-reboot";
  argv[n++] = "-serial";
  argv[n++] = console;
  argv[n++] = "-kernel";
  argv[n++] = cfg->vmlinux;
  argv[n++] = "-initrd";
  argv[n++] = cfg->initramfs;
  argv[n++] = "-append";
  argv[n++] = append;
  if (cfg->channel)
    {
      argv[n++] = "-device";
      argv[n++] = "virtio-serial-device";
      argv[n++] = "-chardev";
      argv[n++] = chardev;
      argv[n++] = "-device";
      argv[n++] = "virtserialport,chardev=agent,name=runtime.agent";
      argv[n++] = "-qmp";
      argv[n++] = qmp;
    }
  if (cfg->tap_fd > 0)
    {
      /* The tap is fd 3 in QEMU (see the child below).  */
      argv[n++] = "-netdev";
      argv[n++] = "tap,id=net0,fd=3,vhost=off";
      argv[n++] = "-device";
      argv[n++] = "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56";
    }
  if (cfg->disk)
    {
      argv[n++] = "-drive";
      argv[n++] = drive;
      argv[n++] = "-device";
      argv[n++] = "virtio-blk-device,drive=root";
    }
  argv[n] = NULL;

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
      if (cfg->tap_fd > 0)
        {
          if (cfg->tap_fd == 3)
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
      /* snapshot=on puts its temporary overlay in $TMPDIR: keep it in the
         state dir so it goes with the sandbox even after a SIGKILL.  */
      setenv ("TMPDIR", cfg->dir, 1);
      execv (argv[0], (char **) argv);
      dprintf (2, "cannot run %s: %s\n", argv[0], strerror (errno));
      _exit (127);
    }
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
  free (vm->agent_sock);
  free (vm->console_log);
  vm->agent_sock = vm->console_log = NULL;
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
