/* make.c - making a template (make.h): the VM booted with its RAM in a
   shared memfd, warmed, frozen and saved; its RAM, device state and disks
   written into a temporary dir that is renamed to the template's key.
   Everything lives in that dir (sockets, console, the VM's disk dir), so
   a maker killed at any step leaves one dir that rt_template_sweep
   removes, and a QEMU that dies with it (PR_SET_PDEATHSIG).  */
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <poll.h>

#include "net/netns.h"
#include "common/pidfile.h"
#include "snapshot/saved.h"
#include "template/make.h"
#include "vmm/console.h"
#include "vmm/guest-ops.h"
#include "vmm/migrate.h"
#include "vmm/vm.h"

#define BOOT_TIMEOUT_MS 60000
#define WARM_TIMEOUT_MS 60000
#define OP_TIMEOUT_MS 20000

/* What a making holds: released whatever happens.  */
struct making
{
  rt_context *ctx;
  const struct rt_template_inputs *in;
  char key[65];
  json_object *inputs;
  char *root;     /* <cache>/templates */
  char *tmp;      /* <root>/.tmp-XXXXXX */
  int lock_fd;
  int ram_fd;
  struct rt_netns net;
  struct rt_console console;
  struct rt_vm vm;
  bool vm_started;
  struct rt_channel ch;
  int64_t start_ms;
};

static void
making_clear (struct making *mk)
{
  rt_channel_close (&mk->ch);
  if (mk->vm_started)
    rt_vm_kill (&mk->vm);
  rt_console_close (&mk->console);
  rt_netns_close (&mk->net);
  if (mk->ram_fd >= 0)
    close (mk->ram_fd);
  if (mk->tmp)
    rt_rm_rf (mk->tmp, NULL);
  if (mk->lock_fd >= 0)
    close (mk->lock_fd);
  json_object_put (mk->inputs);
  free (mk->root);
  free (mk->tmp);
}
#define cleanup_making __attribute__ ((cleanup (making_clear)))

static char *
in_tmp (struct making *mk, const char *name)
{
  return rt_strdup_printf ("%s/%s", mk->tmp, name);
}

/* The lock of @key (one maker at a time), the temporary dir, the RAM
   memfd.  With @wait false, 1 when another maker holds the lock.  */
