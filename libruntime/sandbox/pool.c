/* pool.c - warm spares (pool.h): what `runtime pool` asks, the spares
   that answer it, and a create's reservation and claim of one.  */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/base.h"
#include "image/disk.h"
#include "monitor/client.h"
#include "monitor/monitor.h"
#include "net/netns.h"
#include "sandbox/create.h"
#include "sandbox/handle.h"
#include "sandbox/pool.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "template/make.h"
#include "vmm/kernel.h"

#define MAX_SPARES 64

static char *
pools_path (rt_context *ctx)
{
  return rt_strdup_printf ("%s/pools.json", ctx->data_dir);
}

/* The pools asked for: an array (empty when none).  */
static json_object *
read_pools (rt_context *ctx)
{
  cleanup_free char *path = pools_path (ctx);
  json_object *o = path ? json_object_from_file (path) : NULL;

  if (json_object_is_type (o, json_type_array))
    return o;
  json_object_put (o);
  return json_object_new_array ();
}

static int
write_pools (rt_context *ctx, json_object *pools, rt_error **err)
{
  cleanup_free char *path = pools_path (ctx);
  const char *s = json_object_to_json_string_ext (pools, JSON_C_TO_STRING_PLAIN);

  if (path == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, s, strlen (s), 0600, err);
}

/* What a paused spare holds of the host's memory, counted against the
   cap: its QEMU's own (≈40 MiB measured) with room, a page table's worth
   of its guest, and its copy of the template's RAM (its own memfd, so
   that it can be saved: snapshot/saved.h; ≈100–150 MB of a 4 GiB guest's
   template).  */
static uint64_t
spare_cost_mib (uint64_t memory_mib)
{
  return 64 + memory_mib / 64 + memory_mib / 32;
}

/* The cap on all spares' memory: RUNTIME_POOL_MAX_MIB, else a tenth of
   the host's RAM.  */
static uint64_t
cap_mib (void)
{
  const char *v = getenv ("RUNTIME_POOL_MAX_MIB");
  long pages = sysconf (_SC_PHYS_PAGES), page = sysconf (_SC_PAGE_SIZE);

  if (v && *v)
    return strtoull (v, NULL, 10);
  return pages > 0 && page > 0 ? (uint64_t) pages * (uint64_t) page / 10 / (1024 * 1024) : 0;
}

/* Each live spare's state object, in an array.  */
static json_object *
live_spares (rt_context *ctx)
{
  cleanup_dir DIR *d = opendir (ctx->state_dir);
  json_object *arr = json_object_new_array ();
  struct dirent *de;

  while (d && arr && (de = readdir (d)))
    {
      cleanup_free char *path = NULL, *pid = NULL;
      json_object *st;
      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      path = rt_strdup_printf ("%s/%s/state.json", ctx->state_dir, de->d_name);
      pid = rt_strdup_printf ("%s/%s/monitor.pid", ctx->state_dir, de->d_name);
      st = path ? json_object_from_file (path) : NULL;
      if (st && rt_json_str (st, "state") && strcmp (rt_json_str (st, "state"), "spare") == 0 && pid
          && rt_pidfile_alive (pid, NULL) == 1)
        json_object_array_add (arr, st);
      else
        json_object_put (st);
    }
  return arr;
}

/* What a pool entry's template is made of; 0, or <0 when its image, the
   kernel or the accelerator cannot be had.  Strings live in @disk, @k.  */
static int
entry_inputs (rt_context *ctx, json_object *e, struct rt_image_disk *disk, struct rt_kernel_files *k,
              struct rt_template_inputs *in, rt_error **err)
{
  const char *accel;
  int ret = rt_kernel_ensure (ctx, k, err);

  if (ret == 0)
    ret = rt_image_ensure_disk (ctx, rt_json_str (e, "imageId"), disk, err);
  if (ret == 0)
    ret = rt_context_accel (ctx, &accel, err);
  if (ret < 0)
    return ret;
  *in = (struct rt_template_inputs){ .image_id = disk->id, .disk = disk->disk, .vcpu = (unsigned) rt_json_i64 (e, "vcpu"),
                                     .memory_mib = (unsigned) rt_json_i64 (e, "memoryMiB"), .disk_mib = 4096,
                                     .vmlinux = k->vmlinux, .initramfs = k->initramfs, .accel = accel };
  return 0;
}

