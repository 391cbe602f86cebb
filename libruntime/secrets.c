/* secrets.c - the secrets store: values the sandboxes never see.
 *
 * <data>/secrets.json (mode 0600, written atomically under secrets.lock):
 * {NAME: {hosts, header, format, placeholder, value}}.  A sandbox gets
 * NAME=<placeholder> in its environment; the egress proxy is where a
 * placeholder becomes the value, on requests to the secret's hosts only.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "egress.h"
#include "secrets.h"

#define MAX_VALUE 8192
#define MAX_HOSTS 16

static char *
store_path (rt_context *ctx)
{
  return rt_strdup_printf ("%s/secrets.json", ctx->data_dir);
}

/* The store, refused when others could read it: it holds the values.  */
static int
load (rt_context *ctx, json_object **out, rt_error **err)
{
  cleanup_free char *path = store_path (ctx), *text = NULL;
  cleanup_close int fd = -1;
  struct stat st;
  size_t len = 0;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT)
    {
      *out = json_object_new_object ();
      return *out ? 0 : rt_error_oom (err);
    }
  if (fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", path, strerror (errno));
  if (st.st_mode & 077)
    {
      rt_error_set (err, EPERM, "invalid_request", "the secrets store '%s' is readable by others (mode %03o)", path,
                    (unsigned) (st.st_mode & 0777));
      return rt_error_hint (err, "chmod 600 '%s' if nobody else read it; otherwise change the secrets", path);
    }
  close (steal_fd (&fd));
  ret = rt_read_file (path, &text, &len, err);
  if (ret < 0)
    return ret;
  *out = json_tokener_parse (text);
  if (*out == NULL || !json_object_is_type (*out, json_type_object))
    {
      json_object_put (*out);
      return rt_error_set (err, EINVAL, "internal", "'%s' is not a JSON object", path);
    }
  return 0;
}

static int
save (rt_context *ctx, json_object *store, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);
  const char *text = json_object_to_json_string_ext (store, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

  if (path == NULL || text == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, text, strlen (text), 0600, err);
}

static int
lock (rt_context *ctx, int *fd, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/secrets.lock", ctx->data_dir);
  int ret = path ? rt_mkdir_p (ctx->data_dir, 0755, err) : rt_error_oom (err);

  return ret < 0 ? ret : rt_lock_file (path, fd, err);
}

static bool
header_ok (const char *h)
{
  return *h && strlen (h) <= 64 && strspn (h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == strlen (h);
}

int
rt_secret_set (rt_context *ctx, const char *name, const char *value, size_t len, char *const *hosts,
               const char *header, const char *format, char **placeholder, rt_error **err)
{
  cleanup_json json_object *store = NULL;
  cleanup_close int lockfd = -1;
  json_object *entry, *old, *list;
  char ph[7 + 32 + 1];
  size_t n = 0;
  int ret;

  if (!rt_env_name_valid (name, strlen (name)) || strlen (name) > 64)
    {
      rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a secret name", name);
      return rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]*, as for environment variables");
    }
  if (len == 0)
    return rt_error_set (err, EINVAL, "invalid_request", "the value of %s is empty", name);
  if (len > MAX_VALUE || memchr (value, '\0', len))
    return rt_error_set (err, EINVAL, "invalid_request", "a secret's value is at most 8 KiB of text, not %zu bytes", len);
  for (char *const *h = hosts; h && *h; h++)
    n++;
  if (n == 0 || n > MAX_HOSTS)
    {
      rt_error_set (err, EINVAL, "usage", "a secret is bound to 1 to %d hosts, not %zu", MAX_HOSTS, n);
      return rt_error_hint (err, "for example: --host api.deepseek.com");
    }
  if ((header == NULL) != (format == NULL))
    return rt_error_set (err, EINVAL, "usage", "--header and --format go together");
  if (header && !header_ok (header))
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a header name", header);
  if (format && (strstr (format, "{value}") == NULL || strpbrk (format, "\r\n")))
    return rt_error_set (err, EINVAL, "invalid_request", "--format must hold {value} on one line, not '%s'", format);
  list = json_object_new_array ();
  for (char *const *h = hosts; h && *h; h++)
    {
      cleanup_free char *norm = NULL;
      ret = rt_egress_entry_normalize (*h, &norm, err);
      if (ret < 0)
        {
          json_object_put (list);
          return ret;
        }
      json_object_array_add (list, json_object_new_string (norm));
    }
  ret = lock (ctx, &lockfd, err);
  if (ret == 0)
    ret = load (ctx, &store, err);
  if (ret < 0)
    {
      json_object_put (list);
      return ret;
    }
  /* A new value keeps the placeholder: sandboxes made before still work.  */
  if (json_object_object_get_ex (store, name, &old) && rt_json_str (old, "placeholder"))
    snprintf (ph, sizeof ph, "%s", rt_json_str (old, "placeholder"));
  else
    {
      unsigned char rnd[16];
      if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
        {
          json_object_put (list);
          return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
        }
      strcpy (ph, "rtsec_");
      for (int i = 0; i < 16; i++)
        sprintf (ph + 6 + 2 * i, "%02x", rnd[i]);
    }
  entry = json_object_new_object ();
  json_object_object_add (entry, "hosts", list);
  json_object_object_add (entry, "header", header ? json_object_new_string (header) : NULL);
  json_object_object_add (entry, "format", format ? json_object_new_string (format) : NULL);
  json_object_object_add (entry, "placeholder", json_object_new_string (ph));
  json_object_object_add (entry, "value", json_object_new_string_len (value, len));
  json_object_object_add (store, name, entry);
  ret = save (ctx, store, err);
  if (ret < 0)
    return ret;
  *placeholder = strdup (ph);
  return *placeholder ? 0 : rt_error_oom (err);
}

int
rt_secret_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *store = NULL, *out = json_object_new_array ();
  int ret = load (ctx, &store, err);

  if (ret < 0)
    return ret;
  json_object_object_foreach (store, name, e)
  {
    json_object *o = json_object_new_object ();
    const char *keys[] = { "hosts", "header", "format", "placeholder", NULL };
    json_object_object_add (o, "name", json_object_new_string (name));
    /* Everything but the value.  */
    for (const char **k = keys; *k; k++)
      json_object_object_add (o, *k, json_object_get (json_object_object_get (e, *k)));
    json_object_array_add (out, o);
  }
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_secret_remove (rt_context *ctx, const char *name, rt_error **err)
{
  cleanup_json json_object *store = NULL;
  cleanup_close int lockfd = -1;
  int ret = lock (ctx, &lockfd, err);

  if (ret == 0)
    ret = load (ctx, &store, err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (store, name, NULL))
    {
      rt_error_set (err, ENOENT, "not_found", "no secret named '%s'", name);
      return rt_error_hint (err, "runtime secrets ls lists them");
    }
  json_object_object_del (store, name);
  return save (ctx, store, err);
}

int
rt_secret_env (rt_context *ctx, char ***env, rt_error **err)
{
  cleanup_json json_object *store = NULL;
  size_t n = 0;
  int ret = load (ctx, &store, err);

  if (ret < 0)
    return ret;
  *env = calloc (json_object_object_length (store) + 1, sizeof (char *));
  if (*env == NULL)
    return rt_error_oom (err);
  json_object_object_foreach (store, name, e)
  {
    (*env)[n] = rt_strdup_printf ("%s=%s", name, rt_json_str (e, "placeholder") ?: "");
    if ((*env)[n++] == NULL)
      return rt_error_oom (err);
  }
  return 0;
}
