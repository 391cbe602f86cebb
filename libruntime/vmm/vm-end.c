/* vm-end.c - the small process that ends QEMU for a monitor without
   CAP_KILL or CAP_DAC_OVERRIDE (docs/ARCHITECTURE.md, "The monitor's
   capabilities").  (no header of its own: vm.h declares rt_vm_end_arm
   and rt_vm_end_run, which rt_vm_kill calls.)

   Forked before the monitor drops its capabilities, it keeps only those
   two, closes every fd but the read end of its pipe and QEMU's pidfd,
   and reads nothing else: no guest byte, no request, no file.  It waits
   for one byte or the pipe's end (the monitor gone, however), then does
   its one job: SIGKILL to QEMU, which runs as its own uid; wait for
   QEMU's exit on the pidfd; remove QEMU's dir (/vm in the jail), where
   QEMU's uid may have left a subdir of mode 0 that only CAP_DAC_OVERRIDE
   opens.  Then it exits: the monitor reaps QEMU and it.  */
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/privs.h"
#include "vmm/vm.h"

/* Every fd but @a and @b (a < b) goes.  */
static void
close_all_but (int a, int b)
{
  if (a > 0)
    syscall (SYS_close_range, 0, a - 1, 0);
  if (b > a + 1)
    syscall (SYS_close_range, a + 1, b - 1, 0);
  syscall (SYS_close_range, b + 1, ~0U, 0);
}

static void __attribute__ ((noreturn))
end_main (int cmd_fd, int pidfd, const char *vm_dir)
{
  struct pollfd exited = { .fd = pidfd, .events = POLLIN };
  char c;
  ssize_t n;

  close_all_but (cmd_fd < pidfd ? cmd_fd : pidfd, cmd_fd < pidfd ? pidfd : cmd_fd);
  prctl (PR_SET_NAME, "runtime-vm-end");
  /* The monitor's own signals are not ours: only SIGKILL ends us early.  */
  signal (SIGTERM, SIG_IGN);
  signal (SIGINT, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
  if (rt_drop_privileges (RT_VM_END_KEPT_CAPS, NULL) < 0)
    _exit (2);
  /* RT_VM_END_CMD, or EOF: the job is the same.  Any other byte too:
     there is nothing else this process does.  */
  do
    n = read (cmd_fd, &c, 1);
  while (n < 0 && errno == EINTR);
  if (syscall (SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
    _exit (3);
  while (poll (&exited, 1, -1) < 0 && errno == EINTR)
    ;
  if (vm_dir && rt_rm_rf (vm_dir, NULL) < 0)
    _exit (4);
  _exit (0);
}

int
rt_vm_end_arm (struct rt_vm *vm, rt_error **err)
{
  int p[2];
  pid_t pid;

  if (vm->end_pid > 0 || vm->pid <= 0 || vm->pidfd < 0)
    return 0;
  if (pipe2 (p, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "startup_failed", "pipe: %s", strerror (errno));
  pid = fork ();
  if (pid == 0)
    end_main (p[0], vm->pidfd, vm->jail_vm);
  close (p[0]);
  if (pid < 0)
    {
      close (p[1]);
      return rt_error_set (err, errno, "startup_failed", "cannot fork QEMU's ender: %s", strerror (errno));
    }
  vm->end_pid = pid;
  vm->end_fd = p[1];
  return 0;
}

int
rt_vm_end_run (struct rt_vm *vm)
{
  char c = RT_VM_END_CMD;
  int status = 0;
  ssize_t n;

  if (vm->end_pid <= 0)
    return 0;
  /* A failed write is EOF to it once closed: the same job.  */
  n = write (vm->end_fd, &c, 1);
  (void) n;
  close (vm->end_fd);
  while (waitpid (vm->end_pid, &status, 0) < 0 && errno == EINTR)
    ;
  vm->end_pid = 0;
  vm->end_fd = -1;
  return WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : -1;
}
