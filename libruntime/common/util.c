/* util.c - small file, process and JSON helpers of the library.  */
#include <linux/capability.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <sys/file.h>
#include <limits.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common/util.h"

int
rt_read_file (const char *path, char **out, size_t *len, rt_error **err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  int ret;

  if (fd < 0)
    return rt_error_set (err, errno, errno == ENOENT ? "file_not_found" : "internal", "cannot open '%s': %s", path,
                         strerror (errno));
  ret = rt_read_all (fd, SIZE_MAX, out, len);
  if (ret == -ENOMEM)
    return rt_error_oom (err);
  if (ret < 0)
    return rt_error_set (err, -ret, "internal", "cannot read '%s': %s", path, strerror (-ret));
  return 0;
}

int
rt_write_file_atomic (const char *path, const void *data, size_t len, mode_t mode, rt_error **err)
{
  /* The thread's id too: threads of one process (runtime serve) write the
     same files.  */
  cleanup_free char *tmp = rt_strdup_printf ("%s.tmp.%d.%d", path, (int) getpid (), (int) gettid ());
  cleanup_close int fd = -1;
  int ret;

  if (tmp == NULL)
    return rt_error_oom (err);
  /* A leftover (a crash, a reused pid) goes; what stands there then is
     someone else's, never followed.  */
  unlink (tmp);
  fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  ret = rt_write_all (fd, data, len);
  if (ret == 0 && fsync (fd) < 0)
    ret = -errno;
  if (ret == 0 && rename (tmp, path) < 0)
    ret = -errno;
  if (ret < 0)
    {
      unlink (tmp);
      return rt_error_set (err, -ret, "internal", "cannot write '%s': %s", path, strerror (-ret));
    }
  return 0;
}

int
rt_write_json_private (const char *path, json_object *o, rt_error **err)
{
  const char *text = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

  if (path == NULL || text == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, text, strlen (text), 0600, err);
}

int
rt_mkdir_p (const char *path, mode_t mode, rt_error **err)
{
  cleanup_free char *copy = strdup (path);
  char *p;

  if (copy == NULL)
    return rt_error_oom (err);
  for (p = copy + 1; *p; p++)
    if (*p == '/')
      {
        *p = '\0';
        if (mkdir (copy, mode) < 0 && errno != EEXIST)
          return rt_error_set (err, errno, "internal", "cannot create directory '%s': %s", copy, strerror (errno));
        *p = '/';
      }
  if (mkdir (copy, mode) < 0 && errno != EEXIST)
    return rt_error_set (err, errno, "internal", "cannot create directory '%s': %s", copy, strerror (errno));
  return 0;
}

static int
rm_one (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st;
  (void) ftw;
  if (flag == FTW_DP)
    return rmdir (path) < 0 && errno != ENOENT ? -1 : 0;
  return unlink (path) < 0 && errno != ENOENT ? -1 : 0;
}

