/* cgroup.c - the limits of one QEMU's control group (cgroup.h).  */
#include <fcntl.h>
#include <linux/magic.h>
#include <mntent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "vmm/cgroup.h"
#include "vmm/uidpool.h"

#define CG_ROOT "/sys/fs/cgroup"
#define CG_PARENT "runtime"
#define CG_PREFIX "runtime-"
/* CFS's default period, in microseconds: a quota is a share of it.  */
#define CPU_PERIOD_US 100000

/* QEMU's own memory beside the guest's, measured here (QEMU 7.2, TCG,
   tb-size=64, 2 vCPUs; `ps -o rss` and /proc/PID/status VmHWM of a
   sandbox's QEMU, idle, then while its guest wrote its disk and touched
   memory until its OOM killer struck):
     512 MiB guest:  idle 234 MiB RSS, worst 669 MiB (157 MiB over the guest)
     1024 MiB guest: idle 243 MiB RSS, worst 1152 MiB (128 MiB over)
   The part over the guest: the 64 MiB translation cache, ≈69 MiB of
   mapped binary and libraries (RssFile), QEMU's heap.  The limit gives
   ≈100 MiB more: the group is also charged for the page cache of the
   disk overlay's writes (reclaimed before anything is killed), and 1/32
   of the guest for what grows with it (page tables, dirty bitmaps).  */
#define QEMU_OVERHEAD_MIB 256
#define GUEST_SHARE_DIVISOR 32
/* Threads of a sandbox's QEMU, measured the same way: 6 idle with
   1 vCPU, 7 with 2, 10 under 16 parallel direct disk writers.  QEMU's
   block thread pool may grow to 64 workers (its max_threads), so the
   limit leaves room for all of them: a pids limit hit makes QEMU abort, and it must
   only ever stop a fork bomb (spawn=deny already refuses one), never a
   busy disk.  */
#define QEMU_THREADS_FIXED 8
#define QEMU_POOL_THREADS 64
#define PIDS_MARGIN 32

void
rt_cgroup_limits_for (unsigned memory_mib, unsigned vcpu, bool trial, struct rt_cgroup_limits *limits)
{
  uint64_t mib = (uint64_t) memory_mib + QEMU_OVERHEAD_MIB + memory_mib / GUEST_SHARE_DIVISOR;

  memset (limits, 0, sizeof (*limits));
  limits->memory_bytes = mib << 20;
  limits->pids = QEMU_THREADS_FIXED + vcpu + QEMU_POOL_THREADS + PIDS_MARGIN;
  /* A trial sandbox gets its vCPUs (at most 2) and nothing more
     (docs/billing.md): its QEMU, device threads included, gets as many
     cores as it has vCPUs.  */
  limits->cpu_percent = trial ? vcpu * 100 : 0;
}

/* ---- files of a group ---------------------------------------------------- */

/* Writes @value to @dir/@file; -errno on failure.  */
static int
write_value (const char *dir, const char *file, const char *value)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", dir, file);
  cleanup_close int fd = -1;
  size_t len = strlen (value);

  if (path == NULL)
    return -ENOMEM;
  fd = open (path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -errno;
  if (write (fd, value, len) != (ssize_t) len)
    return errno ? -errno : -EIO;
  return 0;
}

static int
write_u64 (const char *dir, const char *file, uint64_t value)
{
  char buf[32];
  snprintf (buf, sizeof buf, "%llu", (unsigned long long) value);
  return write_value (dir, file, buf);
}

static bool
file_exists (const char *dir, const char *file)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", dir, file);
  return path && access (path, F_OK) == 0;
}

/* True when @dir's cgroup.procs lists no process (or cannot be read).  */
static bool
group_empty (const char *dir)
{
  cleanup_free char *path = rt_strdup_printf ("%s/cgroup.procs", dir);
  cleanup_free char *data = NULL;

  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0)
    return true;
  return data[strspn (data, " \n")] == '\0';
}

/* rmdir, retried for a while: a just killed QEMU leaves its group only
   once the kernel has finished its exit, which freeing a large guest's
   memory can stretch past a second (1.4 s measured for a 512 MiB TCG
   guest on a 6.18 kernel).  */