static void
stop_one (rt_context *ctx, const char *id)
{
  cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);

  if (sb)
    rt_api_call (sb->sock, id, "stop", NULL, NULL, NULL);
}

static bool
same_shape (json_object *a, json_object *b)
{
  const char *x = rt_json_str (a, "imageId"), *y = rt_json_str (b, "imageId");

  return x && y && strcmp (x, y) == 0 && rt_json_i64 (a, "vcpu") == rt_json_i64 (b, "vcpu")
         && rt_json_i64 (a, "memoryMiB") == rt_json_i64 (b, "memoryMiB");
}

/* One spare of @t: a monitor in spare mode (monitor/spare.h).  */
static int
spawn_spare (rt_context *ctx, const struct rt_template_inputs *in, const struct rt_template *t, const char *workdir,
             rt_error **err)
{
  /* Its QEMU's CPU is capped at its vCPUs' cores, as a trial sandbox's
     (vmm/cgroup.c): whoever claims it, trial or paid.  */
  struct rt_egress_rules none = { .trial = true };
  char id[32];
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_free char *disk_dir = NULL, *log = NULL;
  cleanup_json json_object *state = json_object_new_object ();
  int ret = rt_sandbox_make_id (id, err);

  if (ret < 0)
    return ret;
  sb = rt_sandbox_handle_new (ctx, id);
  disk_dir = rt_sandbox_disk_dir (ctx, id);
  log = rt_egress_log_path (ctx, id);
  if (sb == NULL || disk_dir == NULL || log == NULL || state == NULL)
    return rt_error_oom (err);
  json_object_object_add (state, "id", json_object_new_string (id));
  json_object_object_add (state, "kind", json_object_new_string ("sandbox"));
  json_object_object_add (state, "state", json_object_new_string ("starting"));
  json_object_object_add (state, "imageId", json_object_new_string (in->image_id));
  json_object_object_add (state, "vcpu", json_object_new_int (in->vcpu));
  json_object_object_add (state, "memoryMiB", json_object_new_int (in->memory_mib));
  /* Kept while it stops too: never listed, never recorded.  */
  json_object_object_add (state, "spare", json_object_new_boolean (true));
  if (mkdir (sb->dir, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", sb->dir, strerror (errno));
  {
    struct rt_monitor_config mc = {
      .id = id, .dir = sb->dir,
      .vm = { .dir = sb->dir, .disk_dir = disk_dir, .accel = in->accel, .vcpu = in->vcpu, .memory_mib = in->memory_mib,
              .vmlinux = in->vmlinux, .initramfs = in->initramfs, .disk = in->disk, .channel = true },
      .workdir = workdir, .state = state, .net = none, .egress_log = log, .tmpl = t, .spare = true,
    };
    ret = rt_monitor_spawn (ctx, &mc, err);
  }
  if (ret < 0)
    rt_rm_rf (sb->dir, NULL);
  return ret;
}

/* Spares of @e's template up to its count, within the memory cap; the
   template first if there is none.  */
static void
fill_entry (rt_context *ctx, json_object *e, uint64_t *used_mib, uint64_t cap)
{
  struct rt_image_disk disk = { 0 };
  struct rt_kernel_files k = { 0 };
  struct rt_template_inputs in;
  struct rt_template t = { 0 };
  cleanup_json json_object *live = NULL;
  int64_t have = 0, want = rt_json_i64 (e, "spares");
  char key[65] = "";

  /* Spares of a template gone stale (the agent, the kernel, QEMU
     changed: another key) or of an image that cannot be had go; the
     others count.  */
  if (entry_inputs (ctx, e, &disk, &k, &in, NULL) < 0 || rt_template_key (ctx, &in, key, NULL, NULL) < 0)
    key[0] = '\0';
  live = live_spares (ctx);
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *sp = json_object_array_get_idx (live, i);
      const char *its = rt_json_str (sp, "template");
      if (!same_shape (sp, e))
        continue;
      if (its && key[0] && strcmp (its, key) == 0 && have < want)
        have++;
      else if (rt_json_str (sp, "id"))
        stop_one (ctx, rt_json_str (sp, "id"));
    }
  if (key[0] == '\0' || have >= want)
    goto out;
  if (rt_template_find (ctx, &in, &t, NULL) <= 0
      && (rt_template_make (ctx, &in, NULL, NULL) < 0 || rt_template_find (ctx, &in, &t, NULL) <= 0))
    goto out;
  for (; have < want && *used_mib + spare_cost_mib (in.memory_mib) <= cap; have++)
    {
      if (spawn_spare (ctx, &in, &t, disk.workdir, NULL) < 0)
        break;
      *used_mib += spare_cost_mib (in.memory_mib);
    }
out:
  rt_template_clear (&t);
  rt_image_disk_clear (&disk);
  rt_kernel_files_clear (&k);
}

/* Every pool topped up; spares no pool asks for any more are stopped.
   Under the pool lock: rt_pool_set and rt_pool_remove take it too, so a
   filler never makes spares for a pool just removed.  */
static void
fill_all (rt_context *ctx)
{
  cleanup_json json_object *pools = read_pools (ctx), *live = live_spares (ctx);
  uint64_t used = 0, cap = cap_mib ();

  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *sp = json_object_array_get_idx (live, i);
      bool asked = false;
      for (size_t j = 0; j < json_object_array_length (pools) && !asked; j++)
        asked = same_shape (sp, json_object_array_get_idx (pools, j))
                && rt_json_i64 (json_object_array_get_idx (pools, j), "spares") > 0;
      if (!asked && rt_json_str (sp, "id"))
        stop_one (ctx, rt_json_str (sp, "id"));
      else
        used += spare_cost_mib ((uint64_t) rt_json_i64 (sp, "memoryMiB"));
    }
  for (size_t i = 0; i < json_object_array_length (pools); i++)
    fill_entry (ctx, json_object_array_get_idx (pools, i), &used, cap);
}

