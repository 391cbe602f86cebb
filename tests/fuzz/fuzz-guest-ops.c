/* fuzz-guest-ops.c - the host's synchronous requests (vmm/guest-ops.c)
 * against whatever a hostile agent answers.
 *
 * Input: byte 0 picks the request (0 freeze, 1 restore, 2 run, 3 a
 * "child" restore keeping streams, 4 rt_guest_done_check of the rest as
 * one DONE payload, for "quiesce"); the rest is
 * the byte stream the "guest" sends, written at once into a socketpair
 * whose guest end is then shut: every call must end (at the stream's EOF at
 * the latest) without a crash.  Checked: a call succeeds or sets an error;
 * an error's message is one line without control bytes, bounded whatever
 * the guest said; a run's exit code is one the agent can give (0..383).
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "vmm/guest-ops.h"

#define INPUT_MAX (64u * 1024u)

static void
check_error (int ret, rt_error *err)
{
  FUZZ_CHECK ((ret == 0) == (err == NULL));
  if (err == NULL)
    return;
  FUZZ_CHECK (ret < 0 && err->msg && err->code);
  FUZZ_CHECK (strlen (err->msg) < 1200);
  for (const char *p = err->msg; *p; p++)
    FUZZ_CHECK ((unsigned char) *p >= 0x20 && *p != 0x7f);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const char *const argv[] = { "true", NULL };
  struct rt_channel ch = { .fd = -1, .vm_pidfd = -1 };
  rt_error *err = NULL;
  int sv[2], bufsize = 4 * INPUT_MAX, ret, code = -1;

  if (size < 1 || size - 1 > INPUT_MAX)
    return 0;
  FUZZ_CHECK (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  setsockopt (sv[1], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
  setsockopt (sv[0], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof bufsize);
  setsockopt (sv[0], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof bufsize);
  FUZZ_CHECK (rt_write_all (sv[1], data + 1, size - 1) == 0);
  shutdown (sv[1], SHUT_WR);
  ch.fd = sv[0];
  ch.reader = malloc (sizeof *ch.reader);
  FUZZ_CHECK (ch.reader != NULL);
  rt_frame_reader_init (ch.reader);
  switch (data[0] % 5)
    {
    case 3:
      {
        static const uint32_t keep[] = { 1, 2 };
        ret = rt_guest_restore_as (&ch, "child", RT_RESTORE_CHILD, keep, 2, 2000, &err);
        break;
      }
    case 4:
      {
        cleanup_json json_object *o = rt_channel_parse_json (data + 1, size - 1);
        ret = rt_guest_done_check (o, "quiesce", &err);
        break;
      }
    case 0:
      ret = rt_guest_freeze (&ch, 2000, &err);
      break;
    case 1:
      ret = rt_guest_restore (&ch, "clone", 2000, &err);
      break;
    default:
      ret = rt_guest_run (&ch, argv, 2000, &code, &err);
      FUZZ_CHECK (ret < 0 || (code >= 0 && code <= 383));
      break;
    }
  check_error (ret, err);
  rt_error_free (err);
  rt_channel_close (&ch);
  close (sv[1]);
  return 0;
}
