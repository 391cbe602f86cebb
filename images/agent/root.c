/* root.c - setting up the new root: mounts, host name, network, disk size.  */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot.h"
#include "root.h"
#include "users.h"

bool
hostname_valid (const char *s)
{
  size_t len = strlen (s);

  if (len == 0 || len > 64 || s[0] == '-' || s[0] == '.')
    return false;
  for (; *s; s++)
    if (!isalnum ((unsigned char) *s) && *s != '-' && *s != '.')
      return false;
  return true;
}

static void
loopback_up (void)
{
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;

  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (fd < 0 || ioctl (fd, SIOCGIFFLAGS, &ifr) < 0)
    goto fail;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl (fd, SIOCSIFFLAGS, &ifr) < 0)
    goto fail;
  return;
fail:
  agent_log ("cannot bring lo up: %s", strerror (errno));
}

int
write_file (const char *path, const char *text)
{
  cleanup_close int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);

  if (fd < 0)
    return -1;
  rt_write_all (fd, text, strlen (text));
  return 0;
}

static int
set_inet (struct sockaddr *sa, const char *text)
{
  struct sockaddr_in *in = (struct sockaddr_in *) sa;

  memset (in, 0, sizeof *in);
  in->sin_family = AF_INET;
  return inet_pton (AF_INET, text, &in->sin_addr) == 1 ? 0 : -1;
}

/* rt.net=GUEST,GATEWAY: eth0 gets GUEST/24, the default route and the
   resolver are the gateway.  Nothing here is a security boundary: the
   host decides what leaves the tap, whatever root does in here.  */
void
setup_net (struct agent *ag, const char *spec)
{
  char guest[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN], resolv[128];
  const char *comma = strchr (spec, ',');
  cleanup_close int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;
  struct rtentry rt;

  if (comma == NULL || (size_t) (comma - spec) >= sizeof guest || strlen (comma + 1) >= sizeof gw)
    goto bad;
  memcpy (guest, spec, comma - spec);
  guest[comma - spec] = '\0';
  strcpy (gw, comma + 1);
  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "eth0");
  if (set_inet (&ifr.ifr_addr, guest) < 0)
    goto bad;
  if (fd < 0 || ioctl (fd, SIOCSIFADDR, &ifr) < 0)
    goto fail;
  set_inet (&ifr.ifr_netmask, "255.255.255.0");
  if (ioctl (fd, SIOCSIFNETMASK, &ifr) < 0 || ioctl (fd, SIOCGIFFLAGS, &ifr) < 0)
    goto fail;
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl (fd, SIOCSIFFLAGS, &ifr) < 0)
    goto fail;
  memset (&rt, 0, sizeof rt);
  if (set_inet (&rt.rt_gateway, gw) < 0)
    goto bad;
  set_inet (&rt.rt_dst, "0.0.0.0");
  set_inet (&rt.rt_genmask, "0.0.0.0");
  rt.rt_flags = RTF_UP | RTF_GATEWAY;
  if (ioctl (fd, SIOCADDRT, &rt) < 0 && errno != EEXIST)
    goto fail;
  snprintf (resolv, sizeof resolv, "nameserver %s\noptions timeout:2 attempts:2\n", gw);
  unlink ("/etc/resolv.conf");
  if (write_file ("/etc/resolv.conf", resolv) < 0)
    agent_log ("cannot write /etc/resolv.conf: %s", strerror (errno));
  snprintf (ag->proxy_url, sizeof ag->proxy_url, "http://%s:3128", gw);
  strcpy (ag->gateway, gw);
  return;
bad:
  agent_log ("ignoring invalid rt.net '%s'", spec);
  return;
fail:
  agent_log ("cannot configure eth0: %s", strerror (errno));
}

void
setup_root (const struct agent *ag)
{
  static const char *const dev_links[][2] = {
    { "/proc/self/fd", "/dev/fd" },
    { "/proc/self/fd/0", "/dev/stdin" },
    { "/proc/self/fd/1", "/dev/stdout" },
    { "/proc/self/fd/2", "/dev/stderr" },
  };
  char name[128];
  const char *hostname = cmdline_get (ag, "rt.hostname", name, sizeof name);
  struct user u;

  mount_fs ("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=620,ptmxmode=666");
  mount_fs ("shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_fs ("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  mount_fs ("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
  /* What udev would add and what shells expect (/dev/fd for <(…)).  */
  for (size_t i = 0; i < sizeof dev_links / sizeof dev_links[0]; i++)
    if (symlink (dev_links[i][0], dev_links[i][1]) < 0 && errno != EEXIST)
      agent_log ("cannot create %s: %s", dev_links[i][1], strerror (errno));

  loopback_up ();

  if (hostname && !hostname_valid (hostname))
    {
      agent_log ("ignoring invalid rt.hostname '%s'", hostname);
      hostname = NULL;
    }
  if (hostname == NULL)
    hostname = "runtime";
  if (sethostname (hostname, strlen (hostname)) < 0)
    agent_log ("cannot set the host name: %s", strerror (errno));

  mkdir_quiet (WORKSPACE, 0755);
  if (resolve_user (DEFAULT_USER, &u) == 0 && lchown (WORKSPACE, u.uid, u.gid) < 0)
    agent_log ("cannot chown " WORKSPACE ": %s", strerror (errno));
}

/* The sandbox's disk is larger than its image's file system (--disk):
   grow the mounted ext4 online to fill it.  */
void
grow_root (void)
{
  int status = 0;
  pid_t pid = fork ();

  if (pid == 0)
    {
      int fd = open ("/dev/null", O_RDWR);
      if (fd >= 0)
        {
          dup2 (fd, 0);
          dup2 (fd, 1);
        }
      execl ("/sbin/resize2fs", "resize2fs", "/dev/vda", (char *) NULL);
      _exit (127);
    }
  if (pid < 0 || waitpid (pid, &status, 0) < 0 || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
    agent_log ("cannot grow the root file system (resize2fs: %d)", WIFEXITED (status) ? WEXITSTATUS (status) : -1);
}