/* The pool lock, or -1 (with @wait false: when another holds it).  */
static int
pool_lock (rt_context *ctx, bool wait)
{
  cleanup_free char *lock = rt_strdup_printf ("%s/.pool.lock", ctx->state_dir);
  int fd = lock ? open (lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;

  if (fd >= 0 && flock (fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0)
    {
      close (fd);
      fd = -1;
    }
  return fd;
}

static bool
has_pool (rt_context *ctx, const struct rt_template_inputs *in)
{
  cleanup_json json_object *pools = read_pools (ctx);

  for (size_t i = 0; i < json_object_array_length (pools); i++)
    {
      json_object *e = json_object_array_get_idx (pools, i);
      const char *id = rt_json_str (e, "imageId");
      if (id && strcmp (id, in->image_id) == 0 && rt_json_i64 (e, "vcpu") == in->vcpu
          && rt_json_i64 (e, "memoryMiB") == in->memory_mib && rt_json_i64 (e, "spares") > 0)
        return true;
    }
  return false;
}

void
rt_pool_fill_background (rt_context *ctx, const struct rt_template_inputs *in)
{
  if (!rt_templates_enabled (ctx) || (in && !has_pool (ctx, in)))
    return;
  if (rt_detach () != 0)
    return;
  ctx->progress = NULL;
  /* Spares are shared machinery: made in the host's view, the tenant
     stamped when one is claimed (sandbox/create.c).  */
  rt_tenant_adopt (ctx, NULL);
  if (pool_lock (ctx, false) >= 0)
    fill_all (ctx);
  _exit (0);
}

int
rt_pool_reserve (rt_context *ctx, const struct rt_template_inputs *in, const char *key, char id[32])
{
  cleanup_json json_object *live = NULL;

  /* Most creates have no pool: no scan of every sandbox's state then.  */
  if (!has_pool (ctx, in))
    return 0;
  live = live_spares (ctx);
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *s = json_object_array_get_idx (live, i);
      const char *k = rt_json_str (s, "template"), *sid = rt_json_str (s, "id");
      cleanup_sandbox rt_sandbox *sb = NULL;
      cleanup_json json_object *body = json_object_new_object ();
      if (k == NULL || sid == NULL || strcmp (k, key) != 0 || strlen (sid) >= 32)
        continue;
      sb = rt_sandbox_handle_new (ctx, sid);
      if (sb == NULL || body == NULL)
        return 0;
      json_object_object_add (body, "claimer", json_object_new_int64 (getpid ()));
      /* Taken by another create: the next one.  */
      if (rt_api_call (sb->sock, sid, "reserve", body, NULL, NULL) < 0)
        continue;
      snprintf (id, 32, "%s", sid);
      return 1;
    }
  return 0;
}

int
rt_pool_claim (rt_context *ctx, const char *id, json_object *claim, rt_error **err)
{
  cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);

  if (sb == NULL)
    return rt_error_oom (err);
  return rt_api_call (sb->sock, id, "claim", claim, NULL, err);
}

