/* copy.c - cp between the host and a sandbox, as tar streams made and read
   with libarchive on the host and the guest's own tar inside.
 *
 * Out: the guest's `tar -c` streams through the exec channel into a child
 * process that extracts it (libarchive is pull-based; the exec callbacks
 * push) into a temp dir beside the destination, renamed into place only
 * when the command ended cleanly, tar said 0 and the archive was whole.
 * In: a child writes the tar into a FIFO in the sandbox's state dir (stdin.h),
 * which the monitor streams to the guest's `tar -x` paced by the guest's stdin
 * credit; the guest extracts into a temp dir and renames.  Either way a
 * short copy never lands under the real name.
 *
 * The guest controls every byte of a copy out: unpack.c decides what of
 * it lands.  Its header (sandbox/copy.h) shares both ends with client
 * mode (remote/files.c), which carries the same tars over HTTP.
 */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "core/checks.h"
#include "sandbox/copy.h"
#include "sandbox/files.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "sandbox/stdin.h"
#include "sandbox/unpack.h"

/* The guest's stderr kept for a message: its first bytes are enough.  */
#define ERR_KEEP 1024

/* The last component of @path without trailing slashes; NULL for "/".  */
static char *
base_name (const char *path)
{
  cleanup_free char *copy = strdup (path);
  size_t len;
  char *b;

  if (copy == NULL)
    return NULL;
  len = strlen (copy);
  while (len > 1 && copy[len - 1] == '/')
    copy[--len] = '\0';
  b = basename (copy);
  if (strcmp (b, "/") == 0 || strcmp (b, ".") == 0 || strcmp (b, "..") == 0)
    return NULL;
  return strdup (b);
}

/* Child: extract the tar arriving on @fd into the current directory
   (unpack.c); the counts, then the detail, go back on @errfd.  */
static void __attribute__ ((noreturn))
extract_child (int fd, int errfd, const struct rt_unpack_limits *lim)
{
  rt_copy_result res;
  char why[512];
  enum rt_unpack_status status;

  prctl (PR_SET_PDEATHSIG, SIGKILL);
  status = rt_unpack (fd, lim, &res, why, sizeof (why));
  if (write (errfd, &res, sizeof (res)) != sizeof (res) || write (errfd, why, strlen (why)) < 0)
    _exit (RT_UNPACK_FAILED);
  _exit (status);
}

