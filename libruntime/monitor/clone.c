/* clone.c - starting a sandbox from a template (clone.h).  */
#include <fcntl.h>
#include <string.h>

#include "monitor/clone.h"
#include "vmm/guest-ops.h"
#include "vmm/migrate.h"

/* Loading ≈54 KB of device state takes a few ms; QEMU's own start-up is
   most of this.  */
#define LOAD_TIMEOUT_MS 20000
#define RESTORE_TIMEOUT_MS 20000

int
mon_clone_start (struct mon *m, const struct rt_vm_config *vm, bool resume, rt_error **err)
{
  const struct rt_template *t = m->cfg->tmpl;
  struct rt_vm_config cfg = *vm;
  cleanup_close int ram = -1, state = -1;
  struct rt_qmp q = { .fd = -1 };
  int ret;

  ret = rt_template_ram_fd (m->ctx, t, &ram, err);
  if (ret < 0)
    return ret;
  state = open (t->state, O_RDONLY | O_CLOEXEC);
  if (state < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open '%s': %s", t->state, strerror (errno));
  /* The template's own command line: a clone boots nothing, but its
     QEMU must describe the same machine.  */
  cfg.cmdline = t->cmdline;
  cfg.ram_fd = ram;
  cfg.ram_shared = false;
  cfg.template_disk = t->disk;
  cfg.overlay_from = t->clone_disk;
  cfg.disk_mib = 0;
  cfg.incoming = true;
  ret = rt_vm_start (m->ctx, &cfg, &m->vm, err);
  if (ret == 0)
    ret = rt_qmp_open (&q, m->qmp_sock, LOAD_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_vm_load_state (&q, state, resume, LOAD_TIMEOUT_MS, err);
  rt_qmp_close (&q);
  if (ret < 0)
    rt_vm_kill (&m->vm);
  return ret;
}

int
mon_clone_restore (struct mon *m, struct rt_channel *ch, rt_error **err)
{
  int ret = rt_channel_attach (ch, m->vm.agent_sock, m->vm.pidfd, RESTORE_TIMEOUT_MS, err);

  if (ret == 0)
    ret = rt_guest_restore (ch, m->cfg->id, RESTORE_TIMEOUT_MS, err);
  return ret;
}
