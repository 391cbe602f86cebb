/* netns.c - the sandbox's namespace, tap, nftables table and listeners.  */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <nftables/libnftables.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/netns.h"
#include "net/refused.h"

/* nft reserves "rt", "fwd", "in" (docs/ARCHITECTURE.md): hence these names.  */
#define TABLE "runtime_sandbox"

static void
leave (struct rt_netns *n)
{
  /* Failing to return would make every later dial leave from the wrong
     namespace: better to die, the sandbox then stops.  */
  if (setns (n->host_fd, CLONE_NEWNET) < 0)
    abort ();
}

static bool
is_v4_entry (const char *e)
{
  char addr[INET_ADDRSTRLEN];
  struct in_addr a;
  size_t len = strcspn (e, "/");

  if (len >= sizeof addr)
    return false;
  memcpy (addr, e, len);
  addr[len] = '\0';
  return inet_pton (AF_INET, addr, &a) == 1;
}

/* One batch: the add/delete pair makes the delete safe on the first run,
   and the whole replacement is atomic.  */
static char *
ruleset (const struct rt_egress_rules *r)
{
  cleanup_free char *elems = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&elems, &len);
  char *out;

  if (f == NULL)
    return NULL;
  /* The always-refused ranges (net/refused.c), also judged by the proxy:
     the kernel resets a guest's connection to them before the proxy sees
     it.  IPv4 only: the guard chain drops all of the guest's IPv6.  */
  rt_refused_v4_print (f);
  for (char **d = r->deny; d && *d; d++)
    if (is_v4_entry (*d))
      fprintf (f, ", %s", *d);
  if (fclose (f) != 0)
    return NULL;
  out = rt_strdup_printf (
      "add table inet " TABLE "\n"
      "delete table inet " TABLE "\n"
      "table inet " TABLE " {\n"
      "  set refused4 {\n"
      "    type ipv4_addr\n"
      "    flags interval\n"
      "    auto-merge\n"
      "    elements = { %s }\n"
      "  }\n"
      "  chain pre {\n"
      "    type nat hook prerouting priority dstnat; policy accept;\n"
      "    iifname \"" RT_NET_TAP "\" ip daddr != " RT_NET_GATEWAY " meta l4proto tcp redirect to :%d\n"
      "  }\n"
      "  chain guard {\n"
      "    type filter hook prerouting priority raw; policy accept;\n"
      "    iifname \"" RT_NET_TAP "\" meta nfproto ipv6 drop\n"
      "    iifname \"" RT_NET_TAP "\" ip daddr != " RT_NET_GATEWAY " meta l4proto != tcp drop\n"
      "  }\n"
      "  chain input {\n"
      "    type filter hook input priority filter; policy drop;\n"
      "    iifname \"lo\" accept\n"
      "    iifname \"" RT_NET_TAP "\" ip daddr " RT_NET_GATEWAY " udp dport %d accept\n"
      "    iifname \"" RT_NET_TAP "\" ct status dnat ct original ip daddr @refused4 reject with tcp reset\n"
      "    %siifname \"" RT_NET_TAP "\" ct status dnat tcp dport %d accept\n"
      "    iifname \"" RT_NET_TAP "\" ip daddr " RT_NET_GATEWAY " tcp dport %d ct status != dnat accept\n"
      "    meta l4proto tcp reject with tcp reset\n"
      "    reject with icmpx type admin-prohibited\n"
      "  }\n"
      "  chain forward {\n"
      "    type filter hook forward priority filter; policy drop;\n"
      "  }\n"
      "}\n",
      elems, RT_NET_TRANSPARENT_PORT, RT_NET_DNS_PORT,
      /* Internet off: the kernel resets every redirected connection.  */
      r->internet ? "" : "# ", RT_NET_TRANSPARENT_PORT, RT_NET_PROXY_PORT);
  return out;
}

/* Runs @cmds on the namespace's context (its socket was opened inside
   the namespace).  Reading a buffer empties it, so both are read after
   every run: nothing of one call shows in the next.  */