static int
wait_child (pid_t pid)
{
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

/* The first bytes of the guest's stderr, for a message: a guest that
   floods it costs nothing more.  */
struct guest_err
{
  char buf[ERR_KEEP];
  size_t len;
};

static void
keep_err (struct guest_err *g, const char *buf, size_t len)
{
  size_t n = len < sizeof (g->buf) - g->len ? len : sizeof (g->buf) - g->len;

  memcpy (g->buf + g->len, buf, n);
  g->len += n;
}

/* The kept stderr escaped into @out, or @dflt when there is none.  */
static const char *
guest_err_text (const struct guest_err *g, char *out, size_t size, const char *dflt)
{
  rt_unpack_escape (out, size, g->buf, g->len);
  return *out ? out : dflt;
}

/* What may follow the end of an archive the extractor took whole: tar's
   padding to a 10 KiB record, not a stream that never ends.  */
#define TRAILER_MAX (1 << 20)

struct to_child
{
  int fd;
  pid_t pid;
  int status;         /* the extractor's, once it ended (ended) */
  bool ended;
  struct guest_err err;
  size_t bytes;       /* archive bytes that arrived */
  size_t trailer;     /* bytes after the extractor took the archive whole */
  bool broken;
};

static int
to_child (void *data, int stream, const char *buf, size_t len)
{
  struct to_child *t = data;

  if (stream == 2)
    {
      keep_err (&t->err, buf, len);
      return 0;
    }
  t->bytes += len;
  while (len > 0 && !t->ended)
    {
      ssize_t n = send (t->fd, buf, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          /* The extractor closed its end: it is exiting.  Done with a
             whole archive, the rest is padding; gave up (its own message
             says why), the guest's stream stops rather than run on.  */
          t->status = wait_child (t->pid);
          t->ended = true;
          break;
        }
      buf += n;
      len -= n;
    }
  if (t->ended)
    {
      t->trailer += len;
      t->broken = t->status != RT_UNPACK_OK || t->trailer > TRAILER_MAX;
    }
  return t->broken ? -1 : 0;
}

static char *
read_all_fd (int fd)
{
  char buf[1024];
  ssize_t n = read (fd, buf, sizeof (buf) - 1);
  return strndup (buf, n > 0 ? n : 0);
}

/* The copy's final path @dst, or @name in it when it is a directory (as
   cp does), and a private (0700) temp dir beside it to extract into.  */
static int
out_target (const char *dst, const char *name, char **final, char **tmp, rt_error **err)
{
  cleanup_free char *parent = NULL;
  struct stat st;

  if (stat (dst, &st) == 0 && S_ISDIR (st.st_mode))
    *final = rt_strdup_printf ("%s/%s", dst, name);
  else
    *final = strdup (dst);
  if (*final == NULL)
    return rt_error_oom (err);
  {
    cleanup_free char *copy = strdup (*final);
    parent = copy ? strdup (dirname (copy)) : NULL;
  }
  *tmp = parent ? rt_strdup_printf ("%s/.rt-cp-XXXXXX", parent) : NULL;
  if (*tmp == NULL)
    return rt_error_oom (err);
  if (mkdtemp (*tmp) == NULL)
    return rt_error_set (err, errno, errno == ENOENT ? "file_not_found" : "internal", "cannot write into '%s': %s",
                         parent, strerror (errno));
  return 0;
}

/* Forks extract_child in @tmp: the archive goes to *sock, its report comes
   back on *errfd.  @tmp is removed on failure.  */
static int
start_extractor (const char *tmp, const struct rt_unpack_limits *lim, int *sock, int *errfd, pid_t *pid,
                 rt_error **err)
{
  int sv[2], errp[2];

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2 (errp, O_CLOEXEC) < 0)
    {
      rt_rm_rf (tmp, NULL);
      return rt_error_set (err, errno, "internal", "socketpair: %s", strerror (errno));
    }
  *pid = fork ();
  if (*pid == 0)
    {
      close (sv[0]);
      close (errp[0]);
      if (chdir (tmp) < 0)
        _exit (RT_UNPACK_FAILED);
      extract_child (sv[1], errp[1], lim);
    }
  close (sv[1]);
  close (errp[1]);
  if (*pid < 0)
    {
      close (sv[0]);
      close (errp[0]);
      rt_rm_rf (tmp, NULL);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  *sock = sv[0];
  *errfd = errp[0];
  return 0;
}

/* The extractor's report: its counts into @res, its detail.  */
static char *
read_report (int fd, rt_copy_result *res)
{
  if (read (fd, res, sizeof (*res)) != sizeof (*res))
    memset (res, 0, sizeof (*res));
  return read_all_fd (fd);
}

/* The extractor's own refusals, which stand whatever the stream did (it
   was stopped because of them).  */
static int
out_refused (int status, const char *why, const char *src, const struct rt_unpack_limits *lim, const char *final,
             rt_error **err)
{
  cleanup_free char *dir = strdup (final);

  switch (status)
    {
    case RT_UNPACK_TOO_BIG:
      rt_error_set (err, EFBIG, "download_incomplete", "the copy of %s is larger than %llu bytes; nothing was written",
                    src, (unsigned long long) lim->max_size);
      return rt_error_hint (err, "--max-size SIZE (for example 20G) allows a larger copy");
    case RT_UNPACK_NO_SPACE:
      return rt_error_set (err, ENOSPC, "download_incomplete", "no room for the copy of %s in %s; nothing was written",
                           src, dir ? dirname (dir) : final);
    case RT_UNPACK_TOP_LINK:
      rt_error_set (err, ELOOP, "invalid_request", "%s in the sandbox is a symlink (to %s); nothing was written", src,
                    why);
      return rt_error_hint (err, "copy what it points to, or pass --keep-links to copy the link itself");
    default:
      return rt_error_set (err, EIO, "internal", "the extractor refused %s (status %d)", src, status);
    }
}

/* Drops the exec's error: the extractor's verdict, which stopped the
   stream, or a plainer one replaces it.  */
static void
drop_error (rt_error **err)
{
  if (err)
    {
      rt_error_free (*err);
      *err = NULL;
    }
}

/* The copy's outcome from the exec's (@ret, @res), the guest tar's and the
   extractor's (@status, @why) verdicts: 0 when the copy is whole.  */
static int
out_verdict (int ret, const rt_exec_result *res, const struct to_child *t, int status, const char *why,
             const char *src, const struct rt_unpack_limits *lim, const char *final, rt_error **err)
{
  char guest_err[ERR_KEEP * 6];
  const char *detail = why && *why ? why : NULL;

  if (ret == 0 && res->interrupted)
    return rt_error_set (err, EINTR, "interrupted", "the copy of %s was interrupted; nothing was written", src);
  if (ret < 0 && err && *err && strcmp ((*err)->code, "interrupted") == 0)
    return ret;
  if (status == RT_UNPACK_TOO_BIG || status == RT_UNPACK_NO_SPACE || status == RT_UNPACK_TOP_LINK)
    {
      drop_error (err);
      return out_refused (status, why, src, lim, final, err);
    }
  if (ret < 0 && t->broken && status == RT_UNPACK_FAILED)
    drop_error (err);
  else if (ret < 0 && t->bytes > 0)
    {
      /* The stream broke off midway: what arrived is not the whole thing.
         (An error before any byte, paused or not found, stands as it is.)  */
      drop_error (err);
      return rt_error_set (err, EIO, "download_incomplete", "the copy of %s was cut short", src);
    }
  else if (ret < 0)
    return ret;
  else if (res->exit_code == EXIT_MISSING)
    return rt_error_set (err, ENOENT, "file_not_found", "no such file in the sandbox: %s", src);
  else if (res->exit_code != 0)
    return rt_error_set (err, EIO, "internal", "cannot read %s in the sandbox: %s", src,
                         guest_err_text (&t->err, guest_err, sizeof (guest_err), "tar failed"));
  if (status == RT_UNPACK_BROKEN)
    return rt_error_set (err, EIO, "download_incomplete", "the copy of %s is incomplete: %s", src,
                         detail ? detail : "the archive ended early");
  if (status == RT_UNPACK_MISSING)
    return rt_error_set (err, EIO, "download_incomplete", "the sandbox sent no %s", src);
  if (status != 0)
    return rt_error_set (err, EIO, "internal", "cannot write %s: %s", final, detail ? detail : "extraction failed");
  return 0;
}

/* Renames the item from @tmp to @final.  */
static int
out_land (const char *tmp, const char *name, const char *final, rt_error **err)
{
  cleanup_free char *from = rt_strdup_printf ("%s/%s", tmp, name);

  if (from == NULL)
    return rt_error_oom (err);
  if (rename (from, final) < 0)
    return rt_error_set (err, errno, errno == EISDIR || errno == ENOTEMPTY ? "invalid_request" : "internal",
                         "cannot put the copy at '%s': %s", final, strerror (errno));
  return 0;
}

/* A copy out under way (sandbox/copy.h).  */
struct rt_copy_sink
{
  char *name, *final, *tmp;
  struct rt_unpack_limits lim;
  struct to_child t;
  int errfd;
};

static void
sink_free (struct rt_copy_sink *k)
{
  if (k->tmp)
    rt_rm_rf (k->tmp, NULL);
  free (k->name);
  free (k->final);
  free (k->tmp);
  free (k);
}

int
rt_copy_out_start (const char *src, const char *dst, const rt_copy_opts *opts, struct rt_copy_sink **out,
                   rt_error **err)
{
  struct rt_copy_sink *k = calloc (1, sizeof (*k));
  int ret;

  if (k == NULL)
    return rt_error_oom (err);
  k->t.fd = k->t.pid = k->errfd = -1;
  k->name = base_name (src);
  if (k->name == NULL)
    {
      sink_free (k);
      return rt_error_set (err, EINVAL, "usage", "cannot copy '%s' itself; name a file or directory in it", src);
    }
  k->lim.name = k->name;
  k->lim.keep_links = opts && opts->keep_links;
  k->lim.max_size = opts && opts->max_size ? opts->max_size : RT_COPY_MAX_SIZE_DEFAULT;
  ret = out_target (dst, k->name, &k->final, &k->tmp, err);
  if (ret == 0)
    ret = start_extractor (k->tmp, &k->lim, &k->t.fd, &k->errfd, &k->t.pid, err);
  if (ret < 0)
    {
      sink_free (k);
      return ret;
    }
  *out = k;
  return 0;
}

int
rt_copy_out_feed (void *sink, int stream, const char *buf, size_t len)
{
  return to_child (&((struct rt_copy_sink *) sink)->t, stream, buf, len);
}

int
rt_copy_out_finish (struct rt_copy_sink *k, int ret, const rt_exec_result *res, const char *src,
                    rt_copy_result *result, rt_error **err)
{
  rt_copy_result counts = { 0 };
  cleanup_free char *why = NULL;
  int status;

  close (k->t.fd);
  status = k->t.ended ? k->t.status : wait_child (k->t.pid);
  why = read_report (k->errfd, &counts);
  close (k->errfd);
  ret = out_verdict (ret, res, &k->t, status, why, src, &k->lim, k->final, err);
  if (ret == 0)
    ret = out_land (k->tmp, k->name, k->final, err);
  if (ret == 0 && result)
    *result = counts;
  sink_free (k);
  return ret;
}

int
rt_local_sandbox_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                     rt_copy_result *result, rt_error **err)
{
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 67; cd \"$(dirname \"$1\")\" && "
                            "exec tar -cf - -- \"$(basename \"$1\")\"",
                   (char *) "sh", (char *) src, NULL };
  struct rt_copy_sink *k = NULL;
  rt_exec_result res = { 0 };
  int ret;

  ret = rt_sandbox_auto_wake (sb, err);
  if (ret == 0)
    ret = rt_copy_out_start (src, dst, opts, &k, err);
  if (ret < 0)
    return ret;
  {
    rt_exec_opts o = { .user = "root", .cancel_fd = opts ? opts->cancel_fd : -1, .on_output = rt_copy_out_feed,
                       .data = k };
    ret = rt_local_sandbox_exec (sb, argv, &o, &res, err);
  }
  return rt_copy_out_finish (k, ret, &res, src, result, err);
}

