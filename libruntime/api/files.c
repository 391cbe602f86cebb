/* files.c - a sandbox's files: content, listings, stat, mkdir/remove/
   rename, archives (docs/API.md); chunked uploads are uploads.c's.  The
   guest's tools do the work (sandbox/fileops.h): nothing a client or the
   guest names is a path on the host.  handlers.h declares its routes,
   files.h what uploads.c shares of it.  */
#include <fnmatch.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/mman.h>

#include "common/util.h"
#include "sandbox/fileops.h"
#include "api/files.h"
#include "api/handlers.h"

const char *
srv_files_path (struct srv_req *r, const char *name, const char *value)
{
  const char *p = value ? value : srv_query (r, name);

  if (p == NULL || *p == '\0')
    srv_reply_error (r, 400, "invalid_request", NULL, NULL, "%s is required", name);
  else if (p[0] != '/')
    srv_reply_error (r, 400, "invalid_request", "for example /workspace/file", NULL,
                     "%s must be an absolute path in the sandbox, not '%s'", name, p);
  else
    return p;
  return NULL;
}

int
srv_files_mode (const char *s, unsigned *mode)
{
  char *end;

  if (s == NULL)
    {
      *mode = 0644;
      return 0;
    }
  if (strlen (s) < 3 || strlen (s) > 4 || strspn (s, "01234567") != strlen (s))
    return -1;
  *mode = (unsigned) strtoul (s, &end, 8);
  return 0;
}

json_object *
srv_files_written (const char *path, uint64_t size, unsigned mode)
{
  json_object *o = json_object_new_object ();
  char m[8];

  snprintf (m, sizeof (m), "%o", mode);
  json_object_object_add (o, "path", json_object_new_string (path));
  json_object_object_add (o, "size", json_object_new_int64 ((int64_t) size));
  json_object_object_add (o, "mode", json_object_new_string (m));
  return o;
}

/* The file's bytes as the guest's cat sends them: kept (a small file, to
   hash first) or streamed, never more than the size it stated.  */
struct content
{
  struct srv_req *r;
  uint64_t size, sent;
  char *buf; /* kept, when size <= SRV_MAX_FILE_BODY */
  bool started, grew;
};

static int
content_out (void *data, int stream, const char *buf, size_t len)
{
  struct content *c = data;

  (void) stream;
  if (c->sent + len > c->size)
    {
      /* The file grew since it was looked at, or the guest lies: the
         stated size is what the client was promised.  */
      len = c->size - c->sent;
      c->grew = true;
    }
  if (c->buf)
    memcpy (c->buf + c->sent, buf, len);
  else if (!c->started)
    {
      char n[24];
      snprintf (n, sizeof (n), "%llu", (unsigned long long) c->size);
      srv_add_header (c->r, "x-content-length", n);
      c->started = true;
      if (srv_stream_start (c->r, 200, "application/octet-stream") < 0)
        return -1;
    }
  if (!c->buf && len > 0 && srv_stream_write (c->r, buf, len) < 0)
    return -1;
  c->sent += len;
  return c->grew || srv_gone (c->r) ? -1 : 0;
}

/* A small file whole, with its SHA-256.  */
static void
reply_small (struct srv_req *r, const struct content *c)
{
  char hex[65], n[24];

  rt_sha256_hex (c->buf, c->sent, hex);
  snprintf (n, sizeof (n), "%llu", (unsigned long long) c->sent);
  srv_add_header (r, "x-content-length", n);
  srv_add_header (r, "x-content-sha256", hex);
  srv_reply_bytes (r, 200, "application/octet-stream", c->buf, c->sent);
}

void
srv_files_get (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *arr = NULL;
  struct content c = { .r = r };
  const char *type;
  bool cut;
  int ret;

  if (path == NULL)
    return;
  if (rt_guest_entries (sb, path, 0, RT_ENTRY_FOLLOW, &arr, &cut, &err) < 0)
    return srv_reply_rt_error (r, err);
  type = rt_json_str (json_object_array_get_idx (arr, 0), "type");
  if (type && strcmp (type, "directory") == 0)
    return srv_reply_error (r, 400, "is_a_directory", "files/list lists it; files/archive sends it whole", NULL,
                            "%s is a directory", path);
  if (type && strcmp (type, "symlink") == 0)
    return srv_reply_error (r, 404, "file_not_found", NULL, NULL, "%s is a symlink to nothing", path);
  if (type == NULL || strcmp (type, "file") != 0)
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "%s is not a regular file", path);
  c.size = (uint64_t) rt_json_i64 (json_object_array_get_idx (arr, 0), "size");
  if (c.size <= SRV_MAX_FILE_BODY && (c.buf = malloc (c.size + 1)) == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  {
    rt_exec_opts o = { .cancel_fd = -1, .on_output = content_out, .data = &c };
    ret = rt_sandbox_cat (sb, path, &o, &err);
  }
  if (c.started)
    srv_stream_end (r);
  else if (ret < 0 && !c.grew)
    srv_reply_rt_error (r, err);
  else if (c.buf)
    reply_small (r, &c);
  else
    {
      /* Stated large, sent nothing: it shrank.  */
      srv_add_header (r, "x-content-length", "0");
      srv_reply_bytes (r, 200, "application/octet-stream", "", 0);
    }
  free (c.buf);
}

