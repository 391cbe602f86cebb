/* test-cgroup.c - a QEMU's control group (vmm/cgroup.c) on this host's
   real hierarchy: the limits of a shape, the group's files holding them,
   the limits holding against a process in it, the group gone after
   destroy, and the sweep leaving a group that is in use.  Needs root
   (CI has it); a hierarchy the host lacks is skipped, not failed.  */
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "vmm/cgroup.h"
#include "vmm/uidpool.h"

#define MIB (1024ULL * 1024)

static void
skip (const char *why)
{
  printf ("ok %d # SKIP %s\n", ++tap_n, why);
}

static unsigned long long
read_u64 (const char *dir, const char *file)
{
  char path[512];
  cleanup_free char *data = NULL;

  snprintf (path, sizeof path, "%s/%s", dir, file);
  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return 0;
  return strtoull (data, NULL, 10);
}

static bool
exists (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0;
}

static void
test_limits_for (void)
{
  struct rt_cgroup_limits l;

  rt_cgroup_limits_for (512, 1, false, &l);
  ok (l.memory_bytes == (512 + 256 + 512 / 32) * MIB, "512 MiB: guest + 256 MiB of QEMU + 1/32 (%llu MiB)",
      (unsigned long long) (l.memory_bytes / MIB));
  ok (l.pids == 8 + 1 + 64 + 32, "1 vCPU: room for QEMU's threads and its whole block pool (%u)", l.pids);
  ok (l.cpu_percent == 0, "a paid sandbox has no CPU cap");
  rt_cgroup_limits_for (4096, 2, true, &l);
  ok (l.memory_bytes == (4096 + 256 + 128) * MIB, "4096 MiB: %llu MiB", (unsigned long long) (l.memory_bytes / MIB));
  ok (l.cpu_percent == 200, "a trial's QEMU gets as many cores as its vCPUs");
}

/* Holds @uid's lock as a claimer would (uidpool.c): the sweep must then
   leave its group.  Returns the lock's fd.  */
static int
hold_uid (uid_t uid)
{
  char path[64];
  int fd;

  mkdir (RT_UID_LOCK_DIR, 0700);
  snprintf (path, sizeof path, RT_UID_LOCK_DIR "/%u", (unsigned) uid);
  fd = open (path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) < 0)
    {
      close (fd);
      return -1;
    }
  return fd;
}

static const char *
path_of (const struct rt_cgroup *cg, const char *controller)
{
  char needle[64];

  snprintf (needle, sizeof needle, "/%s/runtime/", controller);
  for (size_t i = 0; i < cg->n; i++)
    if (strstr (cg->paths[i], needle) || (strcmp (controller, "unified") == 0 && i == 0))
      return cg->paths[i];
  return NULL;
}

/* The limit files hold what was asked.  */
static void
test_files (const struct rt_cgroup *cg, bool v2, const struct rt_cgroup_limits *l)
{
  const char *mem = path_of (cg, v2 ? "unified" : "memory"), *pids = path_of (cg, v2 ? "unified" : "pids");
  const char *cpu = path_of (cg, v2 ? "unified" : "cpu");

  if (mem == NULL)
    skip ("no memory group on this host");
  else if (v2)
    ok (read_u64 (mem, "memory.max") == l->memory_bytes, "memory.max is the limit");
  else
    {
      ok (read_u64 (mem, "memory.limit_in_bytes") == l->memory_bytes, "memory.limit_in_bytes is the limit");
      if (access ("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", F_OK) == 0)
        ok (read_u64 (mem, "memory.memsw.limit_in_bytes") == l->memory_bytes, "memory+swap is the same limit");
      else
        skip ("no memory.memsw here (swap accounting off)");
    }
  if (pids == NULL)
    skip ("no pids group on this host");
  else
    ok (read_u64 (pids, "pids.max") == l->pids, "pids.max is the limit");
  if (cpu == NULL)
    skip ("no cpu group on this host");
  else if (v2)
    ok (read_u64 (cpu, "cpu.max") == 150000, "cpu.max gives 1.5 cores");
  else
    ok (read_u64 (cpu, "cpu.cfs_quota_us") == 150000 && read_u64 (cpu, "cpu.cfs_period_us") == 100000,
        "cpu.cfs_quota_us gives 1.5 cores");
  for (size_t i = 0; i < cg->n; i++)
    ok (fcntl (cg->procs_fds[i], F_GETFD) == FD_CLOEXEC && (fcntl (cg->procs_fds[i], F_GETFL) & O_ACCMODE) == O_WRONLY,
        "%s/cgroup.procs is open write-only, close-on-exec", cg->paths[i]);
}

/* A child joins every group (as QEMU does before exec), then forks past
   the pids limit and touches more than the memory limit.  Returns its
   wait status; *forks: how many forks it managed.  */
