/* vm.c - runs one QEMU microvm: its disk overlay, its process, its end.
   The command line itself is qemu-args.c's.  */
#include <dirent.h>
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
#include "vmm/jail-files.h"
#include "vmm/jail.h"
#include "vmm/qemu-args.h"
#include "vmm/vm.h"

/* How long the end waits for QEMU to exit once SIGKILLed.  */
#define END_TIMEOUT_MS 10000

/* Where the disk's writes go: @cfg->disk_dir, 0700, with "live" a
   symlink to the state dir: the reaper (records/reap.c) removes a disk
   dir whose state dir is gone, even one another state dir's.  */
static int
make_disk_dir (const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *live = rt_strdup_printf ("%s/live", cfg->disk_dir);

  if (live == NULL)
    return rt_error_oom (err);
  /* A woken sandbox's is there, with its overlay and layers.  */
  if (mkdir (cfg->disk_dir, 0700) < 0 && !(errno == EEXIST && cfg->overlay))
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", cfg->disk_dir, strerror (errno));
  vm->disk_dir = strdup (cfg->disk_dir);
  if (vm->disk_dir == NULL)
    {
      rmdir (cfg->disk_dir);
      return rt_error_oom (err);
    }
  if (symlink (cfg->dir, live) < 0 && !(errno == EEXIST && cfg->overlay))
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", live, strerror (errno));
  return 0;
}

/* Removes the overlays of an earlier file of @base's name and this size
   in @dir (the image's disk made again): names @prefix…@suffix but
   @keep.  */
