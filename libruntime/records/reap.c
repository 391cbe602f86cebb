/* reap.c - the reaper: state dirs of dead monitors become host_stopped
   records, disks whose sandbox is gone go, paused sandboxes survive a
   reboot.  */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>

#include "core/state.h"
#include "common/pidfile.h"
#include "records/reap.h"
#include "records/store.h"
#include "vmm/cgroup.h"

/* How long the reaper waits for a dead monitor's QEMU to end: its uid and
   control group are free only then.  */
#define QEMU_EXIT_WAIT_MS 2000

/* A dead monitor's sandbox: write its record as host_stopped, make sure its
   QEMU is gone (it dies with the monitor: PR_SET_PDEATHSIG), remove it.  */
static void
reap_dead (rt_context *ctx, const char *dir)
{
  cleanup_free char *state_path = rt_strdup_printf ("%s/state.json", dir);
  cleanup_free char *qemu_pid = rt_strdup_printf ("%s/qemu.pid", dir);
  json_object *state = state_path ? rt_record_read (state_path) : NULL;
  pid_t pid = 0;

  if (qemu_pid && rt_pidfile_alive (qemu_pid, &pid) == 1)
    {
      int pidfd = pidfd_open (pid, 0);
      struct pollfd p = { .fd = pidfd, .events = POLLIN };

      kill (pid, SIGKILL);
      if (pidfd >= 0)
        {
          while (poll (&p, 1, QEMU_EXIT_WAIT_MS) < 0 && errno == EINTR)
            ;
          close (pidfd);
        }
    }
  /* A spare nobody claimed leaves no record (monitor/spare.h).  */
  if (state && json_object_get_boolean (json_object_object_get (state, "spare")))
    {
      json_object_put (state);
      state = NULL;
    }
  if (state)
    {
      const char *st = rt_json_str (state, "state");
      char now[32];
      rt_format_time (rt_epoch_ms (), now);
      if (st == NULL || !rt_state_is (st, RT_SANDBOX_STOPPED))
        {
          json_object_object_add (state, "state", json_object_new_string ("stopped"));
          json_object_object_add (state, "stopReason", json_object_new_string ("host_stopped"));
          json_object_object_add (state, "endedAt", json_object_new_string (now));
        }
      rt_store_write_record (ctx, state, NULL);
      json_object_put (state);
    }
  rt_rm_rf (dir, NULL);
}

/* A paused sandbox whose state dir went with a reboot (/run is RAM): its
   saved VM holds its state object, so the state dir is made again and it
   stays paused.  */
static bool
revive_paused (rt_context *ctx, const char *id, const char *disk)
{
  cleanup_free char *meta_path = rt_strdup_printf ("%s/saved/meta.json", disk);
  cleanup_free char *saved = rt_strdup_printf ("%s/saved", disk);
  cleanup_free char *dir = rt_sandbox_dir (ctx, id);
  cleanup_free char *text = NULL;
  cleanup_json json_object *meta = NULL;
  json_object *sb = NULL, *state = NULL, *p;

  if (meta_path == NULL || saved == NULL || dir == NULL || rt_read_file (meta_path, &text, NULL, NULL) < 0
      || (meta = json_tokener_parse (text)) == NULL || !json_object_object_get_ex (meta, "sandbox", &sb)
      || !json_object_object_get_ex (sb, "state", &state) || !json_object_is_type (state, json_type_object)
      || (mkdir (dir, 0700) < 0 && errno != EEXIST))
    return false;
  p = json_object_new_object ();
  json_object_object_add (p, "path", json_object_new_string (saved));
  json_object_object_add (p, "storedBytes", json_object_new_int64 (rt_json_i64 (meta, "storedBytes")));
  json_object_object_add (state, "paused", p);
  json_object_object_add (state, "state", json_object_new_string ("paused"));
  return rt_store_write_state (dir, state, NULL) == 0;
}

/* A sandbox paused to disk has no monitor: its state says paused and
   its saved VM is whole (sandbox/wake.h).  */
static bool
paused_to_disk (rt_context *ctx, const char *id, const char *dir)
{
  cleanup_free char *state_path = rt_strdup_printf ("%s/state.json", dir);
  cleanup_free char *disk = rt_sandbox_disk_dir (ctx, id);
  cleanup_free char *meta = disk ? rt_strdup_printf ("%s/saved/meta.json", disk) : NULL;
  cleanup_free char *text = NULL;
  cleanup_json json_object *state = NULL;
  const char *s;

  if (state_path == NULL || meta == NULL || access (meta, F_OK) < 0
      || rt_read_file (state_path, &text, NULL, NULL) < 0 || (state = json_tokener_parse (text)) == NULL)
    return false;
  s = rt_json_str (state, "state");
  if (s && rt_state_is (s, RT_SANDBOX_PAUSED))
    return true;
  /* Its monitor died between the capture and writing "paused": the
     capture is whole (saved/meta.json comes last), so it is paused.  */
  return revive_paused (ctx, id, disk);
}

/* Disk dirs (<data>/sandboxes/<id>/) whose state dir is gone: their
   "live" link (vmm/vm.c) dangles.  One without the link yet is being made,
   unless it is old.  */
static void
reap_disks (rt_context *ctx)
{
  cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  cleanup_dir DIR *d = records ? opendir (records) : NULL;
  struct dirent *de;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *dir = NULL, *live = NULL;
      struct stat st;
      if (strncmp (de->d_name, "sb-", 3) != 0 || strchr (de->d_name, '.'))
        continue;
      dir = rt_sandbox_disk_dir (ctx, de->d_name);
      live = rt_strdup_printf ("%s/%s/live", records, de->d_name);
      if (dir == NULL || live == NULL || lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
        continue;
      if (stat (live, &st) == 0 || revive_paused (ctx, de->d_name, dir))
        continue;
      if (lstat (live, &st) == 0 || (lstat (dir, &st) == 0 && st.st_mtime + 60 < time (NULL)))
        rt_rm_rf (dir, NULL);
    }
}

/* State dirs whose monitor died, or whose creation did.  */
static void
reap_states (rt_context *ctx)
{
  cleanup_dir DIR *d = opendir (ctx->state_dir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)))
    {
      cleanup_free char *dir = NULL, *monitor = NULL, *owner = NULL;
      int alive;

      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      dir = rt_sandbox_dir (ctx, de->d_name);
      monitor = rt_strdup_printf ("%s/monitor.pid", dir);
      owner = rt_strdup_printf ("%s/owner", dir);
      if (dir == NULL || monitor == NULL || owner == NULL)
        return;
      alive = rt_pidfile_alive (monitor, NULL);
      if (alive == 1 || paused_to_disk (ctx, de->d_name, dir))
        continue;
      if (alive == 0)
        {
          reap_dead (ctx, dir);
          continue;
        }
      /* No monitor yet: being created while its creator lives.  */
      alive = rt_pidfile_alive (owner, NULL);
      if (alive == 1)
        continue;
      if (alive == 0)
        {
          rt_rm_rf (dir, NULL);
          continue;
        }
      {
        /* Neither file: a crash between mkdir and the owner file; only an
           old one is surely stale.  */
        struct stat st;
        if (stat (dir, &st) == 0 && st.st_mtime + 60 < time (NULL))
          rt_rm_rf (dir, NULL);
      }
    }
}

void
rt_store_reap (rt_context *ctx)
{
  reap_states (ctx);
  /* After the state dirs: a disk dir goes with its state dir, and a
     control group with its QEMU (a monitor killed -9 leaves both).  */
  reap_disks (ctx);
  rt_cgroup_sweep ();
}
