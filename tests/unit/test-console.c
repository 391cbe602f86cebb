/* test-console.c - the guest's console log stays capped (vmm/console.c):
   1.5 MiB written by "QEMU" leave console.log.1 and console.log, together
   at most 2 × RT_CONSOLE_PART and ending with the last bytes written; the
   log is 0600 and never follows a planted symlink.  */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "tap.h"
#include "vmm/console.h"

static off_t
size_of (const char *dir, const char *name)
{
  cleanup_free char *p = rt_strdup_printf ("%s/%s", dir, name);
  struct stat st;
  return p && stat (p, &st) == 0 ? st.st_size : -1;
}

/* Writes @len bytes of @c's character, draining as the socket fills.  */
static void
feed (struct rt_console *con, int qemu_end, char c, size_t len)
{
  char buf[4096];

  memset (buf, c, sizeof (buf));
  while (len > 0)
    {
      ssize_t n = write (qemu_end, buf, len < sizeof (buf) ? len : sizeof (buf));
      if (n > 0)
        len -= n;
      rt_console_drain (con);
    }
}

static void
test_capped (void)
{
  char dir[] = "/tmp/test-console-XXXXXX";
  struct rt_console con;
  int qemu_end = -1, done;
  struct stat st;
  cleanup_free char *log = NULL, *tail = NULL;

  ok (mkdtemp (dir) != NULL, "a temporary directory");
  ok (rt_console_open (&con, dir, &qemu_end, NULL) == 0 && qemu_end >= 0, "the console opens");
  fcntl (qemu_end, F_SETFL, O_NONBLOCK);
  feed (&con, qemu_end, 'x', 1536 * 1024);
  feed (&con, qemu_end, '\n', 1);
  if (write (qemu_end, "the end\n", 8) != 8)
    ok (0, "the last line is written");
  close (qemu_end);
  done = rt_console_drain (&con);
  ok (done == 1, "QEMU's end closing ends the drain");
  ok (size_of (dir, "console.log.1") == RT_CONSOLE_PART, "console.log.1 holds one part (%lld)",
      (long long) size_of (dir, "console.log.1"));
  ok (size_of (dir, "console.log") > 0 && size_of (dir, "console.log") <= RT_CONSOLE_PART,
      "console.log holds at most one part (%lld)", (long long) size_of (dir, "console.log"));
  log = rt_strdup_printf ("%s/console.log", dir);
  tail = log ? rt_file_tail (log, 1) : NULL;
  ok (tail && strcmp (tail, "the end") == 0, "the last line is kept ('%s')", tail ? tail : "(null)");
  ok (log && stat (log, &st) == 0 && (st.st_mode & 0777) == 0600, "the log is 0600");
  rt_console_close (&con);

  /* A symlink planted where the log goes is not followed.  */
  unlink (log);
  if (symlink ("/dev/null", log) == 0)
    {
      rt_error *err = NULL;
      ok (rt_console_open (&con, dir, &qemu_end, &err) < 0 && err != NULL, "a symlinked console.log is refused");
      rt_error_free (err);
      rt_console_close (&con);
    }
  rt_rm_rf (dir, NULL);
}

int
main (void)
{
  test_capped ();
  return tap_done ();
}