DIR *
rt_opendir_at (int fd)
{
  int dfd = openat (fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = dfd >= 0 ? fdopendir (dfd) : NULL;

  if (d == NULL && dfd >= 0)
    {
      int e = errno;
      close (dfd);
      errno = e;
    }
  return d;
}

/* Empties the directory @fd but for its first subdirectory on @dev, whose
   name goes to @sub.  Return: 1 with a subdirectory, 0 when empty, -1
   (errno) on failure.  */
static int
rm_files_at (int fd, dev_t dev, char sub[static NAME_MAX + 1])
{
  cleanup_dir DIR *d = rt_opendir_at (fd);
  struct dirent *de;
  struct stat st;

  if (d == NULL)
    return -1;
  while ((de = readdir (d)))
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      if (fstatat (fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        {
          if (errno == ENOENT)
            continue;
          return -1;
        }
      if (S_ISDIR (st.st_mode) && st.st_dev == dev)
        {
          snprintf (sub, NAME_MAX + 1, "%s", de->d_name);
          return 1;
        }
      if (unlinkat (fd, de->d_name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
        return -1;
    }
  return 0;
}

/* One directory the walk went into: its name in its parent, and the
   parent's identity, checked on the way back up through "..".  */
struct rm_level
{
  char name[NAME_MAX + 1];
  dev_t dev;
  ino_t ino;
};

/* One step of rm_rf_at from the directory *@fd: down into @lv's name,
   noting *@fd as its parent, or up through ".." (checked to be that
   parent) removing @lv's name.  Return: 0, or -1 (errno).  */
static int
rm_step (int *fd, struct rm_level *lv, bool down)
{
  int next = openat (*fd, down ? lv->name : "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;

  if (next < 0)
    return -1;
  if (fstat (down ? *fd : next, &st) < 0)
    goto fail;
  if (down)
    {
      lv->dev = st.st_dev;
      lv->ino = st.st_ino;
    }
  else if (st.st_dev != lv->dev || st.st_ino != lv->ino)
    {
      errno = EBUSY;
      goto fail;
    }
  else if (unlinkat (next, lv->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    goto fail;
  close (*fd);
  *fd = next;
  return 0;
fail:
  {
    int saved = errno;
    close (next);
    errno = saved;
  }
  return -1;
}

/* rt_rm_rf by descriptors, for a tree deeper than a path can name: one
   directory open at a time, back up through "..".  Return: 0, or -1
   (errno).  */
static int
rm_rf_at (const char *path)
{
  cleanup_free struct rm_level *up = NULL;
  cleanup_close int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  size_t depth = 0, cap = 0;
  struct stat top;
  int r;

  if (fd < 0 || fstat (fd, &top) < 0)
    return -1;
  for (;;)
    {
      if (depth == cap)
        {
          struct rm_level *more = realloc (up, (cap = cap ? 2 * cap : 64) * sizeof (*up));
          if (more == NULL)
            return -1;
          up = more;
        }
      r = rm_files_at (fd, top.st_dev, up[depth].name);
      if (r < 0)
        return -1;
      if (r == 0 && depth == 0)
        break;
      if (rm_step (&fd, &up[r > 0 ? depth : depth - 1], r > 0) < 0)
        return -1;
      depth = r > 0 ? depth + 1 : depth - 1;
    }
  return rmdir (path) < 0 && errno != ENOENT ? -1 : 0;
}

int
rt_rm_rf (const char *path, rt_error **err)
{
  struct stat st;

  if (lstat (path, &st) < 0)
    return errno == ENOENT ? 0 : rt_error_set (err, errno, "internal", "cannot stat '%s': %s", path, strerror (errno));
  /* nftw names each file by its whole path: a tree deeper than PATH_MAX
     is removed by descriptors instead.  */
  if (nftw (path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && (errno != ENAMETOOLONG || rm_rf_at (path) < 0))
    return rt_error_set (err, errno, "cleanup_failed", "cannot remove '%s': %s", path, strerror (errno));
  return 0;
}

char *
rt_find_program (const char *name)
{
  const char *path = getenv ("PATH");
  cleanup_free char *copy = NULL;
  char *save = NULL, *dir;

  if (strchr (name, '/'))
    return access (name, X_OK) == 0 ? strdup (name) : NULL;
  copy = strdup (path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
  if (copy == NULL)
    return NULL;
  for (dir = strtok_r (copy, ":", &save); dir; dir = strtok_r (NULL, ":", &save))
    {
      char *full = rt_strdup_printf ("%s/%s", dir, name);
      if (full && access (full, X_OK) == 0)
        return full;
      free (full);
    }
  /* root's PATH on Debian may lack the sbin dirs where mkfs lives.  */
  for (const char *const *d = (const char *const[]){ "/usr/sbin", "/sbin", NULL }; *d; d++)
    {
      char *full = rt_strdup_printf ("%s/%s", *d, name);
      if (full && access (full, X_OK) == 0)
        return full;
      free (full);
    }
  return NULL;
}

int
rt_detach (void)
{
  pid_t pid = fork ();
  int fd;

  if (pid != 0)
    {
      if (pid > 0)
        while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
          ;
      return pid > 0 ? 1 : -1;
    }
  setsid ();
  if (fork () != 0)
    _exit (0);
  fd = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd >= 0)
    {
      dup2 (fd, 0);
      dup2 (fd, 1);
      dup2 (fd, 2);
    }
  /* Nothing of the caller's: its locks, pipes and sockets, and its
     environment (API keys) shown in /proc/PID/environ; not dumpable, as
     the monitor is, since its memory is a copy of the caller's.  */
  close_range (3, ~0U, 0);
  prctl (PR_SET_DUMPABLE, 0);
  {
    /* What the library still reads from the environment after a context
       is made (the monitors it starts, the pool's cap).  */
    static const char *const keep[] = { "RUNTIME_RESOLVE", "RUNTIME_POOL_MAX_MIB", "SSL_CERT_FILE", "SSL_CERT_DIR" };
    char *kept[4];
    for (size_t i = 0; i < 4; i++)
      kept[i] = getenv (keep[i]) ? strdup (getenv (keep[i])) : NULL;
    clearenv ();
    setenv ("PATH", RT_CLEAN_PATH, 1);
    for (size_t i = 0; i < 4; i++)
      {
        if (kept[i])
          setenv (keep[i], kept[i], 1);
        free (kept[i]);
      }
  }
  signal (SIGINT, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
  signal (SIGPIPE, SIG_IGN);
  return 0;
}

int
rt_spawn_piped (char *const argv[], pid_t *pid, int *out_fd, rt_error **err)
{
  int pipefd[2];

  if (pipe2 (pipefd, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "internal", "pipe: %s", strerror (errno));
  *pid = fork ();
  if (*pid < 0)
    {
      close (pipefd[0]);
      close (pipefd[1]);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  if (*pid == 0)
    {
      int devnull = open ("/dev/null", O_RDONLY);
      if (devnull >= 0)
        dup2 (devnull, 0);
      dup2 (pipefd[1], 1);
      dup2 (pipefd[1], 2);
      execvp (argv[0], argv);
      dprintf (2, "cannot run %s: %s\n", argv[0], strerror (errno));
      _exit (127);
    }
  close (pipefd[1]);
  *out_fd = pipefd[0];
  return 0;
}

int
rt_run_capture (char *const argv[], char **output, rt_error **err)
{
  pid_t pid;
  int status, fd;
  cleanup_free char *buf = NULL;
  int ret = rt_spawn_piped (argv, &pid, &fd, err);

  if (ret < 0)
    return ret;
  /* On a read error the output is lost, not the status.  */
  rt_read_all (fd, SIZE_MAX, &buf, NULL);
  close (fd);
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return rt_error_set (err, errno, "internal", "waitpid: %s", strerror (errno));
  if (output)
    *output = buf ? steal_pointer (&buf) : strdup ("");
  if (WIFEXITED (status))
    return WEXITSTATUS (status);
  return 128 + WTERMSIG (status);
}

char *
rt_file_tail (const char *path, int lines)
{
  cleanup_free char *data = NULL;
  cleanup_error rt_error *err = NULL;
  size_t len = 0;
  char *p;
  int seen = 0;

  if (rt_read_file (path, &data, &len, &err) < 0)
    return strdup ("");
  while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
    data[--len] = '\0';
  for (p = data + len; p > data; p--)
    if (p[-1] == '\n' && ++seen == lines)
      break;
  /* Strip carriage returns the serial console adds.  */
  {
    char *out = strdup (p), *w = out;
    if (out == NULL)
      return NULL;
    for (const char *r = out; *r; r++)
      if (*r != '\r')
        *w++ = *r;
    *w = '\0';
    return out;
  }
}

int
rt_sha256_file (const char *path, char out[65], rt_error **err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  char buf[65536];
  EVP_MD_CTX *ctx;
  ssize_t n;

  if (fd < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot open '%s': %s", path, strerror (errno));
  ctx = EVP_MD_CTX_new ();
  if (ctx == NULL || EVP_DigestInit_ex (ctx, EVP_sha256 (), NULL) != 1)
    {
      EVP_MD_CTX_free (ctx);
      return rt_error_set (err, EIO, "internal", "cannot start SHA-256");
    }
  while ((n = read (fd, buf, sizeof (buf))) > 0)
    EVP_DigestUpdate (ctx, buf, n);
  EVP_DigestFinal_ex (ctx, md, &mdlen);
  EVP_MD_CTX_free (ctx);
  if (n < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", path, strerror (errno));
  rt_hex (md, mdlen, out);
  return 0;
}

void
rt_hex (const unsigned char *bytes, size_t n, char *out)
{
  static const char digits[] = "0123456789abcdef";

  for (size_t i = 0; i < n; i++)
    {
      out[2 * i] = digits[bytes[i] >> 4];
      out[2 * i + 1] = digits[bytes[i] & 15];
    }
  out[2 * n] = '\0';
}

void
rt_sha256_hex (const void *data, size_t len, char out[65])
{
  unsigned char md[32];
  unsigned int mdlen = 32;

  EVP_Digest (data, len, md, &mdlen, EVP_sha256 (), NULL);
  rt_hex (md, 32, out);
}

unsigned long long
rt_proc_starttime (pid_t pid)
{
  char path[64], buf[1024];
  cleanup_close int fd = -1;
  unsigned long long start = 0;
  const char *p;
  ssize_t n;
  int field;

  snprintf (path, sizeof (path), "/proc/%d/stat", (int) pid);
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  n = read (fd, buf, sizeof (buf) - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  /* The command name may hold spaces and parentheses: count from the last ')'.  */
  p = strrchr (buf, ')');
  if (p == NULL)
    return 0;
  /* A zombie has exited: it is only waiting for its parent (for a
     double-forked monitor, init) to reap it.  */
  if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
    return 0;
  for (field = 2; *p && field < 22; p++)
    if (*p == ' ')
      field++;
  if (sscanf (p, "%llu", &start) != 1)
    return 0;
  return start;
}

int
rt_lock_file (const char *path, int *out, rt_error **err)
{
  cleanup_close int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", path, strerror (errno));
  while (flock (fd, LOCK_EX) < 0)
    if (errno != EINTR)
      return rt_error_set (err, errno, "internal", "cannot lock '%s': %s", path, strerror (errno));
  *out = steal_fd (&fd);
  return 0;
}

int
rt_lock_dir (const char *dir, int *out, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/.lock", dir);
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (dir, 0755, err);
  if (ret < 0)
    return ret;
  return rt_lock_file (path, out, err);
}

void
rt_remove_matching (const char *dir, const char *pattern)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)))
    if (fnmatch (pattern, de->d_name, 0) == 0)
      {
        cleanup_free char *p = rt_strdup_printf ("%s/%s", dir, de->d_name);
        if (p)
          rt_rm_rf (p, NULL);
      }
}

const char *
rt_json_str (json_object *o, const char *key)
{
  json_object *v;
  if (o && json_object_object_get_ex (o, key, &v) && json_object_is_type (v, json_type_string))
    return json_object_get_string (v);
  return NULL;
}

int64_t
rt_json_i64 (json_object *o, const char *key)
{
  json_object *v;

  return json_object_object_get_ex (o, key, &v) && json_object_is_type (v, json_type_int) ? json_object_get_int64 (v)
                                                                                            : 0;
}

int
rt_error_from_json (json_object *o, rt_error **err)
{
  json_object *e, *code, *msg, *hint;

  if (o == NULL || !json_object_object_get_ex (o, "error", &e) || !json_object_object_get_ex (e, "code", &code)
      || !json_object_object_get_ex (e, "message", &msg))
    return 0;
  rt_error_set (err, EIO, json_object_get_string (code), "%s", json_object_get_string (msg));
  if (json_object_object_get_ex (e, "hint", &hint) && hint)
    rt_error_hint (err, "%s", json_object_get_string (hint));
  return -EIO;
}

int
rt_listen_unix (const char *path, int flags, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  int fd;

  if (strlen (path) >= sizeof (addr.sun_path))
    return rt_error_set (err, ENAMETOOLONG, "startup_failed", "socket path too long: %s", path);
  strcpy (addr.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  if (fd < 0)
    return rt_error_set (err, errno, "startup_failed", "socket: %s", strerror (errno));
  unlink (path);
  if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0 || listen (fd, 128) < 0)
    {
      int e = errno;
      close (fd);
      return rt_error_set (err, e, "startup_failed", "cannot listen on '%s': %s", path, strerror (e));
    }
  return fd;
}

unsigned
rt_cap_last (void)
{
  cleanup_free char *data = NULL;
  unsigned long v;

  if (rt_read_file ("/proc/sys/kernel/cap_last_cap", &data, NULL, NULL) < 0 || sscanf (data, "%lu", &v) != 1
      || v > 63)
    return CAP_LAST_CAP;
  return (unsigned) v;
}

int
rt_copy_file (const char *src, const char *dst, rt_error **err)
{
  cleanup_close int in = open (src, O_RDONLY | O_CLOEXEC);
  cleanup_close int out = -1;
  struct stat st;

  if (in < 0 || fstat (in, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", src, strerror (errno));
  out = open (dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0 || ftruncate (out, st.st_size) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", dst, strerror (errno));
  /* Only the data: a qcow2's holes (discarded clusters, a file grown by
     truncation) stay holes instead of becoming zeros on disk.  */
  for (off_t pos = 0; pos < st.st_size;)
    {
      off_t data = lseek (in, pos, SEEK_DATA), hole;
      if (data < 0 && errno == ENXIO)
        break;
      hole = data < 0 ? -1 : lseek (in, data, SEEK_HOLE);
      if (hole < 0)
        return rt_error_set (err, errno, "internal", "cannot read '%s': %s", src, strerror (errno));
      for (off_t at = data; at < hole;)
        {
          loff_t from = at, to = at;
          ssize_t n = copy_file_range (in, &from, out, &to, hole - at, 0);
          if (n <= 0)
            return rt_error_set (err, n < 0 ? errno : EIO, "internal", "cannot copy '%s': %s", src,
                                 n < 0 ? strerror (errno) : "short copy");
          at += n;
        }
      pos = hole;
    }
  return 0;
}


const char *
rt_http_reason (int status)
{
  static const struct
  {
    int status;
    const char *reason;
  } table[] = {
    { 200, "OK" },
    { 201, "Created" },
    { 202, "Accepted" },
    { 204, "No Content" },
    { 206, "Partial Content" },
    { 304, "Not Modified" },
    { 400, "Bad Request" },
    { 401, "Unauthorized" },
    { 403, "Forbidden" },
    { 404, "Not Found" },
    { 405, "Method Not Allowed" },
    { 406, "Not Acceptable" },
    { 408, "Request Timeout" },
    { 409, "Conflict" },
    { 410, "Gone" },
    { 411, "Length Required" },
    { 412, "Precondition Failed" },
    { 413, "Content Too Large" },
    { 414, "URI Too Long" },
    { 415, "Unsupported Media Type" },
    { 416, "Range Not Satisfiable" },
    { 422, "Unprocessable Content" },
    { 429, "Too Many Requests" },
    { 431, "Request Header Fields Too Large" },
    { 499, "Client Closed Request" },
    { 500, "Internal Server Error" },
    { 501, "Not Implemented" },
    { 502, "Bad Gateway" },
    { 503, "Service Unavailable" },
    { 504, "Gateway Timeout" },
    { 507, "Insufficient Storage" },
  };

  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].status == status)
      return table[i].reason;
  return status < 300 ? "OK" : status < 400 ? "Redirect" : status < 500 ? "Client Error" : "Server Error";
}