static int
remove_group (const char *dir)
{
  struct timespec pause = { 0, 10 * 1000 * 1000 };

  for (int i = 0; i < 500; i++)
    {
      if (rmdir (dir) == 0 || errno == ENOENT)
        return 0;
      if (errno != EBUSY)
        return -errno;
      nanosleep (&pause, NULL);
    }
  return -EBUSY;
}

/* ---- the groups of one QEMU ---------------------------------------------- */

/* Adds "@what (@why)" to cg->missing.  */
static void
add_missing (struct rt_cgroup *cg, const char *what, const char *why)
{
  char *more = cg->missing ? rt_strdup_printf ("%s, %s (%s)", cg->missing, what, why)
                           : rt_strdup_printf ("%s (%s)", what, why);
  if (more)
    {
      free (cg->missing);
      cg->missing = more;
    }
}

/* Writes a hierarchy's limit files in group @dir; -errno on failure.  */
typedef int (*set_limits_fn) (const char *dir, const struct rt_cgroup_limits *limits);

/* Makes @parent/runtime-<uid> (a stale one of that name is removed
   first, or kept when something still runs in it) and writes its limits
   with @set; on success adds it to @cg.  Returns NULL, or why not.  */
static char *
make_group (const char *parent, uid_t uid, const struct rt_cgroup_limits *limits, set_limits_fn set,
            struct rt_cgroup *cg)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/" CG_PREFIX "%u", parent, (unsigned) uid);
  cleanup_free char *procs = NULL;
  int fd, ret;

  if (dir == NULL || cg->n >= RT_CGROUP_MAX_FDS)
    return strdup ("out of memory");
  if (mkdir (parent, 0755) < 0 && errno != EEXIST)
    return rt_strdup_printf ("cannot create %s: %s", parent, strerror (errno));
  rmdir (dir);
  if (mkdir (dir, 0755) < 0 && errno != EEXIST)
    return rt_strdup_printf ("cannot create %s: %s", dir, strerror (errno));
  ret = set (dir, limits);
  procs = rt_strdup_printf ("%s/cgroup.procs", dir);
  fd = ret < 0 || procs == NULL ? -1 : open (procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    {
      if (ret == 0)
        ret = procs ? -errno : -ENOMEM;
      remove_group (dir);
      return rt_strdup_printf ("cannot set up %s: %s", dir, strerror (-ret));
    }
  cg->procs_fds[cg->n] = fd;
  cg->paths[cg->n++] = steal_pointer (&dir);
  return NULL;
}

/* ---- cgroup v1 ----------------------------------------------------------- */

static int
set_v1_memory (const char *dir, const struct rt_cgroup_limits *l)
{
  int ret = write_u64 (dir, "memory.limit_in_bytes", l->memory_bytes);

  /* Memory plus swap at the same figure: no swapping past the limit.  */
  if (ret == 0 && file_exists (dir, "memory.memsw.limit_in_bytes"))
    ret = write_u64 (dir, "memory.memsw.limit_in_bytes", l->memory_bytes);
  return ret;
}

static int
set_v1_pids (const char *dir, const struct rt_cgroup_limits *l)
{
  return write_u64 (dir, "pids.max", l->pids);
}

static int
set_v1_cpu (const char *dir, const struct rt_cgroup_limits *l)
{
  int ret = write_u64 (dir, "cpu.cfs_period_us", CPU_PERIOD_US);

  if (ret == 0)
    ret = write_u64 (dir, "cpu.cfs_quota_us", (uint64_t) l->cpu_percent * CPU_PERIOD_US / 100);
  return ret;
}

struct v1_controller
{
  const char *name; /* its hierarchy: CG_ROOT/<name> */
  const char *what; /* for cg->missing */
  set_limits_fn set;
};

static const struct v1_controller v1_controllers[] = {
  { "memory", "memory limit", set_v1_memory },
  { "pids", "process limit", set_v1_pids },
  { "cpu", "CPU limit", set_v1_cpu },
};

/* True when CG_ROOT/@name is a cgroup v1 mount with controller @name
   (maybe beside others: "cpu" is often a link to "cpu,cpuacct").  */
