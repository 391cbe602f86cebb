/* main.c - the guest agent: PID 1 of a sandbox VM.
 *
 * Boots the guest (pseudo filesystems, kernel modules, root disk,
 * switch_root), then serves the host over the virtio-serial port
 * RT_CHANNEL_NAME with the framed protocol of proto.h: runs commands, streams
 * their output under per-stream flow control, reports their exit.
 *
 * It is init: it must never exit (the kernel would panic), it reaps every
 * orphan, and nothing the host or the user's code does may crash it.  It is
 * single-threaded around one poll() loop; all its own fds are O_CLOEXEC.
 * agent.h says which file holds what.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/reboot.h>

#include "agent.h"
#include "boot.h"
#include "loop.h"
#include "oneshot.h"
#include "restore.h"
#include "root.h"

int
main (void)
{
  char probe[8];
  static char cmd[CMDLINE_MAX];
  static struct agent ag_storage;
  struct agent *ag = &ag_storage;
  sigset_t mask;

  /* SIGCHLD goes to a signalfd; writes to a closed pipe return EPIPE.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGCHLD);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  signal (SIGPIPE, SIG_IGN);
  reboot (RB_DISABLE_CAD);

  boot_early ();
  read_cmdline (ag);
  if (cmdline_get (ag, "rt.probe", probe, sizeof probe) && strcmp (probe, "1") == 0)
    {
      static const char ok[] = AGENT_NAME ": probe ok\n";
      int fd = open ("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
      rt_write_all (fd >= 0 ? fd : 2, ok, sizeof ok - 1);
      power_off ();
    }

  load_modules ();
  switch_root ();
  setup_root (ag);
  if (cmdline_get (ag, "rt.growfs", probe, sizeof probe) && strcmp (probe, "1") == 0)
    grow_root ();
  if (cmdline_get (ag, "rt.net", cmd, sizeof cmd))
    setup_net (ag, cmd);
  /* Each sandbox its own, cold ones of one image too (clones get theirs
     at RESTORE).  */
  if (new_machine_id () < 0)
    agent_log ("cannot write /etc/machine-id: %s", strerror (errno));
  if (cmdline_get (ag, "rt.cmd", cmd, sizeof cmd))
    run_once (cmd, ag->proxy_url);
  if (cmdline_get (ag, "rt.rawbench", cmd, sizeof cmd))
    rawbench (cmd);
  serve (ag);
}
