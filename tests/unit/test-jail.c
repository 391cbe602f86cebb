/* test-jail.c - a jail step that fails fails the start, naming the step
   (vmm/jail.h): no QEMU runs, nothing is left.  As root the bind of a
   missing file fails; elsewhere clone3 into new namespaces does: either
   way the same error shape.  */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "tap.h"
#include "vmm/jail.h"

static void
test_failed_step (void)
{
  char dir[] = "/tmp/rt-test-jail.XXXXXX";
  char *argv[] = { (char *) "/bin/true", NULL }, *envp[] = { NULL };
  struct rt_jail j;
  rt_error *err = NULL;
  pid_t pid = -1;
  int pidfd = -1, ret;
  uint64_t us = 0;

  rt_jail_init (&j);
  ok (mkdtemp (dir) != NULL, "a root dir");
  j.root = strdup (dir);
  j.uid = 1879113727;
  j.cap_last = 40;
  j.nofile.rlim_cur = j.nofile.rlim_max = 64;
  j.fsize = j.nproc = j.nofile;
  j.log_fd = 2;
  j.argv = argv;
  j.envp = envp;
  ok (rt_jail_bind (&j, "/nonexistent/qemu-file", "/usr/bin/qemu", RT_JAIL_RO, false, &err) == 0,
      "a bind is prepared");
  ok (j.n_dirs == 2 && strstr (j.dirs[0], "/usr") && strstr (j.dirs[1], "/usr/bin"),
      "the dirs above it are made, outermost first");
  ret = rt_jail_spawn (&j, &pid, &pidfd, &us, &err);
  ok (ret < 0 && err && strcmp (err->code, "startup_failed") == 0
          && strncmp (err->msg, "the jail could not be set up: ", 30) == 0,
      "the start fails: %s", err ? err->msg : "(no error)");
  if (geteuid () == 0)
    ok (err && strstr (err->msg, "bind /nonexistent/qemu-file: No such file or directory"),
        "as root, the failed step is named with its reason");
  ok (pid == -1 && pidfd == -1, "no process is handed back");
  ok (rmdir (dir) == 0, "the root dir is left empty (the mounts were the child's)");
  rt_error_free (err);
  rt_jail_clear (&j);
}

int
main (void)
{
  test_failed_step ();
  return tap_done ();
}
