/* jail.h - starts QEMU in its jail: its own mount, PID, IPC and UTS
 * namespaces (in the sandbox's network namespace), a read-only root that
 * holds only what it opens, its own uid and gid, no capabilities,
 * no_new_privs, rlimits, its cgroup, an empty environment, and its fds at
 * fixed numbers (qemu-args.h).  See "The jail" in docs/ARCHITECTURE.md.
 *
 * The parent prepares everything (struct rt_jail: paths, strings, fds);
 * the child of clone3 only makes system calls on it: no allocation, no
 * lock, safe whatever threads the caller has.  Each step that fails is
 * reported on a pipe and fails the start; there is no fallback.
 */
#ifndef RT_JAIL_H
#define RT_JAIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "core/context.h"
#include "vmm/cgroup.h"
#include "vmm/qemu-args.h"

/* The mount flags of what the jail binds (rt_jail_bind).  */
#define RT_JAIL_RO (MS_RDONLY | MS_NOSUID | MS_NODEV)
#define RT_JAIL_RO_DATA (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define RT_JAIL_DEVICE (MS_NOSUID | MS_NOEXEC)
#define RT_JAIL_RW_DATA (MS_NOSUID | MS_NODEV | MS_NOEXEC)

struct rt_jail_bind
{
  char *src;           /* host path (symlinks followed) */
  char *dst;           /* the mount point under root, a host path */
  unsigned long flags; /* RT_JAIL_* */
  bool dir;
};

struct rt_jail
{
  bool off;    /* RUNTIME_UNSAFE_NO_JAIL: fds, session and
                          network namespace only */
  char *root;  /* an empty dir: the tmpfs root is mounted there */
  char **dirs; /* made in the tmpfs in this order (under @root) */
  size_t n_dirs;
  struct rt_jail_bind *binds;
  size_t n_binds;
  uid_t uid;    /* QEMU's uid, also its gid */
  gid_t kvm_gid; /* > 0: its one supplementary group, /dev/kvm's */
  int cap_last; /* /proc/sys/kernel/cap_last_cap */
  struct rlimit nofile, fsize, nproc;
  int cgroup_fds[RT_CGROUP_MAX_FDS]; /* cgroup.procs, -1 for none */
  int fds[RT_QEMU_NFDS];             /* QEMU's fds 3, 4, …; -1 for none */
  int log_fd;                        /* QEMU's stdout and stderr */
  int netns_fd;                      /* > 0: entered */
  bool proc;    /* a proc of QEMU's own PID namespace at /proc (pids
                   only): how it reopens its RAM memfd (/proc/self/fd) */
  char **argv;
  char **envp;
};

/* An empty jail: every fd -1, nothing bound.  */
void rt_jail_init (struct rt_jail *j);
/* Frees what the jail holds (not the fds: the caller's).  */
void rt_jail_clear (struct rt_jail *j);

/* Binds @src at @path inside the jail (absolute), with @flags; the
   directories above it are made in the tmpfs root.  */
int rt_jail_bind (struct rt_jail *j, const char *src, const char *path, unsigned long flags, bool dir, rt_error **err);

/* Starts j->argv in the jail; fills *pid and *pidfd (close-on-exec) and
   *setup_us, the microseconds from before clone to QEMU's exec.  Errors:
   "startup_failed", "the jail could not be set up: STEP: REASON".  */
int rt_jail_spawn (struct rt_jail *j, pid_t *pid, int *pidfd, uint64_t *setup_us, rt_error **err);

#endif
