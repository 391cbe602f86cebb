/* uploads.c - chunked uploads of files larger than a body (docs/API.md).
 *
 * An upload is a directory on the host, <data>/serve/uploads/<tenant>/
 * <uploadId>/, only ever named by the server: meta.json ({sandbox, path,
 * size, sha256, mode, createdAt}), data (sparse, @size bytes) and have (a
 * byte per UPLOAD_BLOCK of data, 1 once it arrived).  Chunks may come in
 * any order and at once: each writes its own range of data and marks its
 * own blocks, under a shared flock of meta.json; commit and abort take it
 * exclusively.  Commit checks every block arrived and the SHA-256, then
 * streams data into the sandbox (sandbox/fileops.h) and removes the
 * upload.  Bounded: UPLOAD_MAX_SIZE each, UPLOAD_MAX_OPEN per tenant, and
 * one untouched for UPLOAD_TTL_S is removed by the tenant's next begin.
 * A begin needs room on the host's disk for its size beside what every
 * open upload (every tenant's) was promised and has not received yet.
 * (no header of its own: handlers.h declares its routes).
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/util.h"
#include "sandbox/fileops.h"
#include "api/files.h"
#include "api/handlers.h"

#define UPLOAD_MAX_SIZE RT_COPY_MAX_SIZE_DEFAULT /* 10 GiB, as cp's limit */
#define UPLOAD_MAX_OPEN 8
#define UPLOAD_TTL_S (24 * 3600)
#define UPLOAD_CHUNK (1u << 20)  /* what a client is told to send: the SDK takes at most 1 MiB */
#define UPLOAD_BLOCK (64u << 10) /* chunks start and end on these */
/* Room left on the host's disk beside an upload.  */
#define UPLOAD_SPARE (256ull << 20)

static char *
tenant_dir (struct srv_req *r)
{
  rt_context *ctx = srv_ctx (r);
  return ctx ? rt_strdup_printf ("%s/serve/uploads/%s", ctx->data_dir, srv_token (r)->name) : NULL;
}

/* "up-" and 16 hex digits: a name made here, never a path.  */
static bool
upload_id_ok (const char *id)
{
  return id && strlen (id) == 19 && strncmp (id, "up-", 3) == 0 && strspn (id + 3, "0123456789abcdef") == 16;
}

/* Removes the tenant's uploads untouched for UPLOAD_TTL_S; how many are
   left.  With the tenant dir's lock held.  */
static unsigned
sweep (const char *dir)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  unsigned left = 0;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *have = NULL, *path = NULL;
      struct stat st;
      if (!upload_id_ok (de->d_name))
        continue;
      path = rt_strdup_printf ("%s/%s", dir, de->d_name);
      have = rt_strdup_printf ("%s/have", path);
      if (path && have && (stat (have, &st) < 0 || st.st_mtime + UPLOAD_TTL_S < time (NULL)))
        rt_rm_rf (path, NULL);
      else
        left++;
    }
  return left;
}

/* The bytes open uploads under @dir (one tenant's) were promised and have
   not taken yet: their data files are sparse until their chunks come.  */
static uint64_t
owed_in (const char *dir)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *de;
  uint64_t owed = 0;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *m = NULL, *data = NULL, *text = NULL;
      cleanup_json json_object *meta = NULL;
      struct stat st;
      uint64_t size, have;
      if (!upload_id_ok (de->d_name))
        continue;
      m = rt_strdup_printf ("%s/%s/meta.json", dir, de->d_name);
      data = rt_strdup_printf ("%s/%s/data", dir, de->d_name);
      if (m == NULL || data == NULL || rt_read_file (m, &text, NULL, NULL) < 0
          || (meta = json_tokener_parse (text)) == NULL)
        continue;
      size = (uint64_t) rt_json_i64 (meta, "size");
      have = stat (data, &st) == 0 ? (uint64_t) st.st_blocks * 512 : 0;
      owed += size > have ? size - have : 0;
    }
  return owed;
}

/* What every tenant's open uploads still need on the host's disk: each
   begin reserves its size against the room the others left.  */
static uint64_t
owed_all (const char *uploads)
{
  cleanup_dir DIR *d = opendir (uploads);
  struct dirent *de;
  uint64_t owed = 0;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *dir = NULL;
      if (de->d_name[0] == '.' || (dir = rt_strdup_printf ("%s/%s", uploads, de->d_name)) == NULL)
        continue;
      owed += owed_in (dir);
    }
  return owed;
}

const struct srv_field srv_fields_upload[] = {
  { "path", json_type_string },
  { "size", json_type_int },
  { "sha256", json_type_string },
  { "mode", json_type_string },
  { NULL, 0 },
};