static int
nft_run (struct nft_ctx *nft, const char *cmds, char **output, rt_error **err)
{
  const char *msg, *out;
  int rc;

  nft_ctx_output_set_flags (nft, output ? NFT_CTX_OUTPUT_JSON : 0);
  rc = nft_run_cmd_from_buffer (nft, cmds);
  msg = nft_ctx_get_error_buffer (nft);
  out = nft_ctx_get_output_buffer (nft);
  if (rc != 0)
    {
      cleanup_free char *line = strdup (msg && *msg ? msg : "unknown error");
      if (line)
        line[strcspn (line, "\n")] = '\0';
      rt_error_set (err, EIO, "internal", "nftables refused the sandbox's rules: %s", line ? line : "");
      return rt_error_hint (err, "the host needs nf_tables, nft_nat and nf_conntrack (modprobe nf_tables)");
    }
  if (output)
    {
      *output = strdup (out ? out : "");
      if (*output == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

/* The netlink sockets of rule changes and conntrack flushes, made while
   the process is inside the namespace.  */
static int
open_netlink (struct rt_netns *n, rt_error **err)
{
  n->nft = nft_ctx_new (NFT_CTX_DEFAULT);
  if (n->nft == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot create an nftables context");
  nft_ctx_buffer_error (n->nft);
  nft_ctx_buffer_output (n->nft);
  n->conntrack = nfct_open (CONNTRACK, 0);
  if (n->conntrack == NULL)
    return rt_error_set (err, errno, "startup_failed", "cannot open conntrack in the sandbox's namespace: %s",
                         strerror (errno));
  return 0;
}

static int
if_up (int sock, const char *name, const char *addr, rt_error **err)
{
  struct ifreq ifr;
  struct sockaddr_in *in = (struct sockaddr_in *) &ifr.ifr_addr;

  memset (&ifr, 0, sizeof ifr);
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
  if (addr)
    {
      in->sin_family = AF_INET;
      inet_pton (AF_INET, addr, &in->sin_addr);
      if (ioctl (sock, SIOCSIFADDR, &ifr) < 0)
        goto fail;
      inet_pton (AF_INET, "255.255.255.0", &in->sin_addr);
      if (ioctl (sock, SIOCSIFNETMASK, &ifr) < 0)
        goto fail;
    }
  if (ioctl (sock, SIOCGIFFLAGS, &ifr) < 0)
    goto fail;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl (sock, SIOCSIFFLAGS, &ifr) < 0)
    goto fail;
  return 0;
fail:
  return rt_error_set (err, errno, "startup_failed", "cannot configure %s in the sandbox's namespace: %s", name,
                       strerror (errno));
}

static int
listen_on (int type, int port, rt_error **err)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (port) };
  int one = 1;
  int fd = socket (AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

  inet_pton (AF_INET, RT_NET_GATEWAY, &a.sin_addr);
  if (fd < 0)
    return rt_error_set (err, errno, "startup_failed", "socket: %s", strerror (errno));
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind (fd, (struct sockaddr *) &a, sizeof a) < 0 || (type == SOCK_STREAM && listen (fd, 128) < 0))
    {
      int e = errno;
      close (fd);
      return rt_error_set (err, e, "startup_failed", "cannot listen on port %d in the sandbox's namespace: %s", port,
                           strerror (e));
    }
  return fd;
}

static int
open_tap (rt_error **err)
{
  struct ifreq ifr;
  int fd = open ("/dev/net/tun", O_RDWR | O_CLOEXEC);

  if (fd < 0)
    {
      rt_error_set (err, errno, "startup_failed", "cannot open /dev/net/tun: %s", strerror (errno));
      return rt_error_hint (err, "modprobe tun");
    }
  memset (&ifr, 0, sizeof ifr);
  /* vnet headers let virtio-net pass large segments and skip checksums:
     far fewer packets to emulate under TCG.  */
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  snprintf (ifr.ifr_name, sizeof ifr.ifr_name, RT_NET_TAP);
  if (ioctl (fd, TUNSETIFF, &ifr) < 0)
    {
      int e = errno;
      close (fd);
      return rt_error_set (err, e, "startup_failed", "cannot create the tap device: %s", strerror (e));
    }
  return fd;
}

int
rt_netns_create (struct rt_netns *n, const struct rt_egress_rules *rules, rt_error **err)
{
  cleanup_close int sock = -1;
  cleanup_free char *cmds = NULL;
  int ret;

  n->host_fd = n->ns_fd = n->tap_fd = n->proxy_fd = n->transparent_fd = n->dns_fd = -1;
  n->nft = NULL;
  n->conntrack = NULL;
  n->host_fd = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (n->host_fd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open the host's network namespace: %s",
                         strerror (errno));
  if (unshare (CLONE_NEWNET) < 0)
    {
      rt_error_set (err, errno, "startup_failed", "cannot make the sandbox's network namespace: %s", strerror (errno));
      return rt_error_hint (err, "runtime needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to confine a sandbox's network");
    }
  /* From here on the process is inside; every way out goes through leave().  */
  n->ns_fd = open ("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (n->ns_fd < 0)
    {
      ret = rt_error_set (err, errno, "startup_failed", "cannot open the sandbox's network namespace: %s",
                          strerror (errno));
      goto out;
    }
  sock = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0)
    {
      ret = rt_error_set (err, errno, "startup_failed", "socket: %s", strerror (errno));
      goto out;
    }
  if ((ret = if_up (sock, "lo", NULL, err)) < 0)
    goto out;
  if ((ret = n->tap_fd = open_tap (err)) < 0)
    goto out;
  if ((ret = if_up (sock, RT_NET_TAP, RT_NET_GATEWAY, err)) < 0)
    goto out;
  cmds = ruleset (rules);
  if (cmds == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if ((ret = open_netlink (n, err)) < 0 || (ret = nft_run (n->nft, cmds, NULL, err)) < 0)
    goto out;
  if ((ret = n->proxy_fd = listen_on (SOCK_STREAM, RT_NET_PROXY_PORT, err)) < 0)
    goto out;
  if ((ret = n->transparent_fd = listen_on (SOCK_STREAM, RT_NET_TRANSPARENT_PORT, err)) < 0)
    goto out;
  if ((ret = n->dns_fd = listen_on (SOCK_DGRAM, RT_NET_DNS_PORT, err)) < 0)
    goto out;
  ret = 0;
out:
  leave (n);
  if (ret < 0)
    rt_netns_close (n);
  return ret;
}

int
rt_netns_apply (struct rt_netns *n, const struct rt_egress_rules *rules, rt_error **err)
{
  cleanup_free char *cmds = ruleset (rules);
  int ret;

  uint32_t family = AF_INET;

  if (cmds == NULL)
    return rt_error_oom (err);
  if (n->nft == NULL || n->conntrack == NULL)
    return rt_error_set (err, EBADF, "internal", "the sandbox's network is closed");
  ret = nft_run (n->nft, cmds, NULL, err);
  if (ret == 0)
    nfct_query (n->conntrack, NFCT_Q_FLUSH, &family);
  return ret;
}

int
rt_netns_list (struct rt_netns *n, char **json, rt_error **err)
{
  if (n->nft == NULL)
    return rt_error_set (err, EBADF, "internal", "the sandbox's network is closed");
  return nft_run (n->nft, "list table inet " TABLE, json, err);
}

void
rt_netns_close (struct rt_netns *n)
{
  int *fds[] = { &n->host_fd, &n->ns_fd, &n->tap_fd, &n->proxy_fd, &n->transparent_fd, &n->dns_fd };

  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (*fds[i] >= 0)
      {
        close (*fds[i]);
        *fds[i] = -1;
      }
  if (n->nft)
    nft_ctx_free (n->nft);
  n->nft = NULL;
  if (n->conntrack)
    nfct_close (n->conntrack);
  n->conntrack = NULL;
}