static bool
v1_mounted (const char *name)
{
  cleanup_free char *link = rt_strdup_printf (CG_ROOT "/%s", name);
  cleanup_free char *dir = link ? realpath (link, NULL) : NULL;
  cleanup_file FILE *f = dir ? setmntent ("/proc/self/mounts", "re") : NULL;
  struct mntent *me;

  while (f && (me = getmntent (f)) != NULL)
    if (strcmp (me->mnt_type, "cgroup") == 0 && strcmp (me->mnt_dir, dir) == 0 && hasmntopt (me, name))
      return true;
  return false;
}

static bool
wanted (const struct rt_cgroup_limits *l, size_t controller)
{
  return controller == 0 ? l->memory_bytes > 0 : controller == 1 ? l->pids > 0 : l->cpu_percent > 0;
}

static void
create_v1 (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg)
{
  for (size_t i = 0; i < sizeof v1_controllers / sizeof v1_controllers[0]; i++)
    {
      const struct v1_controller *c = &v1_controllers[i];
      cleanup_free char *root = rt_strdup_printf (CG_ROOT "/%s", c->name);
      cleanup_free char *parent = rt_strdup_printf (CG_ROOT "/%s/" CG_PARENT, c->name);
      cleanup_free char *why = NULL;

      if (!wanted (limits, i))
        continue;
      if (root == NULL || parent == NULL || !v1_mounted (c->name))
        why = rt_strdup_printf ("cgroup v1 %s not mounted", c->name);
      else if (access (root, W_OK) < 0)
        why = rt_strdup_printf ("cgroup v1 %s not writable", c->name);
      else if ((why = make_group (parent, uid, limits, c->set, cg)) != NULL)
        {
          char *full = rt_strdup_printf ("cgroup v1 %s not writable: %s", c->name, why);
          free (why);
          why = full;
        }
      if (why)
        add_missing (cg, c->what, why);
    }
}

/* ---- cgroup v2 ----------------------------------------------------------- */

static const char *const v2_names[] = { "memory", "pids", "cpu" };
static const char *const v2_what[] = { "memory limit", "process limit", "CPU limit" };

static int
set_v2 (const char *dir, const struct rt_cgroup_limits *l)
{
  char cpu[48];
  int ret = 0;

  if (l->memory_bytes > 0)
    {
      ret = write_u64 (dir, "memory.max", l->memory_bytes);
      /* No swapping past the limit either.  */
      if (ret == 0 && file_exists (dir, "memory.swap.max"))
        ret = write_value (dir, "memory.swap.max", "0");
    }
  if (ret == 0 && l->pids > 0)
    ret = write_u64 (dir, "pids.max", l->pids);
  if (ret == 0 && l->cpu_percent > 0)
    {
      snprintf (cpu, sizeof cpu, "%llu %u", (unsigned long long) l->cpu_percent * CPU_PERIOD_US / 100,
                CPU_PERIOD_US);
      ret = write_value (dir, "cpu.max", cpu);
    }
  return ret;
}

/* Enables controller @name for @dir's children; NULL, or why not.  */
static char *
enable_controller (const char *dir, const char *name)
{
  cleanup_free char *controllers = NULL, *path = rt_strdup_printf ("%s/cgroup.controllers", dir);
  cleanup_free char *plus = rt_strdup_printf ("+%s", name);
  int ret;

  if (path == NULL || plus == NULL)
    return strdup ("out of memory");
  if (rt_read_file (path, &controllers, NULL, NULL) < 0)
    return rt_strdup_printf ("cannot read %s", path);
  /* A whole word of the space separated list.  */
  for (char *p = controllers; (p = strstr (p, name)) != NULL; p += strlen (name))
    if ((p == controllers || p[-1] == ' ') && strchr (" \n", p[strlen (name)]) != NULL)
      {
        ret = write_value (dir, "cgroup.subtree_control", plus);
        return ret == 0 ? NULL
                        : rt_strdup_printf ("cgroup v2 %s cannot be enabled in %s: %s", name, dir, strerror (-ret));
      }
  return rt_strdup_printf ("cgroup v2 has no %s controller in %s", name, dir);
}

/* One group for all the limits, under CG_ROOT/runtime.  The parent is
   made at the hierarchy's root: the only place a process of a
   non-delegated group may enable controllers for a child (cgroup v2's
   no-internal-processes rule spares the root).  Each limit whose
   controller cannot be enabled there is missing; the others still hold.  */
