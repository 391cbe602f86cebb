/* clone.c - starting a sandbox from saved memory (clone.h).  */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <string.h>

#include "monitor/clone.h"
#include "monitor/procs.h"
#include "vmm/guest-ops.h"
#include "vmm/migrate.h"

/* Loading ≈54 KB of device state takes a few ms; QEMU's own start-up is
   most of this.  */
#define LOAD_TIMEOUT_MS 20000
#define RESTORE_TIMEOUT_MS 20000

int
mon_note_layers (struct mon *m, const struct rt_vm_config *vm, rt_error **err)
{
  for (size_t i = 0; i < RT_QEMU_MAX_LAYERS && vm->layers[i]; i++)
    {
      m->layers[i] = strdup (vm->layers[i]);
      if (m->layers[i] == NULL)
        return rt_error_oom (err);
      m->layer_fds[i] = open (vm->layers[i], O_RDONLY | O_CLOEXEC);
    }
  return 0;
}

void
mon_forget_layers (struct mon *m)
{
  for (size_t i = 0; i < RT_QEMU_MAX_LAYERS; i++)
    {
      free (m->layers[i]);
      m->layers[i] = NULL;
      if (m->layer_fds[i] >= 0)
        close (m->layer_fds[i]);
      m->layer_fds[i] = -1;
    }
}

/* A saved sandbox's "sandbox" object (snapshot/saved.h), or NULL.  */
json_object *
mon_saved_member (struct mon *m, const char *key)
{
  json_object *sb = NULL, *v = NULL;

  if (m->cfg->saved == NULL)
    return NULL;
  json_object_object_get_ex (m->cfg->saved->meta, "sandbox", &sb);
  json_object_object_get_ex (sb, key, &v);
  return v;
}

/* A woken sandbox bills on from where it stopped; its saved memory and
   state are spent (the layers stay: its disk is built on them).  */
void
mon_clone_woken (struct mon *m)
{
  json_object *meter = mon_saved_member (m, "meter");
  static const char *const spent[] = { "ram", "state", "meta.json" };

  m->meter.running_us = (uint64_t) rt_json_i64 (meter, "runningUs");
  m->meter.cpu_us = (uint64_t) rt_json_i64 (meter, "cpuUs");
  m->meter.billed_cpu_us = (uint64_t) rt_json_i64 (meter, "billedCpuUs");
  json_object_object_del (m->state, "paused");
  mon_set_str (m, "pausedAt", NULL);
  mon_set_str (m, "pauseReason", NULL);
  for (size_t i = 0; i < sizeof spent / sizeof spent[0]; i++)
    {
      cleanup_free char *p = rt_strdup_printf ("%s/%s", m->cfg->saved->dir, spent[i]);
      if (p)
        unlink (p);
    }
}

/* The source's RAM (*src), state, layers, overlay and command line into
   @cfg; the sandbox's own RAM, a memfd QEMU maps shared so that it can be
   saved again (snapshot/saved.h), made empty.  */
static int
describe (struct mon *m, struct rt_vm_config *cfg, int *src, int *state, rt_error **err)
{
  const struct rt_saved *s = m->cfg->saved;
  const struct rt_template *t = m->cfg->tmpl;
  const char *state_path = s ? s->state : t->state;
  int ret;

  if (s)
    {
      *src = open (s->ram, O_RDONLY | O_CLOEXEC);
      if (*src < 0)
        return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", s->ram, strerror (errno));
      for (size_t i = 0; i < s->n_layers; i++)
        cfg->layers[i] = s->layers[i];
      /* Woken, it writes on its own overlay; a child gets a new one.  */
      if (m->cfg->restore == RT_RESTORE_WAKE)
        cfg->overlay = m->overlay_path;
    }
  else
    {
      ret = rt_template_ram_fd (m->ctx, t, src, err);
      if (ret < 0)
        return ret;
      cfg->cmdline = t->cmdline;
      cfg->layers[0] = t->disk;
      cfg->overlay_from = t->clone_disk;
      cfg->disk_mib = 0;
    }
  m->ram_fd = memfd_create ("runtime-ram", MFD_CLOEXEC);
  if (m->ram_fd < 0 || ftruncate (m->ram_fd, (off_t) m->cfg->vm.memory_mib << 20) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot make the guest's memory: %s", strerror (errno));
  *state = open (state_path, O_RDONLY | O_CLOEXEC);
  if (*state < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", state_path, strerror (errno));
  return 0;
}

int
mon_clone_start (struct mon *m, const struct rt_vm_config *vm, bool resume, rt_error **err)
{
  struct rt_vm_config cfg = *vm;
  cleanup_close int state = -1, src = -1;
  struct rt_qmp q = { .fd = -1 };
  int ret;

  ret = describe (m, &cfg, &src, &state, err);
  if (ret == 0)
    {
      cfg.ram_fd = m->ram_fd;
      cfg.incoming = true;
      ret = mon_note_layers (m, &cfg, err);
    }
  if (ret == 0)
    ret = rt_vm_start (m->ctx, &cfg, &m->vm, err);
  /* The RAM is copied in (only its data: ≈100 MB of a 4 GiB guest's
     template), or a saved one decompressed, while QEMU starts, which
     takes ≈130 ms and does not touch it: it waits for its state, and the
     memfd is shared.  */
  if (ret == 0 && m->cfg->saved && m->cfg->saved->ram_packed)
    ret = rt_ramfile_read (src, m->ram_fd, (uint64_t) m->cfg->vm.memory_mib << 20, 0, m->cfg->saved->ram, err);
  else if (ret == 0)
    ret = rt_saved_ram_fill (src, m->ram_fd, (uint64_t) m->cfg->vm.memory_mib << 20, err);
  if (ret == 0)
    ret = rt_qmp_open (&q, m->qmp_sock, LOAD_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_vm_load_state (&q, state, resume, LOAD_TIMEOUT_MS, err);
  /* From here the guest may write its disk: a wake that fails now cannot
     leave it paused as it was (monitor.c).  */
  m->ran = ret == 0 && resume;
  rt_qmp_close (&q);
  if (ret < 0)
    {
      /* A woken sandbox that could not start is still paused: its disk
         stays.  */
      m->vm.keep_disk = m->cfg->saved && m->cfg->restore == RT_RESTORE_WAKE;
      rt_vm_kill (&m->vm);
      mon_forget_layers (m);
      if (m->ram_fd >= 0)
        close (m->ram_fd);
      m->ram_fd = -1;
    }
  return ret;
}

int
mon_clone_restore (struct mon *m, struct rt_channel *ch, rt_error **err)
{
  cleanup_free uint32_t *keep = NULL;
  size_t n_keep = 0;
  int ret = rt_channel_attach (ch, m->vm.agent_sock, m->vm.pidfd, RESTORE_TIMEOUT_MS, err);

  if (ret < 0)
    return ret;
  if (m->cfg->saved == NULL)
    return rt_guest_restore (ch, m->cfg->id, RESTORE_TIMEOUT_MS, err);
  /* The commands the sandbox's monitor knew (spawned processes) go on;
     the agent kills the others (their clients are gone).  */
  ret = mon_procs_streams (m, &keep, &n_keep, err);
  if (ret < 0)
    return ret;
  return rt_guest_restore_as (ch, m->cfg->id, m->cfg->restore, keep ? keep : (uint32_t[]){ 0 }, n_keep,
                              RESTORE_TIMEOUT_MS, err);
}