void
rt_pool_release (rt_context *ctx, const char *id)
{
  stop_one (ctx, id);
}

int
rt_pool_confirm (rt_context *ctx, const char *id, rt_error **err)
{
  cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);
  cleanup_json json_object *body = json_object_new_object ();

  if (sb == NULL || body == NULL)
    return rt_error_oom (err);
  return rt_api_call (sb->sock, id, "claimed", body, NULL, err);
}

/* ---- runtime pool set/ls/rm ---------------------------------------------- */

/* @pools with each entry's live spare count as "ready".  */
static void
add_ready (rt_context *ctx, json_object *pools)
{
  cleanup_json json_object *live = live_spares (ctx);

  for (size_t i = 0; i < json_object_array_length (pools); i++)
    {
      json_object *e = json_object_array_get_idx (pools, i);
      int64_t n = 0;
      for (size_t j = 0; j < json_object_array_length (live); j++)
        {
          json_object *s = json_object_array_get_idx (live, j);
          const char *a = rt_json_str (s, "imageId"), *b = rt_json_str (e, "imageId");
          n += a && b && strcmp (a, b) == 0 && rt_json_i64 (s, "vcpu") == rt_json_i64 (e, "vcpu")
               && rt_json_i64 (s, "memoryMiB") == rt_json_i64 (e, "memoryMiB");
        }
      json_object_object_add (e, "ready", json_object_new_int64 (n));
    }
}

/* Stops the live spares of image @image_id (every shape when @vcpu is 0)
   beyond @keep of each shape.  */
static void
stop_spares (rt_context *ctx, const char *image_id, unsigned vcpu, unsigned memory_mib, int64_t keep)
{
  cleanup_json json_object *live = live_spares (ctx);
  int64_t kept = 0;

  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *s = json_object_array_get_idx (live, i);
      const char *img = rt_json_str (s, "imageId"), *sid = rt_json_str (s, "id");
      if (img == NULL || sid == NULL || strcmp (img, image_id) != 0
          || (vcpu && (rt_json_i64 (s, "vcpu") != vcpu || rt_json_i64 (s, "memoryMiB") != memory_mib)))
        continue;
      if (kept++ >= keep)
        stop_one (ctx, sid);
    }
}

/* @ref's image id, the pool lock (held until *lock is closed) and the
   pools, read under it.  */
static int
open_pools (rt_context *ctx, const char *ref, char **id, int *lock, json_object **pools, rt_error **err)
{
  int ret = rt_image_resolve (ctx, ref, id, err);

  if (ret < 0)
    return ret;
  *lock = pool_lock (ctx, true);
  if (*lock < 0)
    return rt_error_set (err, errno, "internal", "cannot lock the pools: %s", strerror (errno));
  *pools = read_pools (ctx);
  return 0;
}

