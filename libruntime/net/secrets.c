/* secrets.c - the secrets store: values the sandboxes never see.
 *
 * <data>/secrets.json (mode 0600, written atomically under secrets.lock):
 * {NAME: {hosts, header, format, placeholder, value, inUrl, rules}}; a
 * store written before inUrl and rules existed reads as neither (headers
 * only, every request).  A sandbox gets NAME=<placeholder> in its
 * environment; the egress proxy is where a placeholder becomes the value,
 * on requests to the secret's hosts only (rewrite.h), and where the value
 * becomes the placeholder again in their answers (scrub.h).  A tenant
 * context (rt_context_set_tenant) has a store of its own, the same file in
 * <data>/tenants/<name>/: its sandboxes get its secrets only.
 */
#include <fnmatch.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "net/egress.h"
#include "common/jsonstore.h"
#include "net/secrets.h"

/* <data>, or a tenant's <data>/tenants/<name>.  */
static char *
store_dir (rt_context *ctx)
{
  if (ctx->tenant)
    return rt_strdup_printf ("%s/tenants/%s", ctx->data_dir, ctx->tenant);
  return strdup (ctx->data_dir);
}

static char *
store_path (rt_context *ctx)
{
  cleanup_free char *dir = store_dir (ctx);
  return dir ? rt_strdup_printf ("%s/secrets.json", dir) : NULL;
}

/* The store, refused when others could read it: it holds the values.  */
static int
load (rt_context *ctx, json_object **out, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);

  if (path == NULL)
    return rt_error_oom (err);
  return rt_json_store_load (path, "secrets store", "change the secrets if anybody else may have read them", out,
                             NULL, err);
}

static int
save (rt_context *ctx, json_object *store, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);

  return path ? rt_json_store_save (path, store, err) : rt_error_oom (err);
}

static int
lock (rt_context *ctx, int *fd, rt_error **err)
{
  cleanup_free char *dir = store_dir (ctx);

  return dir ? rt_json_store_lock (dir, "secrets.lock", ctx->tenant ? 0700 : 0755, fd, err) : rt_error_oom (err);
}

static bool
header_ok (const char *h)
{
  return *h && strlen (h) <= 64
         && strspn (h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == strlen (h);
}

/* "METHOD:/path-glob": a method token or *, a glob from the root, printable
   and without spaces.  */
static bool
rule_ok (const char *r)
{
  const char *colon = strchr (r, ':');
  size_t mlen = colon ? (size_t) (colon - r) : 0;

  if (colon == NULL || mlen == 0 || mlen > 32 || colon[1] != '/' || strlen (colon + 1) > 1024)
    return false;
  if (!(mlen == 1 && r[0] == '*'))
    for (const char *p = r; p < colon; p++)
      if (!strchr ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'+-.^_`|~", *p))
        return false;
  for (const char *p = colon + 1; *p; p++)
    if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7f)
      return false;
  return true;
}

/* @rules as a JSON array, or NULL with @err set.  */
static json_object *
rules_json (const char *const *rules, rt_error **err)
{
  json_object *list = json_object_new_array ();
  size_t n = 0;

  for (const char *const *r = rules; r && *r; r++, n++)
    {
      if (n == RT_MAX_SECRET_RULES || !rule_ok (*r))
        {
          json_object_put (list);
          if (n == RT_MAX_SECRET_RULES)
            rt_error_set (err, EINVAL, "usage", "a secret has at most %d rules", RT_MAX_SECRET_RULES);
          else
            rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a rule", *r);
          rt_error_hint (err, "a rule is METHOD:/path-glob, e.g. GET:/v1/models or '*:/v1/*'");
          return NULL;
        }
      json_object_array_add (list, json_object_new_string (*r));
    }
  return list;
}

/* "rtsec_" and 32 random hex digits into @ph.  */
static int
new_placeholder (char ph[static 7 + 32 + 1], rt_error **err)
{
  unsigned char rnd[16];

  if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  strcpy (ph, "rtsec_");
  for (int i = 0; i < 16; i++)
    sprintf (ph + 6 + 2 * i, "%02x", rnd[i]);
  return 0;
}

/* When the secret was first set (kept; a store from before has none) and
   last set.  */
static void
stamp (json_object *entry, json_object *old)
{
  const char *created = old ? rt_json_str (old, "createdAt") : NULL;
  char now[32];

  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (entry, "createdAt", json_object_new_string (created ? created : now));
  json_object_object_add (entry, "updatedAt", json_object_new_string (now));
}

int
rt_secret_check (const char *name, const char *value, size_t len, const rt_secret_opts *opts, json_object **hosts_out,
                 json_object **rules_out, rt_error **err)
{
  const char *const *hosts = opts->hosts;
  const char *header = opts->header, *format = opts->format;
  json_object *list, *rules;
  size_t n = 0;
  int ret;

  if (!rt_env_name_valid (name, strlen (name)) || strlen (name) > RT_MAX_SECRET_NAME)
    {
      rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a secret name", name);
      return rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]*, as for environment variables");
    }
  if (len == 0)
    return rt_error_set (err, EINVAL, "invalid_request", "the value of %s is empty", name);
  if (len > RT_MAX_SECRET_VALUE || memchr (value, '\0', len))
    return rt_error_set (err, EINVAL, "invalid_request", "a secret's value is at most 8 KiB of text, not %zu bytes",
                         len);
  /* It goes into a request line or a header: a line break would end it
     and start another.  */
  if (memchr (value, '\r', len) || memchr (value, '\n', len))
    {
      rt_error_set (err, EINVAL, "invalid_request", "the value of %s has a line break inside", name);
      return rt_error_hint (err, "a secret is swapped into URLs and headers, so it is one line");
    }
  for (const char *const *h = hosts; h && *h; h++)
    n++;
  if (n == 0 || n > RT_MAX_SECRET_HOSTS)
    {
      rt_error_set (err, EINVAL, "usage", "a secret is bound to 1 to %d hosts, not %zu", RT_MAX_SECRET_HOSTS, n);
      return rt_error_hint (err, "for example: --host api.deepseek.com");
    }
  if ((header == NULL) != (format == NULL))
    return rt_error_set (err, EINVAL, "usage", "--header and --format go together");
  if (header && !header_ok (header))
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a header name", header);
  if (format && (strstr (format, "{value}") == NULL || strpbrk (format, "\r\n")))
    return rt_error_set (err, EINVAL, "invalid_request", "--format must hold {value} on one line, not '%s'", format);
  rules = rules_json (opts->rules, err);
  if (rules == NULL)
    return -EINVAL;
  list = json_object_new_array ();
  for (const char *const *h = hosts; h && *h; h++)
    {
      cleanup_free char *norm = NULL;
      ret = rt_egress_entry_normalize (*h, &norm, err);
      if (ret < 0)
        {
          json_object_put (list);
          json_object_put (rules);
          return ret;
        }
      /* The proxy hands the value over only to a server whose certificate
         proves the name: an address or a range proves nothing.  */
      if (strchr (norm, ':') || strchr (norm, '/') || strspn (norm, "0123456789.") == strlen (norm))
        {
          json_object_put (list);
          json_object_put (rules);
          rt_error_set (err, EINVAL, "invalid_request", "a secret is bound to host names, not to '%s'", *h);
          return rt_error_hint (err, "use the name the server's certificate carries, e.g. api.example.com");
        }
      json_object_array_add (list, json_object_new_string (norm));
    }
  *hosts_out = list;
  *rules_out = rules;
  return 0;
}

