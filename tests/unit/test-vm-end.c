/* test-vm-end.c - QEMU's ender (vmm/vm-end.c): a monitor holding only
   RT_MONITOR_KEPT_CAPS cannot signal a QEMU of another uid nor open the
   mode-0 subdir that QEMU left in its dir, and still ends both with
   rt_vm_kill; a monitor that dies without a word has both ended too.
   "QEMU" is a child that takes a uid of its own and sleeps.  */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/privs.h"
#include "vmm/vm.h"
#include "tap.h"

/* Above RT_UID_RANGE_DEFAULT's: no sandbox's, no host user's.  */
#define QEMU_UID 2147000123

static char base[] = "/tmp/test-vm-end-XXXXXX";

/* A "QEMU" of QEMU_UID in @dir (root:QEMU_UID 0770, as vm.c makes /vm):
   it leaves dir/deep/file with deep at mode 0, then sleeps; with
   @pdeath it dies with its parent (what a failed test leaves).  */
static pid_t
start_qemu (const char *dir, bool pdeath, int *pidfd)
{
  int ready[2];
  char c;
  pid_t pid;

  if (mkdir (dir, 0700) < 0 || chown (dir, 0, QEMU_UID) < 0 || chmod (dir, 0770) < 0 || pipe (ready) < 0)
    return -1;
  pid = fork ();
  if (pid == 0)
    {
      char deep[256], file[300];
      snprintf (deep, sizeof deep, "%s/deep", dir);
      snprintf (file, sizeof file, "%s/file", deep);
      if (setgroups (0, NULL) < 0 || setresgid (QEMU_UID, QEMU_UID, QEMU_UID) < 0
          || setresuid (QEMU_UID, QEMU_UID, QEMU_UID) < 0 || (pdeath && prctl (PR_SET_PDEATHSIG, SIGKILL) < 0)
          || mkdir (deep, 0700) < 0
          || close (open (file, O_WRONLY | O_CREAT, 0600)) < 0 || chmod (deep, 0) < 0)
        _exit (1);
      if (write (ready[1], "r", 1) != 1)
        _exit (1);
      for (;;)
        pause ();
    }
  close (ready[1]);
  if (pid < 0 || read (ready[0], &c, 1) != 1)
    return -1;
  close (ready[0]);
  *pidfd = pidfd_open (pid, 0);
  return pid;
}

static void
vm_of (struct rt_vm *vm, pid_t pid, int pidfd, const char *dir)
{
  memset (vm, 0, sizeof *vm);
  vm->pid = pid;
  vm->pidfd = pidfd;
  vm->end_fd = -1;
  vm->lease.lock_fd = vm->lease.qemu_lock_fd = -1;
  vm->jailed = true;
  vm->jail_vm = strdup (dir);
}

/* The monitor, in a child: a bit per check that failed.  */
static int
monitor (const char *dir)
{
  struct rt_vm vm;
  char deep[256];
  struct stat st;
  int pidfd = -1, bad = 0;
  pid_t qemu = start_qemu (dir, true, &pidfd);

  if (qemu < 0 || pidfd < 0)
    return 1;
  vm_of (&vm, qemu, pidfd, dir);
  if (rt_vm_end_arm (&vm, NULL) < 0 || rt_drop_privileges (RT_MONITOR_KEPT_CAPS, NULL) < 0)
    {
      kill (qemu, SIGKILL);
      return 1;
    }
  /* What it can no longer do itself.  */
  snprintf (deep, sizeof deep, "%s/deep", dir);
  if (kill (qemu, 0) == 0 || errno != EPERM || opendir (deep) != NULL)
    bad |= 2;
  rt_vm_kill (&vm);
  if (vm.pid != -1 || waitpid (qemu, NULL, WNOHANG) >= 0 || errno != ECHILD)
    bad |= 4;
  if (lstat (dir, &st) == 0 || errno != ENOENT)
    bad |= 8;
  return bad;
}

/* A monitor that dies once its ender is armed and its caps dropped; its
   QEMU's pid on @out.  */
static void __attribute__ ((noreturn))
dying_monitor (const char *dir, int out)
{
  struct rt_vm vm;
  int pidfd = -1;
  pid_t qemu = start_qemu (dir, false, &pidfd);

  if (qemu < 0 || write (out, &qemu, sizeof qemu) != sizeof qemu)
    _exit (1);
  vm_of (&vm, qemu, pidfd, dir);
  if (rt_vm_end_arm (&vm, NULL) < 0 || rt_drop_privileges (RT_MONITOR_KEPT_CAPS, NULL) < 0)
    _exit (1);
  _exit (0);
}

static bool
gone_within (const char *path, pid_t pid, int ms)
{
  struct stat st;

  for (int i = 0; i < ms / 10; i++)
    {
      if (lstat (path, &st) < 0 && errno == ENOENT && kill (pid, 0) < 0 && errno == ESRCH)
        return true;
      while (waitpid (-1, NULL, WNOHANG) > 0)
        ;
      usleep (10000);
    }
  return false;
}

int
main (void)
{
  cleanup_free char *dir1 = NULL, *dir2 = NULL;
  int status = 0, out[2];
  pid_t pid, qemu = -1;

  ok (RT_MONITOR_KEPT_CAPS == UINT64_C (1) << CAP_NET_ADMIN, "the monitor keeps CAP_NET_ADMIN alone");
  ok (RT_VM_END_KEPT_CAPS == ((UINT64_C (1) << CAP_KILL) | (UINT64_C (1) << CAP_DAC_OVERRIDE)),
      "its ender keeps CAP_KILL and CAP_DAC_OVERRIDE");
  if (geteuid () != 0 || mkdtemp (base) == NULL)
    {
      printf ("ok 3 # SKIP not root\n1..3\n");
      return 0;
    }
  chmod (base, 0755);
  dir1 = rt_strdup_printf ("%s/vm1", base);
  dir2 = rt_strdup_printf ("%s/vm2", base);
  pid = fork ();
  if (pid == 0)
    _exit (monitor (dir1));
  waitpid (pid, &status, 0);
  ok (WIFEXITED (status) && WEXITSTATUS (status) != 1, "a monitor arms its ender and drops to the kept set");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 2),
      "… then it can neither signal QEMU's uid nor open QEMU's mode-0 subdir");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 4), "… and rt_vm_kill ends and reaps QEMU");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 8), "… and removes QEMU's dir, mode-0 subdir and all");

  /* The orphans (QEMU, the ender) become ours to reap.  */
  prctl (PR_SET_CHILD_SUBREAPER, 1);
  if (pipe (out) < 0)
    return 1;
  pid = fork ();
  if (pid == 0)
    dying_monitor (dir2, out[1]);
  close (out[1]);
  if (read (out[0], &qemu, sizeof qemu) != sizeof qemu)
    qemu = -1;
  waitpid (pid, &status, 0);
  ok (qemu > 0 && WIFEXITED (status) && WEXITSTATUS (status) == 0, "a monitor arms its ender and dies");
  ok (qemu > 0 && gone_within (dir2, qemu, 5000), "… and its ender kills QEMU and removes QEMU's dir");
  if (qemu > 0)
    kill (qemu, SIGKILL);
  while (waitpid (-1, NULL, WNOHANG) > 0)
    ;
  rt_rm_rf (base, NULL);
  return tap_done ();
}