int
rt_local_pool_set (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib, char **json,
             rt_error **err)
{
  cleanup_json json_object *pools = NULL, *out = json_object_new_array ();
  cleanup_free char *id = NULL;
  cleanup_close int lock = -1;
  uint64_t others = 0, cap = cap_mib ();
  json_object *entry = NULL;
  int ret = rt_tenant_refuse (ctx, "a pool", err);

  if (ret < 0)
    return ret;
  vcpu = vcpu ? vcpu : 2;
  memory_mib = memory_mib ? memory_mib : 4096;
  if (spares > MAX_SPARES || vcpu > RT_MAX_VCPU || memory_mib < RT_MIN_MEMORY_MIB || memory_mib > RT_MAX_MEMORY_MIB)
    return rt_error_set (err, EINVAL, "invalid_request", "a pool is 0 to %d spares of 1 to %d vCPUs and %d to %d MiB",
                         MAX_SPARES, RT_MAX_VCPU, RT_MIN_MEMORY_MIB, RT_MAX_MEMORY_MIB);
  ret = open_pools (ctx, ref, &id, &lock, &pools, err);
  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (pools); i++)
    {
      json_object *e = json_object_array_get_idx (pools, i);
      if (strcmp (rt_json_str (e, "imageId") ? rt_json_str (e, "imageId") : "", id) == 0 && rt_json_i64 (e, "vcpu") == vcpu
          && rt_json_i64 (e, "memoryMiB") == memory_mib)
        entry = e;
      else
        others += (uint64_t) rt_json_i64 (e, "spares") * spare_cost_mib ((uint64_t) rt_json_i64 (e, "memoryMiB"));
    }
  if (others + (uint64_t) spares * spare_cost_mib (memory_mib) > cap)
    {
      rt_error_set (err, ENOSPC, "quota_exceeded",
                    "%u spares of %u MiB (%llu MiB of the host's each) would take spares past their cap of %llu MiB "
                    "(%llu MiB already asked)",
                    spares, memory_mib, (unsigned long long) spare_cost_mib (memory_mib), (unsigned long long) cap,
                    (unsigned long long) others);
      return rt_error_hint (err, "fewer --spares, less --memory, or a larger RUNTIME_POOL_MAX_MIB");
    }
  if (entry == NULL)
    {
      entry = json_object_new_object ();
      json_object_object_add (entry, "image", json_object_new_string (ref ? ref : "runtime"));
      json_object_object_add (entry, "imageId", json_object_new_string (id));
      json_object_object_add (entry, "vcpu", json_object_new_int (vcpu));
      json_object_object_add (entry, "memoryMiB", json_object_new_int (memory_mib));
      json_object_array_add (pools, entry);
    }
  json_object_object_add (entry, "spares", json_object_new_int (spares));
  ret = write_pools (ctx, pools, err);
  if (ret < 0)
    return ret;
  stop_spares (ctx, id, vcpu, memory_mib, spares);
  fill_all (ctx);
  json_object_array_add (out, json_object_get (entry));
  add_ready (ctx, out);
  if (json && (*json = strdup (json_object_to_json_string_ext (entry, JSON_C_TO_STRING_PLAIN))) == NULL)
    return rt_error_oom (err);
  return 0;
}

int
rt_local_pool_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *pools = NULL;

  if (rt_tenant_refuse (ctx, "a pool", err) < 0)
    return -EPERM;
  pools = read_pools (ctx);
  add_ready (ctx, pools);
  *json = strdup (json_object_to_json_string_ext (pools, JSON_C_TO_STRING_PLAIN));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_local_pool_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_json json_object *pools = NULL, *kept = json_object_new_array ();
  cleanup_free char *id = NULL;
  cleanup_close int lock = -1;
  bool found = false;
  int ret = rt_tenant_refuse (ctx, "a pool", err);

  if (ret == 0)
    ret = open_pools (ctx, ref, &id, &lock, &pools, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (pools); i++)
    {
      json_object *e = json_object_array_get_idx (pools, i);
      if (strcmp (rt_json_str (e, "imageId") ? rt_json_str (e, "imageId") : "", id) == 0)
        found = true;
      else
        json_object_array_add (kept, json_object_get (e));
    }
  if (!found)
    {
      rt_error_set (err, ENOENT, "not_found", "no pool of image '%s'", ref ? ref : "runtime");
      return rt_error_hint (err, "runtime pool ls lists them");
    }
  ret = write_pools (ctx, kept, err);
  if (ret == 0)
    stop_spares (ctx, id, 0, 0, 0);
  return ret;
}

void
rt_pool_forget_image (rt_context *ctx, const char *image_id)
{
  cleanup_json json_object *pools = NULL, *kept = json_object_new_array ();
  cleanup_close int lock = pool_lock (ctx, true);

  if (lock < 0 || kept == NULL)
    return;
  pools = read_pools (ctx);
  for (size_t i = 0; i < json_object_array_length (pools); i++)
    {
      json_object *e = json_object_array_get_idx (pools, i);
      const char *id = rt_json_str (e, "imageId");
      if (id == NULL || strcmp (id, image_id) != 0)
        json_object_array_add (kept, json_object_get (e));
    }
  if (json_object_array_length (kept) != json_object_array_length (pools))
    write_pools (ctx, kept, NULL);
  stop_spares (ctx, image_id, 0, 0, 0);
}