int
rt_local_secret_set_opts (rt_context *ctx, const char *name, const char *value, size_t len,
                          const rt_secret_opts *opts, char **placeholder, rt_error **err)
{
  cleanup_json json_object *store = NULL;
  cleanup_close int lockfd = -1;
  json_object *entry, *old = NULL, *list, *rules;
  const char *header = opts->header, *format = opts->format;
  char ph[7 + 32 + 1];
  int ret;

  ret = rt_secret_check (name, value, len, opts, &list, &rules, err);
  if (ret < 0)
    return ret;
  ret = lock (ctx, &lockfd, err);
  if (ret == 0)
    ret = load (ctx, &store, err);
  if (ret < 0)
    {
      json_object_put (list);
      json_object_put (rules);
      return ret;
    }
  /* A new value keeps the placeholder: sandboxes made before still work.  */
  if (json_object_object_get_ex (store, name, &old) && rt_json_str (old, "placeholder"))
    snprintf (ph, sizeof ph, "%s", rt_json_str (old, "placeholder"));
  else if ((ret = new_placeholder (ph, err)) < 0)
    {
      json_object_put (list);
      json_object_put (rules);
      return ret;
    }
  entry = json_object_new_object ();
  stamp (entry, old);
  json_object_object_add (entry, "hosts", list);
  json_object_object_add (entry, "header", header ? json_object_new_string (header) : NULL);
  json_object_object_add (entry, "format", format ? json_object_new_string (format) : NULL);
  json_object_object_add (entry, "placeholder", json_object_new_string (ph));
  json_object_object_add (entry, "value", json_object_new_string_len (value, len));
  json_object_object_add (entry, "inUrl", json_object_new_boolean (opts->in_url));
  json_object_object_add (entry, "rules", rules);
  json_object_object_add (store, name, entry);
  ret = save (ctx, store, err);
  if (ret < 0)
    return ret;
  *placeholder = strdup (ph);
  return *placeholder ? 0 : rt_error_oom (err);
}

int
rt_local_secret_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *store = NULL, *out = json_object_new_array ();
  int ret = load (ctx, &store, err);

  if (ret < 0)
    return ret;
  json_object_object_foreach (store, name, e)
  {
    json_object *o = json_object_new_object ();
    const char *keys[] = { "hosts", "header", "format", "placeholder", "rules", "createdAt", "updatedAt", NULL };
    json_object_object_add (o, "name", json_object_new_string (name));
    /* Everything but the value.  */
    for (const char **k = keys; *k; k++)
      json_object_object_add (o, *k, json_object_get (json_object_object_get (e, *k)));
    /* A store from before: no rules (every request), not in URLs.  */
    if (json_object_object_get (o, "rules") == NULL)
      json_object_object_add (o, "rules", json_object_new_array ());
    json_object_object_add (o, "inUrl",
                            json_object_new_boolean (json_object_get_boolean (json_object_object_get (e, "inUrl"))));
    json_object_array_add (out, o);
  }
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_local_secret_remove (rt_context *ctx, const char *name, rt_error **err)
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