void
srv_files_put (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL, *m = srv_query (r, "mode");
  cleanup_error rt_error *err = NULL;
  const void *body;
  unsigned mode;
  size_t len;

  if (path == NULL)
    return;
  body = srv_body (r, &len);
  if (len > SRV_MAX_FILE_BODY)
    return srv_reply_error (r, 413, "payload_too_large", "POST …/uploads takes larger files in chunks", NULL,
                            "a file body is at most %u bytes, not %zu", SRV_MAX_FILE_BODY, len);
  if (srv_files_mode (m, &mode) < 0)
    return srv_reply_error (r, 400, "invalid_request", "for example mode=755", NULL,
                            "mode must be 3 or 4 octal digits, not '%s'", m);
  if (rt_guest_write (sb, path, mode, body, -1, len, &err) < 0)
    return srv_reply_rt_error (r, err);
  srv_reply_json (r, 200, srv_files_written (path, len, mode));
}

/* A glob of the SDK's (**, then *.py): fnmatch's words per
   '/'-separated part, "**" as any number of parts (none too); runs of
   "**" made one.  At most GLOB_PARTS parts of NAME_MAX.  */
#define GLOB_PARTS 32
#define GLOB_DEPTH 64
struct glob
{
  char part[GLOB_PARTS][256];
  size_t n;
};

static int
glob_compile (const char *pat, struct glob *g)
{
  g->n = 0;
  for (const char *p = pat;;)
    {
      const char *end = strchr (p, '/');
      size_t len = end ? (size_t) (end - p) : strlen (p);
      bool any = len == 2 && strncmp (p, "**", 2) == 0;

      if (len == 0 || len >= sizeof g->part[0])
        return -1;
      if (!(any && g->n > 0 && strcmp (g->part[g->n - 1], "**") == 0))
        {
          if (g->n == GLOB_PARTS)
            return -1;
          memcpy (g->part[g->n], p, len);
          g->part[g->n++][len] = '\0';
        }
      if (end == NULL)
        return 0;
      p = end + 1;
    }
}

/* Whether @s, a path relative to the listed directory, matches @g: a
   table over (pattern part, path part), so time is parts x depth, not
   exponential in the "**" (a pattern of many was a worker's CPU for
   ever).  */
static bool
glob_match (const struct glob *g, const char *s)
{
  char part[GLOB_DEPTH][256];
  bool m[GLOB_PARTS + 1][GLOB_DEPTH + 1];
  size_t n = 0;

  for (const char *p = s;;)
    {
      const char *end = strchr (p, '/');
      size_t len = end ? (size_t) (end - p) : strlen (p);

      if (n == GLOB_DEPTH || len >= sizeof part[0])
        return false;
      memcpy (part[n], p, len);
      part[n++][len] = '\0';
      if (end == NULL)
        break;
      p = end + 1;
    }
  /* m[i][j]: the pattern's parts from i match the path's from j.  */
  for (size_t i = g->n + 1; i-- > 0;)
    for (size_t j = n + 1; j-- > 0;)
      if (i == g->n)
        m[i][j] = j == n;
      else if (strcmp (g->part[i], "**") == 0)
        m[i][j] = m[i + 1][j] || (j < n && m[i][j + 1]);
      else
        m[i][j] = j < n && m[i + 1][j + 1] && fnmatch (g->part[i], part[j], FNM_PERIOD) == 0;
  return m[0][0];
}

/* A boolean query parameter: true, false, or absent (@dflt).  */
static int
query_bool (struct srv_req *r, const char *name, bool dflt, bool *out)
{
  const char *v = srv_query (r, name);

  *out = v ? strcmp (v, "true") == 0 || strcmp (v, "1") == 0 : dflt;
  if (v && !*out && strcmp (v, "false") != 0 && strcmp (v, "0") != 0)
    {
      srv_reply_error (r, 400, "invalid_request", NULL, NULL, "%s is true or false, not '%s'", name, v);
      return -1;
    }
  return 0;
}