/* Child: write @abs (a file or a whole tree) as a tar named @name into the
   FIFO, which blocks until the monitor opens it.  */
static void __attribute__ ((noreturn))
archive_child (const char *fifo, const char *abs, const char *name, int errfd)
{
  struct archive *disk = archive_read_disk_new (), *out = archive_write_new ();
  struct archive_entry *entry;
  size_t abs_len = strlen (abs);
  int fd, r;

  /* Never outlive the copy (a killed CLI would leave us blocked in open);
     a reader that stops early is an error to report, not a signal.  */
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  signal (SIGPIPE, SIG_IGN);
  fd = open (fifo, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    _exit (1);
  archive_write_set_format_pax_restricted (out);
  archive_read_disk_set_standard_lookup (disk);
  archive_read_disk_set_symlink_physical (disk);
  if (archive_write_open_fd (out, fd) != ARCHIVE_OK || archive_read_disk_open (disk, abs) != ARCHIVE_OK)
    goto fail;
  for (;;)
    {
      cleanup_free char *rel = NULL;
      const char *path;
      entry = archive_entry_new ();
      r = archive_read_next_header2 (disk, entry);
      if (r == ARCHIVE_EOF)
        {
          archive_entry_free (entry);
          break;
        }
      if (r < ARCHIVE_WARN)
        {
          archive_entry_free (entry);
          goto fail;
        }
      archive_read_disk_descend (disk);
      /* Names in the archive start at the copied file's own name.  */
      path = archive_entry_pathname (entry);
      rel = rt_strdup_printf ("%s%s", name, strlen (path) > abs_len ? path + abs_len : "");
      archive_entry_set_pathname (entry, rel);
      if (archive_write_header (out, entry) < ARCHIVE_WARN)
        goto fail_out;
      if (archive_entry_filetype (entry) == AE_IFREG && archive_entry_size (entry) > 0)
        {
          char buf[65536];
          ssize_t n;
          while ((n = archive_read_data (disk, buf, sizeof (buf))) > 0)
            if (archive_write_data (out, buf, n) < 0)
              goto fail_out;
          if (n < 0)
            goto fail;
        }
      archive_entry_free (entry);
    }
  if (archive_write_close (out) != ARCHIVE_OK)
    goto fail_out;
  _exit (0);
fail:
  dprintf (errfd, "%s", archive_error_string (disk) ? archive_error_string (disk) : "cannot read");
  _exit (1);
fail_out:
  dprintf (errfd, "%s", archive_error_string (out) ? archive_error_string (out) : "cannot write");
  _exit (1);
}

int
rt_copy_in_archiver (const char *fifo, const char *abs, const char *name, int *errfd, pid_t *pid, rt_error **err)
{
  int errp[2];

  if (pipe2 (errp, O_CLOEXEC) < 0)
    {
      unlink (fifo);
      return rt_error_set (err, errno, "internal", "pipe: %s", strerror (errno));
    }
  *pid = fork ();
  if (*pid == 0)
    {
      close (errp[0]);
      archive_child (fifo, abs, name, errp[1]);
    }
  close (errp[1]);
  if (*pid < 0)
    {
      close (errp[0]);
      unlink (fifo);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  *errfd = errp[0];
  return 0;
}

/* The guest's stdout is nothing to keep; its stderr, the first bytes.  */
static int
upload_output (void *data, int stream, const char *buf, size_t len)
{
  if (stream == 2)
    keep_err (data, buf, len);
  return 0;
}

/* A symlink named as the source is copied as what it points to only when
   asked: else a link planted where the caller expected a file (by a copy
   out, say) would upload whatever it names.  */
static int
check_source (const char *src, bool follow, rt_error **err)
{
  struct stat st;

  if (follow || lstat (src, &st) < 0 || !S_ISLNK (st.st_mode))
    return 0;
  rt_error_set (err, ELOOP, "invalid_request", "'%s' is a symlink; nothing was copied", src);
  return rt_error_hint (err, "pass --follow to copy what it points to");
}

int
rt_copy_in_source (const char *src, bool follow, char **abs, char **name, rt_error **err)
{
  int ret = check_source (src, follow, err);

  if (ret < 0)
    return ret;
  *abs = realpath (src, NULL);
  if (*abs == NULL)
    {
      if (errno == ENOENT)
        return rt_error_set (err, errno, "file_not_found", "no such file or directory on this host: %s", src);
      return rt_error_set (err, errno, errno == EACCES ? "permission_denied" : "internal", "cannot copy '%s': %s", src,
                           strerror (errno));
    }
  /* Named as given: a link is copied as what it points to, under its own
     name.  */
  *name = base_name (src);
  if (*name == NULL)
    *name = base_name (*abs);
  if (*name == NULL)
    {
      free (*abs);
      *abs = NULL;
      return rt_error_set (err, EINVAL, "usage", "cannot copy '/' itself");
    }
  return 0;
}

int
rt_copy_wait_child (pid_t pid)
{
  return wait_child (pid);
}

/* The copy-in script's exit code for a directory its user may not write.  */
#define EXIT_CP_DENIED 66

int
rt_local_sandbox_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                          rt_error **err)
{
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "d=$1; n=$2; if [ -d \"$d\" ]; then dest=\"$d/$n\"; p=\"$d\"; "
                            "else dest=\"$d\"; p=$(dirname \"$d\"); fi; [ -d \"$p\" ] || exit 67; [ -w \"$p\" ] || exit 66; "
                            "t=$(mktemp -d \"$p/.rt-cp.XXXXXX\") || exit 1; "
                            "if tar -xf - -C \"$t\" --no-same-owner && mv -T \"$t/$n\" \"$dest\"; "
                            "then rmdir \"$t\"; exit 0; fi; rm -rf \"$t\"; exit 1",
                   (char *) "sh", (char *) dst, NULL, NULL };
  cleanup_free char *abs = NULL, *name = NULL, *fifo = NULL, *why = NULL;
  struct guest_err c = { 0 };
  char guest_err[ERR_KEEP * 6];
  rt_exec_result res = { 0 };
  int errfd = -1, ret, status;
  pid_t pid = -1;

  /* The host's side first: a missing source wakes nothing.  */
  ret = check_source (src, opts && opts->follow, err);
  if (ret == 0)
    ret = rt_copy_in_source (src, true, &abs, &name, err);
  if (ret == 0)
    ret = rt_sandbox_auto_wake (sb, err);
  if (ret < 0)
    return ret;
  argv[5] = name;
  ret = rt_stdin_fifo (sb, &fifo, err);
  if (ret == 0)
    ret = rt_copy_in_archiver (fifo, abs, name, &errfd, &pid, err);
  if (ret < 0)
    return ret;
  {
    rt_exec_opts o = { .cancel_fd = opts ? opts->cancel_fd : -1, .on_output = upload_output, .data = &c,
                       .user = user };
    ret = rt_exec_stdin_path (sb, argv, &o, fifo, &res, err);
  }
  /* If the monitor never opened the FIFO, the child still waits for it.  */
  if (waitpid (pid, &status, WNOHANG) == 0)
    kill (pid, SIGKILL);
  status = wait_child (pid);
  why = read_all_fd (errfd);
  close (errfd);
  unlink (fifo);
  /* The guest's verdict first: when it refused early, the archiver only
     lost its reader.  */
  if (ret == 0 && res.interrupted)
    ret = rt_error_set (err, EINTR, "interrupted", "the copy to %s was interrupted; nothing was written", dst);
  else if (ret == 0 && res.exit_code == EXIT_MISSING)
    ret = rt_error_set (err, ENOENT, "file_not_found", "no such directory in the sandbox for %s", dst);
  else if (ret == 0 && res.exit_code == EXIT_CP_DENIED)
    {
      const char *who = user ? user : "runtime";
      rt_error_set (err, EACCES, "permission_denied", "the user %s may not write into the directory of %s in the sandbox",
                    who, dst);
      ret = rt_error_hint (err, "copy into a directory of %s (/workspace), or pass --user root", who);
    }
  else if (ret == 0 && res.exit_code != 0 && status == 0)
    ret = rt_error_set (err, EIO, "internal", "cannot write %s in the sandbox: %s", dst,
                        guest_err_text (&c, guest_err, sizeof (guest_err), "tar failed"));
  else if (ret == 0 && status != 0)
    ret = rt_error_set (err, EIO, "internal", "cannot read '%s': %s", src, why && *why ? why : "archiving failed");
  return ret;
}