void
rt_secret_bindings_free (struct rt_secret_binding *b, size_t n)
{
  for (size_t i = 0; b && i < n; i++)
    {
      if (b[i].value)
        explicit_bzero (b[i].value, strlen (b[i].value));
      if (b[i].header_value)
        explicit_bzero (b[i].header_value, strlen (b[i].header_value));
      free (b[i].placeholder);
      free (b[i].value);
      free (b[i].header);
      free (b[i].header_value);
      for (char **r = b[i].rules; r && *r; r++)
        free (*r);
      free (b[i].rules);
    }
  free (b);
}

/* @format with every {value} replaced.  */
static char *
format_value (const char *format, const char *value)
{
  size_t vlen = strlen (value), n = 0;
  char *out, *o;

  for (const char *p = format; (p = strstr (p, "{value}")); p += 7)
    n++;
  out = malloc (strlen (format) + n * vlen + 1);
  if (out == NULL)
    return NULL;
  o = out;
  for (const char *p = format; *p;)
    if (strncmp (p, "{value}", 7) == 0)
      {
        memcpy (o, value, vlen);
        o += vlen;
        p += 7;
      }
    else
      *o++ = *p++;
  *o = '\0';
  return out;
}

/* @bn from the store's entry @e; false when out of memory.  */
static bool
binding_fill (struct rt_secret_binding *bn, json_object *e, const char *ph, const char *value)
{
  const char *header = rt_json_str (e, "header"), *format = rt_json_str (e, "format");
  json_object *rules = json_object_object_get (e, "rules");
  size_t k = json_object_is_type (rules, json_type_array) ? json_object_array_length (rules) : 0;

  bn->placeholder = strdup (ph);
  bn->value = strdup (value);
  bn->in_url = json_object_get_boolean (json_object_object_get (e, "inUrl"));
  if (header && format)
    {
      bn->header = strdup (header);
      bn->header_value = format_value (format, value);
      if (bn->header == NULL || bn->header_value == NULL)
        return false;
    }
  if (k > 0)
    {
      bn->rules = calloc (k + 1, sizeof (char *));
      for (size_t i = 0; bn->rules && i < k; i++)
        if ((bn->rules[i] = strdup (json_object_get_string (json_object_array_get_idx (rules, i)) ?: "")) == NULL)
          return false;
      if (bn->rules == NULL)
        return false;
    }
  return bn->placeholder && bn->value;
}

int
rt_secret_bindings (rt_context *ctx, char *const *given, const char *host, struct rt_secret_binding **out,
                    size_t *n_out, rt_error **err)
{
  cleanup_json json_object *store = NULL;
  struct rt_secret_binding *b = NULL;
  size_t n = 0;
  int ret = load (ctx, &store, err);

  *out = NULL;
  *n_out = 0;
  if (ret < 0)
    return ret;
  json_object_object_foreach (store, name, e)
  {
    const char *ph = rt_json_str (e, "placeholder"), *value = rt_json_str (e, "value");
    json_object *hosts = NULL;
    cleanup_free char **names = NULL;
    bool mine = false;
    size_t k;

    /* A value with a line break (stored before they were refused) would
       end a header and start another, an empty one (an old or hand-edited
       store) would be found everywhere by the scrubber: never swapped.  */
    if (ph == NULL || value == NULL || *value == '\0' || strpbrk (value, "\r\n")
        || !json_object_object_get_ex (e, "hosts", &hosts))
      continue;
    /* Only the secrets this sandbox was given, under the placeholder it
       holds: a secret removed and set again is another secret.  */
    for (char *const *g = given; g && *g && !mine; g++)
      mine = strncmp (*g, name, strlen (name)) == 0 && (*g)[strlen (name)] == '='
             && strcmp (*g + strlen (name) + 1, ph) == 0;
    if (!mine)
      continue;
    k = json_object_array_length (hosts);
    names = calloc (k + 1, sizeof (char *));
    if (names == NULL)
      {
        rt_secret_bindings_free (b, n);
        return rt_error_oom (err);
      }
    for (size_t i = 0; i < k; i++)
      names[i] = (char *) json_object_get_string (json_object_array_get_idx (hosts, i));
    if (!rt_egress_names_match (names, host))
      continue;
    {
      struct rt_secret_binding *nb = realloc (b, (n + 1) * sizeof *b);
      if (nb == NULL)
        {
          rt_secret_bindings_free (b, n);
          return rt_error_oom (err);
        }
      b = nb;
      memset (&b[n], 0, sizeof b[n]);
      if (!binding_fill (&b[n++], e, ph, value))
        {
          rt_secret_bindings_free (b, n);
          return rt_error_oom (err);
        }
    }
  }
  *out = b;
  *n_out = n;
  return 0;
}
