/* restore.c - FREEZE, QUIESCE and RESTORE: a template's guest is frozen
   before its memory is saved; a running sandbox's agent is quiesced (it
   sends nothing more) before its memory is copied; each VM started from
   saved memory is made current before any user command: a clone of a
   template or a child of a snapshot unique (new entropy, clock, hostname,
   machine id and boot id; a clone's processes gone, a child's commands
   those its host keeps), a woken sandbox current (entropy, clock, the
   commands its host keeps).  All are answered by DONE.  */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/random.h>

#include "channel.h"
#include "commands.h"
#include "oneshot.h"
#include "restore.h"
#include "root.h"

/* linux/fs.h clashes with sys/mount.h; these are its values.  */
#ifndef FIFREEZE
#define FIFREEZE _IOWR ('X', 119, int)
#define FITHAW _IOWR ('X', 120, int)
#endif
#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004
#endif

#define BOOT_ID_PROC "/proc/sys/kernel/random/boot_id"
#define BOOT_ID_FILE "/run/runtime-boot_id"
#define REAP_MAX_MS 5000

/* DONE for @op, @message NULL when it went well.  @ahead: before the
   frames a quiesce holds back.  */
static void
send_done (struct agent *ag, const char *op, const char *message, bool ahead)
{
  cleanup_json json_object *o = json_object_new_object ();
  const char *s;
  size_t len;

  if (message)
    agent_log ("%s failed: %s", op, message);
  if (o == NULL)
    return;
  json_object_object_add (o, "op", json_object_new_string (op));
  json_object_object_add (o, "ok", json_object_new_boolean (message == NULL));
  if (message)
    json_object_object_add (o, "message", json_object_new_string (message));
  s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);
  if (s == NULL || (ahead ? send_frame_ahead : send_frame) (ag, RT_FRAME_DONE, 0, s, len) < 0)
    agent_log ("dropped DONE for %s", op);
}

/* Never blocks: at boot the generator may not be initialised yet, and
   uniqueness is what these bytes are for.  */
static void
random_bytes (uint8_t *buf, size_t n)
{
  size_t got = 0;

  while (got < n)
    {
      ssize_t r = getrandom (buf + got, n - got, GRND_NONBLOCK);
      if (r < 0 && errno == EAGAIN)
        r = getrandom (buf + got, n - got, GRND_INSECURE);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        {
          agent_log ("getrandom: %s", strerror (errno));
          return;
        }
      got += r;
    }
}

/* @text into @path by a rename, which replaces a link or a missing file
   alike and never writes through a link.  */
static int
replace_file (const char *path, const char *text, mode_t mode)
{
  char tmp[256];
  int fd;

  snprintf (tmp, sizeof tmp, "%s.runtime-new", path);
  unlink (tmp);
  fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return -1;
  if (rt_write_all (fd, text, strlen (text)) < 0 || fchmod (fd, mode) < 0)
    {
      int e = errno;
      close (fd);
      unlink (tmp);
      errno = e;
      return -1;
    }
  close (fd);
  if (rename (tmp, path) < 0)
    {
      int e = errno;
      unlink (tmp);
      errno = e;
      return -1;
    }
  return 0;
}

int
new_machine_id (void)
{
  static const char hex[] = "0123456789abcdef";
  uint8_t b[16];
  char id[34];

  random_bytes (b, sizeof b);
  for (size_t i = 0; i < sizeof b; i++)
    {
      id[2 * i] = hex[b[i] >> 4];
      id[2 * i + 1] = hex[b[i] & 15];
    }
  id[32] = '\n';
  id[33] = '\0';
  return replace_file ("/etc/machine-id", id, 0444);
}

/* A fresh UUID v4 bound over the kernel's read-only boot id.  A clone may
   be restored again: the previous bind goes first.  */