static void
drop_stale (const char *dir, const char *prefix, const char *suffix, const char *keep)
{
  cleanup_dir DIR *d = opendir (dir);
  size_t ls = strlen (suffix);
  struct dirent *e;

  while (d && (e = readdir (d)))
    {
      size_t n = strlen (e->d_name);
      if (strncmp (e->d_name, prefix, strlen (prefix)) == 0 && n > ls && strcmp (e->d_name + n - ls, suffix) == 0
          && strcmp (e->d_name, keep) != 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
}

/* An empty overlay of @base of @size_mib, made once per image disk (its
   file's identity is in the name) and size, and copied per start: qemu-img
   takes 30-110 ms.  A build step's disk lives for the build only: its
   overlay is made at @path itself.  Its virtual size is the sandbox's
   disk: the guest cannot write past it, so the copy stays under that plus
   qcow2's metadata (an L2 entry per 64 KiB cluster and a refcount: under
   0.1%).  */
int
rt_vm_empty_overlay (rt_context *ctx, const char *base, unsigned size_mib, const char *path, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/overlays", ctx->cache_dir);
  cleanup_free char *disks = rt_strdup_printf ("%s/disks/", ctx->cache_dir);
  cleanup_free char *name = NULL, *prefix = NULL, *suffix = NULL, *final = NULL, *tmp = NULL;
  const char *file = strrchr (base, '/') ? strrchr (base, '/') + 1 : base;
  struct stat st;
  int ret;

  if (dir == NULL || disks == NULL)
    return rt_error_oom (err);
  if (strncmp (base, disks, strlen (disks)) != 0)
    return rt_qcow2_create (base, "raw", path, size_mib, err);
  if (stat (base, &st) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot read '%s': %s", base, strerror (errno));
  prefix = rt_strdup_printf ("%s-", file);
  suffix = rt_strdup_printf ("-%u.qcow2", size_mib);
  name = rt_strdup_printf ("%s-%lx-%llx-%llx-%u.qcow2", file, (unsigned long) st.st_ino,
                           (unsigned long long) st.st_size, (unsigned long long) st.st_mtime, size_mib);
  final = name ? rt_strdup_printf ("%s/%s", dir, name) : NULL;
  tmp = rt_strdup_printf ("%s/.tmp-%d-%llx", dir, (int) getpid (), (unsigned long long) rt_now_ms ());
  if (prefix == NULL || suffix == NULL || final == NULL || tmp == NULL)
    return rt_error_oom (err);
  if (access (final, R_OK) != 0)
    {
      ret = rt_mkdir_p (dir, 0700, err);
      if (ret == 0)
        ret = rt_qcow2_create (base, "raw", tmp, size_mib, err);
      if (ret == 0 && rename (tmp, final) < 0)
        ret = rt_error_set (err, errno, "startup_failed", "cannot rename '%s': %s", tmp, strerror (errno));
      if (ret < 0)
        {
          unlink (tmp);
          return ret;
        }
      drop_stale (dir, prefix, suffix, name);
    }
  return rt_copy_file (final, path, err);
}

int
rt_qcow2_create (const char *backing, const char *fmt, const char *path, unsigned size_mib, rt_error **err)
{
  cleanup_free char *size = size_mib ? rt_strdup_printf ("%uM", size_mib) : NULL;
  cleanup_free char *qemu_img = rt_find_program ("qemu-img");
  cleanup_free char *out = NULL;
  char *img_argv[] = { qemu_img, (char *) "create", (char *) "-q", (char *) "-f", (char *) "qcow2", (char *) "-b",
                       (char *) backing, (char *) "-F", (char *) fmt, (char *) path, size, NULL };
  int rc;

  if (qemu_img == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-img not found");
      return rt_error_hint (err, "apt-get install qemu-utils");
    }
  if (size_mib && size == NULL)
    return rt_error_oom (err);
  rc = rt_run_capture (img_argv, &out, err);
  if (rc < 0)
    return rc;
  if (rc != 0)
    return rt_error_set (err, EIO, "startup_failed", "qemu-img could not make the disk: %s", out ? out : "");
  return 0;
}

/* The overlay: a copy of an empty one (a few hundred KiB:
   copy_file_range in the kernel, no qemu-img).  */
static int
copy_overlay (const char *from, const char *dir, char **path, rt_error **err)
{
  cleanup_free char *overlay = rt_strdup_printf ("%s/overlay.qcow2", dir);
  int ret = overlay ? rt_copy_file (from, overlay, err) : rt_error_oom (err);

  if (ret == 0)
    *path = steal_pointer (&overlay);
  return ret;
}

/* The fds QEMU gets (qemu-args.h): those the caller made (tap, console
   socket) and those made here (the console file, the sockets, the disks),
   which vm.c closes once QEMU has them.  */
struct qemu_fds
{
  int fd[RT_QEMU_NFDS];
  bool own[RT_QEMU_NFDS];
};

static void
qemu_fds_close (struct qemu_fds *f)
{
  for (size_t i = 0; i < RT_QEMU_NFDS; i++)
    if (f->own[i] && f->fd[i] >= 0)
      close (f->fd[i]);
}

static int
own_fd (struct qemu_fds *f, int slot, int fd, const char *path, rt_error **err)
{
  if (fd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", path, strerror (errno));
  f->fd[slot - 3] = fd;
  f->own[slot - 3] = true;
  return 0;
}

/* The console file (unless the caller reads a socket), the listening
   agent and QMP sockets at their paths in the state dir (the monitor
   connects there), the base disk read-only, the overlay read-write.  */
static int
open_qemu_fds (const struct rt_vm_config *cfg, struct rt_vm *vm, const char *overlay, struct qemu_fds *f,
               rt_error **err)
{
  cleanup_free char *qmp = rt_strdup_printf ("%s/qmp.sock", cfg->dir);
  int ret = 0;

  for (size_t i = 0; i < RT_QEMU_NFDS; i++)
    f->fd[i] = -1;
  if (qmp == NULL)
    return rt_error_oom (err);
  f->fd[RT_QEMU_FD_TAP - 3] = cfg->tap_fd > 0 ? cfg->tap_fd : -1;
  f->fd[RT_QEMU_FD_UID_LOCK - 3] = vm->lease.qemu_lock_fd;
  if (cfg->console_fd > 0)
    f->fd[RT_QEMU_FD_CONSOLE - 3] = cfg->console_fd;
  else
    ret = own_fd (f, RT_QEMU_FD_CONSOLE, open (vm->console_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                  vm->console_log, err);
  if (ret == 0 && cfg->channel)
    {
      int q = rt_listen_unix (qmp, 0, err), a = q < 0 ? -1 : rt_listen_unix (vm->agent_sock, 0, err);
      if (q >= 0)
        own_fd (f, RT_QEMU_FD_QMP, q, qmp, err);
      if (a < 0)
        return -1;
      own_fd (f, RT_QEMU_FD_AGENT, a, vm->agent_sock, err);
    }
  if (ret == 0 && cfg->disk)
    ret = own_fd (f, RT_QEMU_FD_BASE, open (cfg->disk, O_RDONLY | O_CLOEXEC), cfg->disk, err);
  if (ret == 0 && overlay)
    ret = own_fd (f, RT_QEMU_FD_OVERLAY, open (overlay, O_RDWR | O_CLOEXEC), overlay, err);
  for (unsigned i = 0; ret == 0 && i < RT_QEMU_MAX_LAYERS && cfg->layers[i]; i++)
    ret = own_fd (f, RT_QEMU_FD_LAYER0 + i, open (cfg->layers[i], O_RDONLY | O_CLOEXEC), cfg->layers[i], err);
  f->fd[RT_QEMU_FD_RAM - 3] = cfg->ram_fd > 0 ? cfg->ram_fd : -1;
  return ret;
}

/* The limits of QEMU's uid.  Files: the largest QEMU writes is the
   overlay, at most the disk plus qcow2's metadata (under 0.1%, see
   rt_vm_empty_overlay) and clusters freed but not yet reused: 1/32 and
   64 MiB cover both.
   Threads (counted per uid, which is why each QEMU has its own): its
   main loop, RCU, the vCPUs, up to 64 block I/O workers (QEMU's thread
   pool), a few helpers.  Files open: about 30 measured, 256 allowed.  */
static void
set_limits (const struct rt_vm_config *cfg, int base_fd, struct rt_jail *j)
{
  struct stat st;
  uint64_t disk = (uint64_t) cfg->disk_mib << 20;

  if (disk == 0 && base_fd >= 0 && fstat (base_fd, &st) == 0)
    disk = (uint64_t) st.st_size;
  j->fsize.rlim_cur = j->fsize.rlim_max = disk + disk / 32 + (64 << 20);
  j->nproc.rlim_cur = j->nproc.rlim_max = cfg->vcpu + 64 + 16;
  j->nofile.rlim_cur = j->nofile.rlim_max = 256;
}

/* Makes @path, a dir of root's; with @gid, the group's too (0770).  */
static int
make_dir (const char *path, gid_t gid, rt_error **err)
{
  if (mkdir (path, 0700) < 0 && errno != EEXIST)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", path, strerror (errno));
  if (gid != 0 && (chown (path, 0, gid) < 0 || chmod (path, 0770) < 0))
    return rt_error_set (err, errno, "startup_failed", "the jail could not be set up: chown '%s': %s", path,
                         strerror (errno));
  return 0;
}

/* With KVM, QEMU's uid must open /dev/kvm: through the node's group
   (Debian's udev rule makes it root:kvm 0660), which becomes its one
   supplementary group, or as anyone when the node is open to all.  */
static int
kvm_group (const struct rt_vm_config *cfg, struct rt_jail *j, rt_error **err)
{
  struct stat st;

  if (strcmp (cfg->accel, "kvm") != 0)
    return 0;
  if (stat ("/dev/kvm", &st) < 0)
    return rt_error_set (err, errno, "startup_failed", "the jail could not be set up: /dev/kvm: %s", strerror (errno));
  if (rt_kvm_node_open_to_jail (&st, &j->kvm_gid))
    return 0;
  rt_error_set (err, EACCES, "startup_failed",
                "the jail could not be set up: /dev/kvm (mode %04o, group %u) is not open to QEMU's own uid",
                (unsigned) (st.st_mode & 07777), (unsigned) st.st_gid);
  return rt_error_hint (err, "give /dev/kvm a group of its own with rw (root:kvm 0660, as Debian's udev rule does)");
}

/* QEMU's uid and cgroup, the jail's dirs and everything it binds: the
   binary and libraries, the kernel and initramfs (at /boot), /dev/null
   (and /dev/kvm with KVM), its own dir at /vm.  */
static int
prepare_jail (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, struct rt_jail *j, char **qemu,
              rt_error **err)
{
  struct rt_cgroup_limits limits;
  int ret;

  ret = rt_uid_claim (ctx, &vm->lease, err);
  if (ret < 0)
    return ret;
  rt_cgroup_limits_for (cfg->memory_mib, cfg->vcpu, cfg->trial, &limits);
  ret = rt_cgroup_create (vm->lease.uid, &limits, &vm->cgroup, err);
  if (ret < 0)
    return ret;
  vm->cgroup_made = true;
  for (size_t i = 0; i < vm->cgroup.n && i < RT_CGROUP_MAX_FDS; i++)
    j->cgroup_fds[i] = vm->cgroup.procs_fds[i];
  j->uid = vm->lease.uid;
  j->cap_last = (int) rt_cap_last ();
  ret = kvm_group (cfg, j, err);
  if (ret == 0)
    ret = make_dir (vm->jail_root, 0, err);
  if (ret == 0)
    ret = make_dir (vm->jail_vm, vm->lease.uid, err);
  if (ret < 0)
    return ret;
  j->root = strdup (vm->jail_root);
  if (j->root == NULL)
    return rt_error_oom (err);
  if (rt_jail_bind_qemu (ctx, j, qemu, err) < 0
      || rt_jail_bind (j, cfg->vmlinux, "/boot/vmlinux", RT_JAIL_RO_DATA, false, err) < 0
      || rt_jail_bind (j, cfg->initramfs, "/boot/initramfs", RT_JAIL_RO_DATA, false, err) < 0
      || rt_jail_bind (j, "/dev/null", "/dev/null", RT_JAIL_DEVICE, false, err) < 0
      || (strcmp (cfg->accel, "kvm") == 0 && rt_jail_bind (j, "/dev/kvm", "/dev/kvm", RT_JAIL_DEVICE, false, err) < 0)
      || rt_jail_bind (j, vm->jail_vm, "/vm", RT_JAIL_RW_DATA, true, err) < 0)
    return -1;
  return 0;
}

/* Runs @argv with its output in <dir>/qemu.log; fills vm->pid and
   vm->pidfd.  */
static int
spawn_qemu (const struct rt_vm_config *cfg, struct rt_jail *j, struct qemu_fds *f, struct rt_vm *vm, rt_error **err)
{
  cleanup_free char *log = rt_strdup_printf ("%s/qemu.log", cfg->dir);
  /* Nothing: no secret of the caller's reaches QEMU.  */
  char *env[] = { NULL };
  int ret;

  if (log == NULL)
    return rt_error_oom (err);
  j->log_fd = open (log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (j->log_fd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", log, strerror (errno));
  memcpy (j->fds, f->fd, sizeof j->fds);
  j->netns_fd = cfg->netns_fd;
  j->envp = env;
  ret = rt_jail_spawn (j, &vm->pid, &vm->pidfd, &vm->jail_setup_us, err);
  close (j->log_fd);
  j->log_fd = -1;
  /* QEMU holds <uid>.qemu now, alone: what it does with that lock
     cannot free the uid while we hold <uid> (uidpool.h).  */
  if (ret == 0 && vm->lease.qemu_lock_fd >= 0)
    {
      close (vm->lease.qemu_lock_fd);
      vm->lease.qemu_lock_fd = -1;
    }
  return ret;
}

/* The jail's dirs: under the disk dir, else the state dir.  */
static int
jail_dirs (const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  const char *base = cfg->disk_dir ? cfg->disk_dir : cfg->dir;

  vm->jail_root = rt_strdup_printf ("%s/root", base);
  vm->jail_vm = rt_strdup_printf ("%s/vm", base);
  if (vm->jail_root == NULL || vm->jail_vm == NULL)
    return rt_error_oom (err);
  return 0;
}

/* The disk dir, the overlay, the jail, the fds, the command line,
   QEMU.  */
static int
start (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, struct rt_jail *j, struct qemu_fds *f,
       rt_error **err)
{
  cleanup_free char *overlay = NULL, *qemu = NULL;
  cleanup_strv char **argv = NULL;
  bool tcg = strcmp (cfg->accel, "tcg") == 0;
  struct rt_qemu_args args = { .qemu = ctx->qemu, .name = cfg->dir, .accel = cfg->accel, .vcpu = cfg->vcpu,
                               .memory_mib = cfg->memory_mib, .vmlinux = cfg->vmlinux,
                               .initramfs = cfg->initramfs, .cmdline = cfg->cmdline, .tap = cfg->tap_fd > 0,
                               .disk = cfg->disk != NULL,
                               .growfs = cfg->disk_mib > 0 && !cfg->overlay && !cfg->overlay_from,
                               .console_sock = cfg->console_fd > 0, .channel = cfg->channel,
                               .ram_file = cfg->ram_fd > 0, .incoming = cfg->incoming };
  int ret;

  while (args.n_layers < RT_QEMU_MAX_LAYERS && cfg->layers[args.n_layers])
    args.n_layers++;
  args.tsc_khz = tcg ? rt_host_tsc_khz () : 0;
  if (cfg->disk && cfg->disk_dir)
    {
      ret = make_disk_dir (cfg, vm, err);
      if (ret < 0)
        return ret;
    }
  ret = jail_dirs (cfg, vm, err);
  if (ret == 0 && cfg->overlay)
    overlay = strdup (cfg->overlay);
  else if (ret == 0 && cfg->disk && cfg->overlay_from)
    ret = copy_overlay (cfg->overlay_from, cfg->disk_dir ? cfg->disk_dir : cfg->dir, &overlay, err);
  else if (ret == 0 && cfg->disk)
    {
      overlay = rt_strdup_printf ("%s/overlay.qcow2", cfg->disk_dir ? cfg->disk_dir : cfg->dir);
      ret = overlay ? rt_vm_empty_overlay (ctx, cfg->disk, cfg->disk_mib, overlay, err) : rt_error_oom (err);
    }
  if (ret == 0 && cfg->disk && overlay == NULL)
    ret = rt_error_oom (err);
  j->proc = cfg->ram_fd > 0;
  if (ret == 0 && vm->jailed)
    ret = prepare_jail (ctx, cfg, vm, j, &qemu, err);
  else if (ret == 0)
    ret = make_dir (vm->jail_vm, 0, err);
  if (ret == 0)
    ret = open_qemu_fds (cfg, vm, overlay, f, err);
  if (ret < 0)
    return ret;
  if (vm->jailed)
    {
      args.qemu = qemu;
      args.vmlinux = "/boot/vmlinux";
      args.initramfs = "/boot/initramfs";
    }
  set_limits (cfg, f->fd[RT_QEMU_FD_BASE - 3], j);
  ret = rt_qemu_argv (&args, &argv, err);
  if (ret < 0)
    return ret;
  j->argv = argv;
  return spawn_qemu (cfg, j, f, vm, err);
}

int
rt_vm_start (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err)
{
  struct qemu_fds f = { 0 };
  struct rt_jail j;
  int ret;

  memset (vm, 0, sizeof (*vm));
  vm->pid = -1;
  vm->pidfd = -1;
  vm->end_pid = 0;
  vm->end_fd = -1;
  vm->lease.lock_fd = vm->lease.qemu_lock_fd = -1;
  vm->jailed = !ctx->unsafe_no_jail;
  if (ctx->qemu == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-system-x86_64 not found");
      return rt_error_hint (err, "apt-get install qemu-system-x86");
    }
  /* In the monitor this lands in monitor.log; rt_monitor_spawn says it
     on the creator's stderr.  */
  if (!vm->jailed)
    rt_progress (ctx, "warning: QEMU runs without its jail (RUNTIME_UNSAFE_NO_JAIL=1): test use only");
  vm->agent_sock = rt_strdup_printf ("%s/agent.sock", cfg->dir);
  vm->console_log = rt_strdup_printf ("%s/console.log", cfg->dir);
  if (vm->agent_sock == NULL || vm->console_log == NULL)
    return rt_error_oom (err);
  rt_jail_init (&j);
  j.off = !vm->jailed;
  ret = start (ctx, cfg, vm, &j, &f, err);
  qemu_fds_close (&f);
  rt_jail_clear (&j);
  return ret;
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
  struct pollfd exited = { .fd = vm->pidfd, .events = POLLIN };

  /* A monitor without CAP_KILL and CAP_DAC_OVERRIDE has its ender kill
     QEMU and empty QEMU's dir (vm-end.c); else it does so itself.  */
  if (rt_vm_end_run (vm) < 0)
    fprintf (stderr, "warning: QEMU's ender failed: what QEMU left may stay until the reaper's sweep\n");
  if (vm->pid > 0)
    {
      kill (vm->pid, SIGKILL);
      /* Whatever failed above, the monitor does not wait for ever: a
         QEMU still there dies with it (PR_SET_PDEATHSIG, jail.c).  */
      if (vm->pidfd < 0 || poll (&exited, 1, END_TIMEOUT_MS) > 0)
        while (waitpid (vm->pid, NULL, 0) < 0 && errno == EINTR)
          ;
      vm->pid = -1;
    }
  if (vm->pidfd >= 0)
    close (vm->pidfd);
  vm->pidfd = -1;
  /* QEMU is gone: its cgroup is empty, its uid free once we let go.  */
  if (vm->cgroup_made)
    rt_cgroup_destroy (&vm->cgroup);
  vm->cgroup_made = false;
  if (vm->lease.uid != 0)
    rt_uid_release (&vm->lease);
  /* Nothing writes the disk any more.  */
  if (vm->disk_dir && vm->keep_disk)
    {
      rmdir (vm->jail_root);
      rt_rm_rf (vm->jail_vm, NULL);
    }
  else if (vm->disk_dir)
    rt_rm_rf (vm->disk_dir, NULL);
  else
    {
      if (vm->jail_root)
        rmdir (vm->jail_root);
      if (vm->jail_vm)
        rt_rm_rf (vm->jail_vm, NULL);
    }
  free (vm->agent_sock);
  free (vm->console_log);
  free (vm->disk_dir);
  free (vm->jail_root);
  free (vm->jail_vm);
  vm->agent_sock = vm->console_log = vm->disk_dir = vm->jail_root = vm->jail_vm = NULL;
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
      return rt_error_hint (err, "console: %.*s", (int) (strchrnul (panic, '\n') - show), show);
    }
  for (show = tail + strlen (tail); show > tail; show--)
    if (show[-1] == '\n' && ++lines == 8)
      break;
  return rt_error_hint (err, "last console lines: %s", show);
}
