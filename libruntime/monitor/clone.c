/* clone.c - starting a sandbox from saved memory (clone.h).  */
#include <fcntl.h>
#include <string.h>

#include "monitor/clone.h"
#include "monitor/procs.h"
#include "vmm/guest-ops.h"
#include "vmm/migrate.h"

/* Loading ≈54 KB of device state takes a few ms; QEMU's own start-up is
   most of this.  */
#define LOAD_TIMEOUT_MS 20000
#define RESTORE_TIMEOUT_MS 20000

/* The sandbox's own RAM: a copy of the saved one (only its data; a
   4 GiB guest's template holds ≈100 MB), in a memfd QEMU maps shared so
   that it can be saved again (snapshot/saved.h).  */
static int
ram_from (struct mon *m, int src, rt_error **err)
{
  return rt_saved_ram_memfd (src, (uint64_t) m->cfg->vm.memory_mib << 20, &m->ram_fd, err);
}

/* The source's RAM, state, layers, overlay and command line into @cfg.  */
static int
describe (struct mon *m, struct rt_vm_config *cfg, int *state, rt_error **err)
{
  const struct rt_saved *s = m->cfg->saved;
  const struct rt_template *t = m->cfg->tmpl;
  cleanup_close int src = -1;
  const char *state_path = s ? s->state : t->state;
  int ret;

  if (s)
    {
      src = open (s->ram, O_RDONLY | O_CLOEXEC);
      if (src < 0)
        return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", s->ram, strerror (errno));
      for (size_t i = 0; i < s->n_layers; i++)
        cfg->layers[i] = s->layers[i];
      /* Woken, it writes on its own overlay; a child gets a new one.  */
      if (m->cfg->restore == RT_RESTORE_WAKE)
        cfg->overlay = m->overlay_path;
    }
  else
    {
      ret = rt_template_ram_fd (m->ctx, t, &src, err);
      if (ret < 0)
        return ret;
      cfg->cmdline = t->cmdline;
      cfg->layers[0] = t->disk;
      cfg->overlay_from = t->clone_disk;
      cfg->disk_mib = 0;
    }
  ret = ram_from (m, src, err);
  if (ret < 0)
    return ret;
  *state = open (state_path, O_RDONLY | O_CLOEXEC);
  if (*state < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", state_path, strerror (errno));
  return 0;
}

int
mon_clone_start (struct mon *m, const struct rt_vm_config *vm, bool resume, rt_error **err)
{
  struct rt_vm_config cfg = *vm;
  cleanup_close int state = -1;
  struct rt_qmp q = { .fd = -1 };
  int ret;

  ret = describe (m, &cfg, &state, err);
  if (ret == 0)
    {
      cfg.ram_fd = m->ram_fd;
      cfg.incoming = true;
      ret = mon_note_layers (m, &cfg, err);
    }
  if (ret == 0)
    ret = rt_vm_start (m->ctx, &cfg, &m->vm, err);
  if (ret == 0)
    ret = rt_qmp_open (&q, m->qmp_sock, LOAD_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_vm_load_state (&q, state, resume, LOAD_TIMEOUT_MS, err);
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