static int
new_boot_id (void)
{
  uint8_t b[16];
  char id[40];

  for (int i = 0; i < 16 && umount2 (BOOT_ID_PROC, MNT_DETACH) == 0; i++)
    ;
  random_bytes (b, sizeof b);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  snprintf (id, sizeof id, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", b[0], b[1], b[2],
            b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  if (replace_file (BOOT_ID_FILE, id, 0444) < 0)
    return -1;
  return mount (BOOT_ID_FILE, BOOT_ID_PROC, NULL, MS_BIND, NULL);
}

static int
add_entropy (const uint8_t *bytes, size_t n)
{
  cleanup_close int fd = open ("/dev/random", O_WRONLY | O_CLOEXEC);
  struct
  {
    struct rand_pool_info info;
    uint8_t buf[ENTROPY_BYTES];
  } req;

  if (fd < 0 || n > sizeof req.buf)
    return -1;
  req.info.entropy_count = 8 * n;
  req.info.buf_size = n;
  memcpy (req.buf, bytes, n);
  if (ioctl (fd, RNDADDENTROPY, &req.info) < 0)
    return -1;
  return ioctl (fd, RNDRESEEDCRNG);
}

/* The clone's host tap has a new MAC: forget the template's.  */
static int
forget_gateway (const struct agent *ag)
{
  cleanup_close int fd = -1;
  struct arpreq req;
  struct sockaddr_in *in = (struct sockaddr_in *) &req.arp_pa;

  if (ag->gateway[0] == '\0')
    return 0;
  memset (&req, 0, sizeof req);
  in->sin_family = AF_INET;
  if (inet_pton (AF_INET, ag->gateway, &in->sin_addr) != 1)
    return 0;
  snprintf (req.arp_dev, sizeof req.arp_dev, "eth0");
  fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (ioctl (fd, SIOCDARP, &req) < 0 && errno != ENXIO && errno != ENODEV)
    return -1;
  return 0;
}

/* Everything but the agent dies, is reaped, and the commands the agent
   tracked are forgotten: their streams belonged to the template's host.  */
static void
kill_all (struct agent *ag)
{
  int64_t until = now_ms () + REAP_MAX_MS;

  kill (-1, SIGKILL);
  for (;;)
    {
      pid_t pid = waitpid (-1, NULL, WNOHANG);
      if (pid > 0 || (pid < 0 && errno == EINTR))
        continue;
      if (pid < 0 || now_ms () >= until)
        break;
      sleep_ms (1);
    }
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (ag->cmds[i].used)
      cmd_free (ag, &ag->cmds[i]);
}

void
handle_freeze (struct agent *ag)
{
  cleanup_close int fd = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char msg[128];

  sync ();
  if (fd < 0 || ioctl (fd, FIFREEZE, 0) < 0)
    {
      snprintf (msg, sizeof msg, "cannot freeze /: %s", strerror (errno));
      send_done (ag, "freeze", msg, false);
      return;
    }
  send_done (ag, "freeze", NULL, false);
}

/* "mode" and "keep".  Return: NULL, or what is wrong.  */
static const char *
restore_parse_mode (json_object *o, struct restore_req *r)
{
  static const char *const names[] = { "clone", "child", "wake" };
  json_object *m = get_member (o, "mode");
  json_object *k = get_member (o, "keep");

  r->mode = MODE_CLONE;
  r->keep = NULL;
  if (m)
    {
      size_t i;

      for (i = 0; i < 3 && !(is_plain_string (m) && strcmp (json_object_get_string (m), names[i]) == 0); i++)
        ;
      if (i == 3)
        return "'mode' must be \"clone\", \"child\" or \"wake\"";
      r->mode = (enum restore_mode) i;
    }
  if (k == NULL)
    return NULL;
  if (!json_object_is_type (k, json_type_array))
    return "'keep' must be an array of stream ids";
  for (size_t i = 0; i < json_object_array_length (k); i++)
    {
      json_object *v = json_object_array_get_idx (k, i);

      /* json-c keeps integers over INT64_MAX as uint64: read both ways.  */
      if (!json_object_is_type (v, json_type_int) || json_object_get_int64 (v) < 0
          || json_object_get_uint64 (v) > UINT32_MAX)
        return "'keep' must be an array of stream ids";
    }
  if (r->mode != MODE_CLONE)
    r->keep = k;
  return NULL;
}

const char *
restore_parse (json_object *o, struct restore_req *r)
{
  json_object *e = o ? get_member (o, "entropy") : NULL;
  json_object *t = o ? get_member (o, "timeMs") : NULL;
  json_object *h = o ? get_member (o, "hostname") : NULL;
  uint8_t buf[4 * ENTROPY_BYTES];

  if (o == NULL)
    return "RESTORE payload is not a JSON object";
  if (!is_plain_string (e) || json_object_get_string_len (e) >= (int) sizeof buf
      || b64_decode (json_object_get_string (e), buf) != ENTROPY_BYTES)
    return "'entropy' must be the base64 of 64 bytes";
  memcpy (r->entropy, buf, ENTROPY_BYTES);
  if (!json_object_is_type (t, json_type_int) || json_object_get_int64 (t) <= 0
      || json_object_get_int64 (t) > INT64_MAX / 1000000)
    return "'timeMs' must be a positive integer";
  r->time_ms = json_object_get_int64 (t);
  if (!is_plain_string (h) || !hostname_valid (json_object_get_string (h)))
    return "'hostname' must be a valid host name";
  r->hostname = json_object_get_string (h);
  return restore_parse_mode (o, r);
}

static bool
keep_has (json_object *keep, uint32_t stream)
{
  for (size_t i = 0; i < json_object_array_length (keep); i++)
    if (json_object_get_uint64 (json_object_array_get_idx (keep, i)) == stream)
      return true;
  return false;
}

/* A child or a woken VM: the commands the new host does not know are
   killed (their process group), reaped and forgotten; the rest stay, and
   tell their output and exits to the new host.  */
static void
keep_commands (struct agent *ag, const struct restore_req *r)
{
  int64_t until = now_ms () + REAP_MAX_MS;

  for (size_t i = 0; i < MAX_CMDS; i++)
    {
      struct cmd *c = &ag->cmds[i];

      if (!c->used)
        continue;
      /* A child's host never saw what the source's was sent.  */
      if (r->mode == MODE_CHILD)
        c->unacked = 0;
      if (r->keep == NULL || (!c->orphan && keep_has (r->keep, c->stream)))
        continue;
      cmd_kill (c, SIGKILL);
      while (!c->exited && now_ms () < until)
        {
          pid_t pid = waitpid (c->pid, NULL, WNOHANG);
          if (pid == c->pid || (pid < 0 && errno != EINTR))
            break;
          sleep_ms (1);
        }
      cmd_free (ag, c);
    }
}

/* Return: NULL, or what failed (in @msg).  */
static const char *
restore_apply (struct agent *ag, const struct restore_req *r, char *msg, size_t size)
{
  cleanup_close int root = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct timespec ts = { r->time_ms / 1000, (r->time_ms % 1000) * 1000000 };
  const char *step;

  step = "thaw /";
  if (root < 0 || (ioctl (root, FITHAW, 0) < 0 && errno != EINVAL))
    goto fail;
  step = "add entropy";
  if (add_entropy (r->entropy, ENTROPY_BYTES) < 0)
    goto fail;
  step = "set the clock";
  if (clock_settime (CLOCK_REALTIME, &ts) < 0)
    goto fail;
  /* Woken, the sandbox is the same one: its identity stays.  */
  step = "set the host name";
  if (r->mode != MODE_WAKE && sethostname (r->hostname, strlen (r->hostname)) < 0)
    goto fail;
  step = "write /etc/machine-id";
  if (r->mode != MODE_WAKE && new_machine_id () < 0)
    goto fail;
  step = "set the boot id";
  if (r->mode != MODE_WAKE && new_boot_id () < 0)
    goto fail;
  step = "forget the gateway's address";
  if (forget_gateway (ag) < 0)
    goto fail;
  if (r->mode == MODE_CLONE)
    kill_all (ag);
  else
    keep_commands (ag, r);
  return NULL;
fail:
  snprintf (msg, size, "cannot %s: %s", step, strerror (errno));
  return msg;
}

void
handle_quiesce (struct agent *ag)
{
  /* Ahead of what a first QUIESCE already holds back, so a second one is
     answered too; from then on, only the first flushable bytes go out.  */
  send_done (ag, "quiesce", NULL, true);
  if (!ag->quiesced)
    {
      ag->quiesced = true;
      ag->flushable = ag->outq.len;
    }
}

void
handle_restore (struct agent *ag, const uint8_t *p, size_t len)
{
  cleanup_json json_object *o = parse_object (p, len);
  struct restore_req r;
  const char *why = restore_parse (o, &r);
  char msg[256];

  /* A bad request changes nothing, a quiesce included.  */
  if (why)
    {
      send_done (ag, "restore", why, true);
      return;
    }
  /* What a quiesced source queued for its host (its memory was copied
     after the DONE) is not for a clone's or a child's new one.  */
  if (r.mode != MODE_WAKE)
    outq_reset (ag);
  why = restore_apply (ag, &r, msg, sizeof msg);
  /* The DONE first, then what the quiesce held, then output again.  */
  send_done (ag, "restore", why, true);
  ag->quiesced = false;
  ag->flushable = 0;
}