static void
create_v2 (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg)
{
  cleanup_free char *parent = strdup (CG_ROOT "/" CG_PARENT);
  struct rt_cgroup_limits usable = *limits;
  char *why = NULL;

  if (parent == NULL || (mkdir (parent, 0755) < 0 && errno != EEXIST))
    {
      cleanup_free char *err = rt_strdup_printf ("cgroup v2 not writable: %s", strerror (errno));
      for (size_t i = 0; i < 3; i++)
        if (wanted (limits, i))
          add_missing (cg, v2_what[i], err ? err : "cgroup v2 not writable");
      return;
    }
  for (size_t i = 0; i < 3; i++)
    {
      if (!wanted (limits, i))
        continue;
      why = enable_controller (CG_ROOT, v2_names[i]);
      if (why == NULL)
        why = enable_controller (parent, v2_names[i]);
      if (why == NULL)
        continue;
      add_missing (cg, v2_what[i], why);
      free (why);
      if (i == 0)
        usable.memory_bytes = 0;
      else if (i == 1)
        usable.pids = 0;
      else
        usable.cpu_percent = 0;
    }
  if (usable.memory_bytes == 0 && usable.pids == 0 && usable.cpu_percent == 0)
    return;
  why = make_group (parent, uid, &usable, set_v2, cg);
  for (size_t i = 0; why && i < 3; i++)
    if (wanted (&usable, i))
      add_missing (cg, v2_what[i], why);
  free (why);
}

static bool
unified (void)
{
  struct statfs fs;
  return statfs (CG_ROOT, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/* ---- the API --------------------------------------------------------------- */

const char *
rt_cgroup_version (void)
{
  static const char *const v1[] = { "memory", "pids", "cpu" };

  if (unified ())
    return "v2";
  for (size_t i = 0; i < sizeof (v1) / sizeof (*v1); i++)
    if (v1_mounted (v1[i]))
      return "v1";
  return "none";
}

int
rt_cgroup_create (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg, rt_error **err)
{
  memset (cg, 0, sizeof (*cg));
  for (size_t i = 0; i < RT_CGROUP_MAX_FDS; i++)
    cg->procs_fds[i] = -1;
  if (uid == 0)
    return rt_error_set (err, EINVAL, "internal", "a control group for uid 0");
  if (unified ())
    create_v2 (uid, limits, cg);
  else
    create_v1 (uid, limits, cg);
  return 0;
}

void
rt_cgroup_destroy (struct rt_cgroup *cg)
{
  for (size_t i = 0; i < cg->n; i++)
    {
      if (cg->procs_fds[i] >= 0)
        close (cg->procs_fds[i]);
      cg->procs_fds[i] = -1;
      remove_group (cg->paths[i]);
      free (cg->paths[i]);
      cg->paths[i] = NULL;
    }
  cg->n = 0;
  free (cg->missing);
  cg->missing = NULL;
}

/* Removes the groups of free uids under @parent.  */
static void
sweep_dir (const char *parent)
{
  cleanup_dir DIR *d = opendir (parent);
  struct dirent *de;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *dir = NULL;
      struct rt_uid_lease lease;
      unsigned long uid;
      char *end;

      if (strncmp (de->d_name, CG_PREFIX, strlen (CG_PREFIX)) != 0)
        continue;
      errno = 0;
      uid = strtoul (de->d_name + strlen (CG_PREFIX), &end, 10);
      if (errno || *end != '\0' || uid == 0 || uid > 0x7fffffffUL)
        continue;
      /* The uid held while the group goes: a claimer in between would
         have its new group removed under it.  */
      if (rt_uid_hold ((uid_t) uid, &lease) != 0)
        continue;
      dir = rt_strdup_printf ("%s/%s", parent, de->d_name);
      if (dir && group_empty (dir))
        rmdir (dir);
      rt_uid_release (&lease);
    }
}

void
rt_cgroup_sweep (void)
{
  if (unified ())
    {
      sweep_dir (CG_ROOT "/" CG_PARENT);
      return;
    }
  for (size_t i = 0; i < sizeof v1_controllers / sizeof v1_controllers[0]; i++)
    {
      cleanup_free char *parent = rt_strdup_printf (CG_ROOT "/%s/" CG_PARENT, v1_controllers[i].name);
      if (parent)
        sweep_dir (parent);
    }
}