/* Whether @rel (relative to the listed directory) has a part that
   starts with a dot.  */
static bool
hidden_path (const char *rel)
{
  for (const char *p = rel; p; p = strchr (p, '/') ? strchr (p, '/') + 1 : NULL)
    if (*p == '.')
      return true;
  return false;
}

void
srv_files_list (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL, *d = srv_query (r, "depth");
  const char *glob = srv_query (r, "glob"), *l = srv_query (r, "limit");
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *arr = NULL;
  cleanup_free struct glob *g = NULL;
  json_object *o, *kept;
  unsigned long depth = 1, limit = RT_LIST_MAX_ENTRIES;
  size_t root;
  char *end = NULL;
  bool cut, hidden;

  if (path == NULL)
    return;
  if (d && ((depth = strtoul (d, &end, 10)) < 1 || depth > RT_LIST_MAX_DEPTH || *d == '\0' || *end))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "depth is 1 to %d, not '%s'", RT_LIST_MAX_DEPTH, d);
  if (l && ((limit = strtoul (l, &end, 10)) < 1 || limit > RT_LIST_MAX_ENTRIES || *l == '\0' || *end))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "limit is 1 to %d, not '%s'", RT_LIST_MAX_ENTRIES,
                            l);
  if (glob && (g = malloc (sizeof *g)) == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  if (glob && (*glob == '\0' || *glob == '/' || strlen (glob) > 1024 || glob_compile (glob, g) < 0))
    return srv_reply_error (r, 400, "invalid_request", "for example glob=**/*.py", NULL,
                            "glob is a pattern relative to path of at most %d parts, not '%s'", GLOB_PARTS, glob);
  if (query_bool (r, "hidden", true, &hidden) < 0)
    return;
  /* A glob reaches as deep as its parts, any depth with "**", unless
     depth says.  */
  if (glob && d == NULL)
    {
      depth = 1;
      for (const char *p = glob; (p = strchr (p, '/')); p++)
        depth++;
      if (strstr (glob, "**"))
        depth = RT_LIST_MAX_DEPTH;
      depth = depth > RT_LIST_MAX_DEPTH ? RT_LIST_MAX_DEPTH : depth;
    }
  if (rt_guest_entries (sb, path, (unsigned) depth, RT_ENTRY_BELOW, &arr, &cut, &err) < 0)
    return srv_reply_rt_error (r, err);
  root = strlen (path);
  while (root > 1 && path[root - 1] == '/')
    root--;
  kept = json_object_new_array ();
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *e = json_object_array_get_idx (arr, i);
      const char *p = rt_json_str (e, "path"), *rel;

      if (p == NULL || strncmp (p, path, root) != 0)
        continue;
      rel = p + root + (p[root] == '/');
      if ((!hidden && hidden_path (rel)) || (glob && !glob_match (g, rel)))
        continue;
      if (json_object_array_length (kept) == limit)
        {
          cut = true;
          break;
        }
      json_object_array_add (kept, json_object_get (e));
    }
  o = json_object_new_object ();
  json_object_object_add (o, "data", kept);
  if (cut)
    json_object_object_add (o, "truncated", json_object_new_boolean (true));
  srv_reply_json (r, 200, o);
}

void
srv_files_stat (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *arr = NULL;
  json_object *o;
  bool cut;

  if (path == NULL)
    return;
  if (rt_guest_entries (sb, path, 0, RT_ENTRY_SELF, &arr, &cut, &err) < 0)
    {
      if (strcmp (err->code, "file_not_found") != 0)
        return srv_reply_rt_error (r, err);
      o = json_object_new_object ();
      json_object_object_add (o, "exists", json_object_new_boolean (false));
      json_object_object_add (o, "path", json_object_new_string (path));
      return srv_reply_json (r, 200, o);
    }
  o = json_object_array_get_idx (arr, 0);
  if (o == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "the sandbox did not describe %s", path);
  json_object_object_add (o, "exists", json_object_new_boolean (true));
  srv_reply_json (r, 200, json_object_get (o));
}

const struct srv_field srv_fields_mkdir[]
    = { { "path", json_type_string }, { "parents", json_type_boolean }, { NULL, 0 } };
const struct srv_field srv_fields_remove[]
    = { { "path", json_type_string }, { "recursive", json_type_boolean }, { NULL, 0 } };
const struct srv_field srv_fields_rename[]
    = { { "from", json_type_string }, { "to", json_type_string }, { "overwrite", json_type_boolean }, { NULL, 0 } };