/* The begin body's sense; NULL after replying 400.  */
static json_object *
begin_body (struct srv_req *r, unsigned *mode)
{
  json_object *body = srv_body_json (r, srv_fields_upload), *v;
  const char *sha;
  int64_t size;

  if (body == NULL || srv_files_path (r, "path", rt_json_str (body, "path") ? rt_json_str (body, "path") : "") == NULL)
    goto bad;
  size = rt_json_i64 (body, "size");
  sha = rt_json_str (body, "sha256");
  if (!json_object_object_get_ex (body, "size", &v) || size < 0 || (uint64_t) size > UPLOAD_MAX_SIZE)
    {
      srv_reply_error (r, 400, "invalid_request", "larger files: files/archive, or split them", NULL,
                       "size must be 0 to %llu bytes", (unsigned long long) UPLOAD_MAX_SIZE);
      goto bad;
    }
  if (sha == NULL || strlen (sha) != 64 || strspn (sha, "0123456789abcdefABCDEF") != 64)
    {
      srv_reply_error (r, 400, "invalid_request", NULL, NULL, "sha256 must be 64 hex digits");
      goto bad;
    }
  if (srv_files_mode (rt_json_str (body, "mode"), mode) < 0)
    {
      srv_reply_error (r, 400, "invalid_request", "for example \"755\"", NULL, "mode must be 3 or 4 octal digits");
      goto bad;
    }
  return body;
bad:
  json_object_put (body);
  return NULL;
}