static int
prepare (struct making *mk, bool wait, rt_error **err)
{
  cleanup_free char *lock = NULL;
  int ret;

  mk->root = rt_strdup_printf ("%s/templates", mk->ctx->cache_dir);
  lock = mk->root ? rt_strdup_printf ("%s/.lock-%s", mk->root, mk->key) : NULL;
  if (lock == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (mk->root, 0700, err);
  if (ret < 0)
    return ret;
  mk->lock_fd = open (lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (mk->lock_fd < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", lock, strerror (errno));
  if (flock (mk->lock_fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) < 0)
    {
      if (errno == EWOULDBLOCK)
        return 1;
      return rt_error_set (err, errno, "internal", "cannot lock '%s': %s", lock, strerror (errno));
    }
  mk->tmp = rt_strdup_printf ("%s/.tmp-XXXXXX", mk->root);
  if (mk->tmp == NULL)
    return rt_error_oom (err);
  if (mkdtemp (mk->tmp) == NULL)
    {
      rt_error_set (err, errno, "internal", "cannot create a dir in '%s': %s", mk->root, strerror (errno));
      free (mk->tmp);
      mk->tmp = NULL;
      return -1;
    }
  /* The maker's pid: rt_template_sweep leaves the dir of a live one.  */
  {
    cleanup_free char *pidfile = in_tmp (mk, "maker.pid");
    if (pidfile == NULL || rt_write_pidfile (pidfile, getpid (), err) < 0)
      return pidfile ? -1 : rt_error_oom (err);
  }
  mk->ram_fd = memfd_create ("runtime-template", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mk->ram_fd < 0 || ftruncate (mk->ram_fd, (off_t) mk->in->memory_mib << 20) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot make the template's memory: %s", strerror (errno));
  return 0;
}

/* The namespace (no internet: nothing runs there but the warm-up), the
   console, the disk overlay, QEMU.  */
static int
boot (struct making *mk, rt_error **err)
{
  struct rt_egress_rules none = { 0 };
  cleanup_free char *disk = in_tmp (mk, "disk.qcow2"), *vmdir = in_tmp (mk, "vm");
  cleanup_free char *clone = in_tmp (mk, "clone.qcow2");
  int console_end = -1, ret;

  if (disk == NULL || vmdir == NULL || clone == NULL)
    return rt_error_oom (err);
  /* Both overlays before QEMU runs: once it has written disk.qcow2, its
     header is the guest's (an escaped QEMU's), and qemu-img on the host
     would follow the backing files it names.  */
  ret = rt_qcow2_create (mk->in->disk, "raw", disk, 0, err);
  if (ret == 0)
    ret = rt_qcow2_create (disk, "qcow2", clone, 0, err);
  /* qemu-img follows the umask: root's alone, as the rest.  */
  if (ret == 0 && (chmod (disk, 0600) < 0 || chmod (clone, 0600) < 0))
    ret = rt_error_set (err, errno, "internal", "chmod '%s': %s", clone, strerror (errno));
  if (ret == 0)
    ret = rt_netns_create (&mk->net, &none, err);
  if (ret == 0)
    ret = rt_console_open (&mk->console, mk->tmp, &console_end, err);
  if (ret < 0)
    return ret;
  {
    struct rt_vm_config cfg = { .dir = mk->tmp, .disk_dir = vmdir, .accel = mk->in->accel, .vcpu = mk->in->vcpu,
                                .memory_mib = mk->in->memory_mib, .vmlinux = mk->in->vmlinux,
                                .initramfs = mk->in->initramfs, .disk = mk->in->disk, .cmdline = RT_TEMPLATE_CMDLINE,
                                .channel = true, .tap_fd = mk->net.tap_fd, .netns_fd = mk->net.ns_fd,
                                .console_fd = console_end, .ram_fd = mk->ram_fd,
                                .overlay = disk };
    ret = rt_vm_start (mk->ctx, &cfg, &mk->vm, err);
  }
  close (console_end);
  mk->vm_started = true;
  if (ret < 0)
    return ret;
  close (mk->net.tap_fd);
  mk->net.tap_fd = -1;
  ret = rt_channel_connect (&mk->ch, mk->vm.agent_sock, mk->vm.pidfd, &mk->console, BOOT_TIMEOUT_MS, err);
  if (ret < 0)
    {
      rt_console_drain (&mk->console);
      rt_error_free (*err);
      *err = NULL;
      return rt_vm_startup_error (&mk->vm, err, "the template's VM did not boot");
    }
  return 0;
}

/* Python's files into the guest's page cache (an image without python3
   is warmed by its boot only), the file system frozen, the channel
   closed (a clone's agent then waits for its own host), the device
   state saved.  */
static int
warm_and_save (struct making *mk, rt_error **err)
{
  static const char *const warm[] = { "/bin/sh", "-c",
                                      "command -v python3 >/dev/null && python3 -c 'import json, os, sys' ; exit 0",
                                      NULL };
  cleanup_free char *qmp_sock = in_tmp (mk, "qmp.sock"), *state = in_tmp (mk, "state");
  cleanup_close int state_fd = -1;
  struct rt_qmp q;
  int code = 0, ret;

  if (qmp_sock == NULL || state == NULL)
    return rt_error_oom (err);
  ret = rt_guest_run (&mk->ch, warm, WARM_TIMEOUT_MS, &code, err);
  if (ret == 0)
    ret = rt_guest_freeze (&mk->ch, OP_TIMEOUT_MS, err);
  if (ret < 0)
    return ret;
  rt_channel_close (&mk->ch);
  /* Time for the agent to see the host go (it polls the port).  */
  poll (NULL, 0, 200);
  state_fd = open (state, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (state_fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", state, strerror (errno));
  ret = rt_qmp_open (&q, qmp_sock, OP_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_vm_save_state (&q, state_fd, OP_TIMEOUT_MS, err);
  rt_qmp_close (&q);
  if (ret < 0)
    return ret;
  /* QEMU is done: its shared mapping of the memfd goes with it.  */
  rt_vm_kill (&mk->vm);
  mk->vm_started = false;
  rt_console_close (&mk->console);
  rt_netns_close (&mk->net);
  return fsync (state_fd) < 0 ? rt_error_set (err, errno, "internal", "fsync '%s': %s", state, strerror (errno)) : 0;
}

/* The memfd's pages into <tmp>/ram, compressed (snapshot/ramfile.h), on
   disk before the rename that makes the template.  Return: the file's
   size, or <0.  */
static int64_t
write_ram (struct making *mk, rt_error **err)
{
  cleanup_free char *path = in_tmp (mk, "ram");
  cleanup_close int fd = -1;
  struct rt_ramfile_sizes written = { 0 };

  if (path == NULL)
    return rt_error_oom (err);
  if (rt_saved_write_ram (mk->ram_fd, (uint64_t) mk->in->memory_mib << 20, path, true, &written, err) < 0)
    return -1;
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync (fd) < 0)
    return rt_error_set (err, errno, "internal", "fsync '%s': %s", path, strerror (errno));
  return written.file;
}

/* clone.qcow2, meta.json, then the rename that makes it a template.  */
static int
finish (struct making *mk, int64_t ram_bytes, int64_t *made_ms, rt_error **err)
{
  cleanup_free char *disk = in_tmp (mk, "disk.qcow2");
  cleanup_free char *meta = in_tmp (mk, "meta.json"), *state = in_tmp (mk, "state");
  cleanup_free char *final = rt_strdup_printf ("%s/%s", mk->root, mk->key);
  cleanup_json json_object *m = json_object_new_object ();
  struct stat st;
  char now[32];
  int64_t ms;
  int ret;

  if (disk == NULL || meta == NULL || state == NULL || final == NULL || m == NULL)
    return rt_error_oom (err);
  /* Read-only from now on: every clone's overlay is backed by it.  */
  if (chmod (disk, 0400) < 0)
    return rt_error_set (err, errno, "internal", "chmod '%s': %s", disk, strerror (errno));
  ms = rt_epoch_ms () - mk->start_ms;
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (m, "inputs", json_object_get (mk->inputs));
  json_object_object_add (m, "createdAt", json_object_new_string (now));
  json_object_object_add (m, "cmdline", json_object_new_string (RT_TEMPLATE_CMDLINE));
  json_object_object_add (m, "memoryMiB", json_object_new_int64 (mk->in->memory_mib));
  json_object_object_add (m, "ramBytes", json_object_new_int64 (ram_bytes));
  json_object_object_add (m, "stateBytes", json_object_new_int64 (stat (state, &st) == 0 ? st.st_size : 0));
  json_object_object_add (m, "makeMs", json_object_new_int64 (ms));
  ret = rt_write_file_atomic (meta, json_object_to_json_string_ext (m, JSON_C_TO_STRING_PLAIN),
                              strlen (json_object_to_json_string_ext (m, JSON_C_TO_STRING_PLAIN)), 0600, err);
  if (ret < 0)
    return ret;
  /* Only the template stays: not the maker's sockets, logs and VM dir.  */
  {
    static const char *const gone[] = { "maker.pid", "agent.sock", "qmp.sock", "console.log", "qemu.log", "vm" };
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
      {
        cleanup_free char *p = in_tmp (mk, gone[i]);
        if (p)
          rt_rm_rf (p, NULL);
      }
  }
  if (rename (mk->tmp, final) < 0)
    return rt_error_set (err, errno, "internal", "cannot rename '%s' to '%s': %s", mk->tmp, final, strerror (errno));
  free (mk->tmp);
  mk->tmp = NULL;
  rt_template_remove_stale (mk->ctx, mk->in, mk->key);
  if (made_ms)
    *made_ms = ms;
  return 0;
}

static int
make (rt_context *ctx, const struct rt_template_inputs *in, bool wait, int64_t *made_ms, rt_error **err)
{
  cleanup_making struct making mk = { .ctx = ctx, .in = in, .lock_fd = -1, .ram_fd = -1,
                                      .net = { -1, -1, -1, -1, -1, -1 }, .console = { .sock = -1, .log_fd = -1 },
                                      .ch = { .fd = -1 } };
  struct rt_template t;
  int64_t ram_bytes;
  int ret;

  mk.start_ms = rt_epoch_ms ();
  /* What killed makers left (their QEMU died with them).  */
  rt_template_sweep (ctx);
  ret = rt_template_key (ctx, in, mk.key, &mk.inputs, err);
  if (ret < 0)
    return ret;
  ret = prepare (&mk, wait, err);
  if (ret != 0)
    return ret < 0 ? ret : 0;
  /* Made by another while we waited for the lock.  */
  ret = rt_template_find (ctx, in, &t, err);
  rt_template_clear (&t);
  if (ret != 0)
    return ret < 0 ? ret : 0;
  ret = boot (&mk, err);
  if (ret == 0)
    ret = warm_and_save (&mk, err);
  if (ret < 0)
    return ret;
  ram_bytes = write_ram (&mk, err);
  if (ram_bytes < 0)
    return -1;
  return finish (&mk, ram_bytes, made_ms, err);
}

int
rt_template_make (rt_context *ctx, const struct rt_template_inputs *in, int64_t *made_ms, rt_error **err)
{
  if (made_ms)
    *made_ms = 0;
  return make (ctx, in, true, made_ms, err);
}

void
rt_template_make_background (rt_context *ctx, const struct rt_template_inputs *in)
{
  struct rt_template t;
  int found;

  if (!rt_templates_enabled (ctx))
    return;
  found = rt_template_find (ctx, in, &t, NULL);
  rt_template_clear (&t);
  if (found != 0 || rt_detach () != 0)
    return;
  ctx->progress = NULL;
  rt_tenant_adopt (ctx, NULL); /* templates are shared machinery */
  _exit (make (ctx, in, false, NULL, NULL) < 0 ? 1 : 0);
}