static bool
flag (json_object *body, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (body, key, &v) && json_object_get_boolean (v);
}

/* A string field, "" when missing (srv_files_path then says it is
   required).  */
static const char *
required (json_object *body, const char *key)
{
  const char *s = rt_json_str (body, key);
  return s ? s : "";
}

void
srv_files_verb (struct srv_req *r)
{
  const char *verb = srv_param (r, "verb");
  bool mk = strcmp (verb, "mkdir") == 0, rm = strcmp (verb, "remove") == 0, mv = strcmp (verb, "rename") == 0;
  cleanup_json json_object *body = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_error rt_error *err = NULL;
  const char *path, *to = NULL;
  bool removed = false;
  int ret;

  if (!mk && !rm && !mv)
    return srv_reply_error (r, 404, "not_found", "files:mkdir, files:remove, files:rename", NULL,
                            "no such verb: files:%s", verb);
  body = srv_body_json (r, mk ? srv_fields_mkdir : rm ? srv_fields_remove : srv_fields_rename);
  if (body == NULL || (sb = srv_sandbox_open (r)) == NULL)
    return;
  path = srv_files_path (r, mv ? "from" : "path", required (body, mv ? "from" : "path"));
  if (path == NULL || (mv && (to = srv_files_path (r, "to", required (body, "to"))) == NULL))
    return;
  if (rm && strspn (path, "/") == strlen (path))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "the sandbox's root is not removed");
  if (mk)
    ret = rt_guest_mkdir (sb, path, flag (body, "parents"), &err);
  else if (rm)
    ret = rt_guest_remove (sb, path, flag (body, "recursive"), &removed, &err);
  else
    ret = rt_guest_rename (sb, path, to, flag (body, "overwrite"), &err);
  if (ret < 0)
    return srv_reply_rt_error (r, err);
  if (!rm)
    return srv_reply_json_text (r, 200, "{}");
  srv_reply_json_text (r, 200, removed ? "{\"removed\":true}" : "{\"removed\":false}");
}

/* The archive's bytes, the stream started with the first of them: an
   error before any (no such path) is still an error answer.  */
struct tar_out
{
  struct srv_req *r;
  const char *ctype;
  bool started;
};

static int
tar_out (void *data, int stream, const char *buf, size_t len)
{
  struct tar_out *t = data;

  (void) stream;
  if (!t->started)
    {
      t->started = true;
      if (srv_stream_start (t->r, 200, t->ctype) < 0)
        return -1;
    }
  return srv_stream_write (t->r, buf, len) < 0 ? -1 : 0;
}

void
srv_archive_get (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL, *gz = srv_query (r, "gzip");
  const char *nm = srv_query (r, "named");
  bool gzip = gz && (strcmp (gz, "true") == 0 || strcmp (gz, "1") == 0);
  bool named = nm && (strcmp (nm, "true") == 0 || strcmp (nm, "1") == 0);
  struct tar_out t = { .r = r, .ctype = gzip ? "application/gzip" : "application/x-tar" };
  cleanup_error rt_error *err = NULL;
  rt_exec_opts o = { .cancel_fd = -1, .on_output = tar_out, .data = &t };
  int ret;

  if (path == NULL)
    return;
  ret = rt_guest_tar_out (sb, path, gzip, named, &o, &err);
  /* Once started, a failure can only cut the stream short: the archive
     then lacks its end, which tar readers report.  */
  if (t.started)
    srv_stream_end (r);
  else if (ret < 0)
    srv_reply_rt_error (r, err);
  else
    srv_reply_bytes (r, 200, t.ctype, "", 0);
}

void
srv_archive_put (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = srv_sandbox_open (r);
  const char *path = sb ? srv_files_path (r, "path", NULL) : NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_close int fd = -1;
  const unsigned char *body;
  size_t len, off = 0;

  if (path == NULL)
    return;
  body = srv_body (r, &len);
  /* The body goes to the guest's tar as its stdin, from memory.  */
  fd = memfd_create ("archive", MFD_CLOEXEC);
  while (fd >= 0 && off < len)
    {
      ssize_t n = write (fd, body + off, len - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      off += n;
    }
  if (fd < 0 || off < len || lseek (fd, 0, SEEK_SET) < 0)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "cannot hold the archive: %s", strerror (errno));
  if (rt_guest_tar_in (sb, path, len >= 2 && body[0] == 0x1f && body[1] == 0x8b, fd, &err) < 0)
    return srv_reply_rt_error (r, err);
  srv_reply_json_text (r, 200, "{}");
}