/* Makes the upload's files in the new dir @path.  */
static int
make_upload (const char *path, json_object *meta, uint64_t size, rt_error **err)
{
  cleanup_free char *m = rt_strdup_printf ("%s/meta.json", path), *data = rt_strdup_printf ("%s/data", path),
                    *have = rt_strdup_printf ("%s/have", path);
  const char *text = json_object_to_json_string_ext (meta, JSON_C_TO_STRING_PLAIN);
  cleanup_close int dfd = -1, hfd = -1;

  if (m == NULL || data == NULL || have == NULL)
    return rt_error_oom (err);
  if (mkdir (path, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot make '%s': %s", path, strerror (errno));
  dfd = open (data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  hfd = open (have, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (dfd < 0 || hfd < 0 || ftruncate (dfd, (off_t) size) < 0
      || ftruncate (hfd, (off_t) ((size + UPLOAD_BLOCK - 1) / UPLOAD_BLOCK)) < 0)
    return rt_error_set (err, errno, "internal", "cannot make the upload in '%s': %s", path, strerror (errno));
  return rt_write_file_atomic (m, text, strlen (text), 0600, err);
}

void
srv_upload_begin (struct srv_req *r)
{
  unsigned mode = 0644;
  /* The body first, as every route checks it (openapi.c): a wrong one
     wakes no sandbox.  */
  cleanup_json json_object *body = begin_body (r, &mode);
  cleanup_sandbox rt_sandbox *sb = body ? srv_sandbox_open (r) : NULL;
  cleanup_free char *dir = tenant_dir (r), *path = NULL, *root = NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_close int lock = -1;
  unsigned char rnd[8];
  struct statvfs vfs;
  uint64_t size, owed;
  json_object *meta, *o;
  char created[32];

  if (body == NULL || sb == NULL || dir == NULL)
    return;
  size = (uint64_t) rt_json_i64 (body, "size");
  if (rt_lock_dir (dir, &lock, &err) < 0)
    return srv_reply_rt_error (r, err);
  chmod (dir, 0700);
  if (sweep (dir) >= UPLOAD_MAX_OPEN)
    return srv_reply_error (r, 429, "quota_exceeded", "commit or abort one first", NULL,
                            "a token has at most %d uploads open", UPLOAD_MAX_OPEN);
  root = rt_strdup_printf ("%s/serve/uploads", srv_ctx (r)->data_dir);
  owed = root ? owed_all (root) : 0;
  if (statvfs (dir, &vfs) == 0 && (uint64_t) vfs.f_bavail * vfs.f_frsize < size + owed + UPLOAD_SPARE)
    return srv_reply_error (r, 507, "insufficient_storage", "commit or abort an open upload, or free disk", NULL,
                            "no room for %llu bytes on the server beside the %llu the open uploads still need",
                            (unsigned long long) size, (unsigned long long) owed);
  if (getrandom (rnd, sizeof (rnd), 0) != sizeof (rnd))
    return srv_reply_error (r, 500, "internal", NULL, NULL, "getrandom: %s", strerror (errno));
  path = rt_strdup_printf ("%s/up-%02x%02x%02x%02x%02x%02x%02x%02x", dir, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
                           rnd[5], rnd[6], rnd[7]);
  meta = json_object_new_object ();
  json_object_object_add (meta, "sandbox", json_object_new_string (rt_sandbox_id (sb)));
  json_object_object_add (meta, "path", json_object_new_string (rt_json_str (body, "path")));
  json_object_object_add (meta, "size", json_object_new_int64 ((int64_t) size));
  json_object_object_add (meta, "sha256", json_object_new_string (rt_json_str (body, "sha256")));
  json_object_object_add (meta, "mode", json_object_new_int ((int) mode));
  rt_format_time ((int64_t) time (NULL) * 1000, created);
  json_object_object_add (meta, "createdAt", json_object_new_string (created));
  if (path == NULL || make_upload (path, meta, size, &err) < 0)
    {
      json_object_put (meta);
      if (path)
        rt_rm_rf (path, NULL);
      return err ? srv_reply_rt_error (r, err) : srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
    }
  json_object_put (meta);
  o = json_object_new_object ();
  json_object_object_add (o, "uploadId", json_object_new_string (strrchr (path, '/') + 1));
  json_object_object_add (o, "chunkBytes", json_object_new_int64 (UPLOAD_CHUNK));
  srv_reply_json (r, 201, o);
}

/* An open upload of the request's {upload}, its meta.json flocked with
   @how (LOCK_SH, LOCK_EX); the sandbox it was begun for must be the
   request's.  */
struct upload
{
  char *path;
  json_object *meta;
  int lock;
};

static void
upload_close (struct upload *u)
{
  free (u->path);
  json_object_put (u->meta);
  if (u->lock >= 0)
    close (u->lock);
}

/* 0, or <0 after replying.  */
static int
upload_open (struct srv_req *r, rt_sandbox *sb, int how, struct upload *u)
{
  const char *id = srv_param (r, "upload");
  cleanup_free char *dir = tenant_dir (r), *m = NULL, *text = NULL;
  struct stat st;

  *u = (struct upload){ .lock = -1 };
  if (dir == NULL)
    return -1;
  if (upload_id_ok (id))
    {
      u->path = rt_strdup_printf ("%s/%s", dir, id);
      m = rt_strdup_printf ("%s/%s/meta.json", dir, id);
    }
  if (m)
    u->lock = open (m, O_RDONLY | O_CLOEXEC);
  /* A commit or abort that held the lock first removed it.  */
  if (u->lock >= 0 && flock (u->lock, how) == 0 && stat (m, &st) == 0 && rt_read_file (m, &text, NULL, NULL) == 0)
    u->meta = json_tokener_parse (text);
  if (u->meta
      && strcmp (rt_json_str (u->meta, "sandbox") ? rt_json_str (u->meta, "sandbox") : "", rt_sandbox_id (sb)) == 0)
    return 0;
  upload_close (u);
  srv_reply_error (r, 404, "not_found", "an upload ends with its commit or abort, or after a day untouched", NULL,
                   "no such upload: %s", id);
  return -1;
}

/* Writes @len bytes at @off of the upload's data and marks their blocks.  */
static int
put_chunk (const struct upload *u, const unsigned char *buf, size_t len, uint64_t off, rt_error **err)
{
  cleanup_free char *data = rt_strdup_printf ("%s/data", u->path), *have = rt_strdup_printf ("%s/have", u->path);
  cleanup_close int dfd = data ? open (data, O_WRONLY | O_CLOEXEC) : -1;
  cleanup_close int hfd = have ? open (have, O_WRONLY | O_CLOEXEC) : -1;
  uint64_t first = off / UPLOAD_BLOCK, last = (off + len + UPLOAD_BLOCK - 1) / UPLOAD_BLOCK;
  cleanup_free unsigned char *ones = malloc (last - first + 1);

  if (dfd < 0 || hfd < 0 || ones == NULL)
    return rt_error_set (err, errno, "internal", "cannot open the upload: %s", strerror (errno));
  for (size_t done = 0; done < len;)
    {
      ssize_t n = pwrite (dfd, buf + done, len - done, (off_t) (off + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return rt_error_set (err, errno, errno == ENOSPC ? "insufficient_storage" : "internal",
                             "cannot write the chunk: %s", strerror (errno));
      done += n;
    }
  memset (ones, 1, last - first + 1);
  if (last > first && pwrite (hfd, ones, last - first, (off_t) first) != (ssize_t) (last - first))
    return rt_error_set (err, errno, "internal", "cannot mark the chunk: %s", strerror (errno));
  return 0;
}

void
srv_upload_chunk (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  cleanup_error rt_error *err = NULL;
  const char *q = srv_query (r, "offset");
  struct upload u;
  const void *body;
  uint64_t size, off;
  size_t len;
  char *end = NULL;
  json_object *o;

  if (sb == NULL || upload_open (r, sb, LOCK_SH, &u) < 0)
    return;
  body = srv_body (r, &len);
  size = (uint64_t) rt_json_i64 (u.meta, "size");
  off = q && *q >= '0' && *q <= '9' ? strtoull (q, &end, 10) : 0;
  if (q == NULL || end == NULL || *end || off > size || len > size - off)
    srv_reply_error (r, 400, "invalid_request", NULL, NULL,
                     "a chunk of %zu bytes at offset %s is past the upload's %llu", len, q ? q : "(none)",
                     (unsigned long long) size);
  else if (off % UPLOAD_BLOCK || (len % UPLOAD_BLOCK && off + len != size) || (len == 0 && size > 0))
    srv_reply_error (r, 400, "invalid_request", "send chunks of chunkBytes at multiples of it", NULL,
                     "a chunk starts at a multiple of %u and is one, unless it ends the file", UPLOAD_BLOCK);
  else if (put_chunk (&u, body, len, off, &err) < 0)
    srv_reply_error (r, strcmp (err->code, "internal") == 0 ? 500 : 507, err->code, NULL, NULL, "%s", err->msg);
  else
    {
      o = json_object_new_object ();
      json_object_object_add (o, "offset", json_object_new_int64 ((int64_t) off));
      json_object_object_add (o, "length", json_object_new_int64 ((int64_t) len));
      /* What the SDK reads: the bytes this chunk brought.  */
      json_object_object_add (o, "received", json_object_new_int64 ((int64_t) len));
      srv_reply_json (r, 200, o);
    }
  upload_close (&u);
}

/* The first block that has not arrived, as a byte offset; -1 when all have.  */
static int64_t
first_missing (const struct upload *u)
{
  cleanup_free char *have = rt_strdup_printf ("%s/have", u->path), *bits = NULL;
  size_t len = 0;
  uint64_t size = (uint64_t) rt_json_i64 (u->meta, "size");
  size_t blocks = (size + UPLOAD_BLOCK - 1) / UPLOAD_BLOCK;

  if (have == NULL || rt_read_file (have, &bits, &len, NULL) < 0)
    return 0;
  for (size_t i = 0; i < blocks; i++)
    if (i >= len || bits[i] != 1)
      return (int64_t) i * UPLOAD_BLOCK;
  return -1;
}

static void
commit (struct srv_req *r, rt_sandbox *sb, const struct upload *u)
{
  cleanup_free char *data = rt_strdup_printf ("%s/data", u->path);
  cleanup_error rt_error *err = NULL;
  cleanup_close int fd = -1;
  const char *want = rt_json_str (u->meta, "sha256"), *path = rt_json_str (u->meta, "path");
  uint64_t size = (uint64_t) rt_json_i64 (u->meta, "size");
  unsigned mode = (unsigned) rt_json_i64 (u->meta, "mode");
  int64_t missing = first_missing (u);
  char got[65];

  if (missing >= 0)
    {
      json_object *d = json_object_new_object ();
      json_object_object_add (d, "missingOffset", json_object_new_int64 (missing));
      return srv_reply_error (r, 409, "upload_incomplete", "send the missing chunks, then commit again", d,
                              "the upload lacks bytes from offset %lld", (long long) missing);
    }
  if (data == NULL || rt_sha256_file (data, got, &err) < 0)
    return err ? srv_reply_rt_error (r, err) : srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  if (strcasecmp (got, want ? want : "") != 0)
    return srv_reply_error (r, 400, "checksum_mismatch", "resend the chunks, or abort", NULL,
                            "the upload's SHA-256 is %s, not %s", got, want);
  fd = open (data, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "cannot read the upload: %s", strerror (errno));
  if (rt_guest_write (sb, path, mode, NULL, fd, size, &err) < 0)
    return srv_reply_rt_error (r, err);
  rt_rm_rf (u->path, NULL);
  srv_reply_json (r, 200, srv_files_written (path, size, mode));
}

void
srv_upload_verb (struct srv_req *r)
{
  const char *verb = srv_param (r, "verb");
  bool is_commit = strcmp (verb, "commit") == 0;
  cleanup_sandbox rt_sandbox *sb = NULL;
  struct upload u;

  if (!is_commit && strcmp (verb, "abort") != 0)
    return srv_reply_error (r, 404, "not_found", "uploads/{u}:commit or :abort", NULL, "no such verb: %s", verb);
  if ((sb = srv_sandbox_open (r)) == NULL || upload_open (r, sb, LOCK_EX, &u) < 0)
    return;
  if (is_commit)
    commit (r, sb, &u);
  else
    {
      rt_rm_rf (u.path, NULL);
      srv_reply_json_text (r, 200, "{}");
    }
  upload_close (&u);
}