static int
run_in_group (const struct rt_cgroup *cg, unsigned *forks)
{
  unsigned *shared = mmap (NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t pid;
  int status = 0;

  *shared = 0;
  pid = fork ();
  if (pid == 0)
    {
      /* Its own process group: the kill below ends it and its children.  */
      setpgid (0, 0);
      for (size_t i = 0; i < cg->n; i++)
        if (write (cg->procs_fds[i], "0", 1) != 1)
          _exit (2);
      for (int i = 0; i < 64; i++)
        {
          pid_t c = fork ();
          if (c < 0)
            break;
          if (c == 0)
            {
              pause ();
              _exit (0);
            }
          (*shared)++;
        }
      kill (0, SIGKILL);
      _exit (3);
    }
  waitpid (pid, &status, 0);
  *forks = *shared;
  munmap (shared, sizeof *shared);
  return status;
}

static int
touch_memory (const struct rt_cgroup *cg, size_t bytes)
{
  pid_t pid = fork ();
  int status = 0;

  if (pid == 0)
    {
      char *p;
      for (size_t i = 0; i < cg->n; i++)
        if (write (cg->procs_fds[i], "0", 1) != 1)
          _exit (2);
      p = malloc (bytes);
      if (p == NULL)
        _exit (4);
      for (size_t i = 0; i < bytes; i += 4096)
        p[i] = 1;
      _exit (0);
    }
  waitpid (pid, &status, 0);
  return status;
}

int
main (void)
{
  struct rt_cgroup_limits l = { .memory_bytes = 32 * MIB, .pids = 8, .cpu_percent = 150 };
  struct rt_cgroup cg;
  struct statfs fs;
  /* A uid of the default range no real sandbox takes first (they take
     the lowest), different for each concurrent run of this test.  */
  uid_t uid = 1879113727 - (uid_t) (getpid () % 4096);
  cleanup_free char *paths[RT_CGROUP_MAX_FDS] = { NULL };
  rt_error *err = NULL;
  unsigned forks = 0;
  bool v2;
  int lock, status;
  size_t n;

  test_limits_for ();
  if (geteuid () != 0)
    {
      skip ("not root: no control group to make");
      return tap_done ();
    }
  v2 = statfs ("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
  lock = hold_uid (uid);
  ok (lock >= 0, "the test uid %u is held", (unsigned) uid);
  ok (rt_cgroup_create (uid, &l, &cg, &err) == 0, "a group is made for uid %u", (unsigned) uid);
  printf ("# cgroup v%d, %zu group(s), missing: %s\n", v2 ? 2 : 1, cg.n, cg.missing ? cg.missing : "nothing");
  if (cg.n == 0)
    {
      skip ("this host has no writable cgroup hierarchy");
      rt_cgroup_destroy (&cg);
      return tap_done ();
    }
  test_files (&cg, v2, &l);
  n = cg.n;
  for (size_t i = 0; i < n; i++)
    paths[i] = strdup (cg.paths[i]);

  status = run_in_group (&cg, &forks);
  if (path_of (&cg, v2 ? "unified" : "pids"))
    ok (forks == l.pids - 1, "a process in the group forks only up to pids.max (%u of 64)", forks);
  status = touch_memory (&cg, 64 * MIB);
  if (path_of (&cg, v2 ? "unified" : "memory"))
    ok (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL, "touching 64 MiB past a 32 MiB limit is killed");

  rt_cgroup_sweep ();
  ok (exists (paths[0]), "the sweep leaves the group of a uid in use");
  rt_cgroup_destroy (&cg);
  for (size_t i = 0; i < n; i++)
    ok (!exists (paths[i]), "destroy removed %s", paths[i]);
  ok (cg.n == 0 && cg.missing == NULL, "destroy leaves the struct empty");
  rt_cgroup_destroy (&cg);
  ok (true, "destroy twice is harmless");

  /* A group left behind (a monitor killed -9): the sweep removes it once
     its uid is free, not before.  */
  ok (rt_cgroup_create (uid, &l, &cg, &err) == 0 && cg.n == n, "the group is made again");
  for (size_t i = 0; i < cg.n; i++)
    close (cg.procs_fds[i]);
  rt_cgroup_sweep ();
  ok (exists (paths[0]), "the sweep leaves it while the uid is held");
  close (lock);
  rt_cgroup_sweep ();
  for (size_t i = 0; i < n; i++)
    ok (!exists (paths[i]), "the sweep removed %s once the uid was free", paths[i]);
  for (size_t i = 0; i < cg.n; i++)
    free (cg.paths[i]);
  free (cg.missing);
  {
    char path[64];
    snprintf (path, sizeof path, RT_UID_LOCK_DIR "/%u", (unsigned) uid);
    unlink (path);
  }
  return tap_done ();
}
