/* oci.c - image indexes, manifests and configs (oci.h), by the OCI image
   spec and Docker's image manifest v2 schema 2.  */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "image/oci.h"

static int
bad (rt_error **err, const char *what, const char *why)
{
  return rt_error_set (err, EINVAL, "invalid_request", "the image's %s is not valid: %s", what, why);
}

bool
rt_oci_digest_valid (const char *s)
{
  size_t want = strncmp (s, "sha256:", 7) == 0 ? 64 : strncmp (s, "sha512:", 7) == 0 ? 128 : 0;

  if (want == 0 || strlen (s + 7) != want)
    return false;
  return strspn (s + 7, "0123456789abcdef") == want;
}

/* @json as an object, strictly (no trailing bytes, no 'quotes').  */
static json_object *
parse_object (const char *json, size_t len, size_t max, const char *what, rt_error **err)
{
  json_tokener *tok;
  json_object *o;
  bool whole;

  if (len > max)
    {
      rt_error_set (err, EFBIG, "invalid_request", "the image's %s is over %zu MiB", what, max >> 20);
      return NULL;
    }
  tok = json_tokener_new ();
  if (tok == NULL)
    {
      rt_error_oom (err);
      return NULL;
    }
  json_tokener_set_flags (tok, JSON_TOKENER_STRICT);
  o = json_tokener_parse_ex (tok, json, (int) len);
  whole = json_tokener_get_error (tok) == json_tokener_success && (size_t) json_tokener_get_parse_end (tok) == len;
  json_tokener_free (tok);
  if (o == NULL || !whole || !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      bad (err, what, "not a JSON object");
      return NULL;
    }
  return o;
}

/* A member that, when there, is a string: its value, "" when absent;
   NULL when of another type.  */
static const char *
opt_str (json_object *o, const char *key)
{
  json_object *v;

  if (!json_object_object_get_ex (o, key, &v) || v == NULL)
    return "";
  return json_object_is_type (v, json_type_string) ? json_object_get_string (v) : NULL;
}

static int
read_desc (json_object *o, const char *what, struct rt_oci_desc *d, rt_error **err)
{
  json_object *size;
  const char *mt, *digest;

  memset (d, 0, sizeof *d);
  if (!json_object_is_type (o, json_type_object))
    return bad (err, what, "a descriptor is not an object");
  mt = opt_str (o, "mediaType");
  digest = opt_str (o, "digest");
  if (mt == NULL || strlen (mt) >= sizeof d->media_type)
    return bad (err, what, "a descriptor's mediaType is not a short string");
  if (digest == NULL || !rt_oci_digest_valid (digest))
    return bad (err, what, "a descriptor's digest is not sha256: and 64 hex digits (or sha512: and 128)");
  if (!json_object_object_get_ex (o, "size", &size) || !json_object_is_type (size, json_type_int)
      || json_object_get_int64 (size) < 0 || json_object_get_int64 (size) == INT64_MAX)
    return bad (err, what, "a descriptor's size is not a whole number of bytes");
  strcpy (d->media_type, mt);
  strcpy (d->digest, digest);
  d->size = json_object_get_int64 (size);
  return 0;
}

int
rt_oci_kind_of (const char *json, size_t len, const char *media_type, enum rt_oci_kind *kind, rt_error **err)
{
  cleanup_json json_object *o = NULL;
  const char *mt = media_type;
  json_object *v;

  if (mt == NULL || *mt == '\0' || strcmp (mt, "application/json") == 0)
    {
      o = parse_object (json, len, RT_OCI_MAX_MANIFEST, "manifest", err);
      if (o == NULL)
        return -1;
      mt = opt_str (o, "mediaType");
      if (mt == NULL)
        return bad (err, "manifest", "mediaType is not a string");
    }
  if (strcmp (mt, RT_OCI_INDEX) == 0 || strcmp (mt, RT_DOCKER_LIST) == 0)
    return *kind = RT_OCI_KIND_INDEX, 0;
  if (strcmp (mt, RT_OCI_MANIFEST) == 0 || strcmp (mt, RT_DOCKER_MANIFEST) == 0)
    return *kind = RT_OCI_KIND_MANIFEST, 0;
  if (*mt)
    return rt_error_set (err, EINVAL, "invalid_request", "the image's manifest is of a type not supported: %.100s", mt);
  /* No type said anywhere (the OCI spec allows it): by its members.  */
  if (json_object_object_get_ex (o, "manifests", &v))
    return *kind = RT_OCI_KIND_INDEX, 0;
  if (json_object_object_get_ex (o, "config", &v) && json_object_object_get_ex (o, "layers", &v))
    return *kind = RT_OCI_KIND_MANIFEST, 0;
  return bad (err, "manifest", "neither an index nor an image manifest (a schema 1 manifest is not supported)");
}

/* Whether an index entry is an attestation (BuildKit's provenance and
   SBOM manifests, platform unknown/unknown).  */
static bool
attestation (json_object *e)
{
  json_object *ann, *v;

  return json_object_object_get_ex (e, "annotations", &ann) && json_object_is_type (ann, json_type_object)
         && json_object_object_get_ex (ann, "vnd.docker.reference.type", &v);
}

int
rt_oci_index_pick (const char *json, size_t len, struct rt_oci_desc *out, rt_error **err)
{
  cleanup_json json_object *o = parse_object (json, len, RT_OCI_MAX_MANIFEST, "index", err);
  cleanup_free char *seen = NULL;
  json_object *list, *v;
  size_t n;

  if (o == NULL)
    return -1;
  if (!json_object_object_get_ex (o, "schemaVersion", &v) || !json_object_is_type (v, json_type_int)
      || json_object_get_int64 (v) != 2)
    return bad (err, "index", "schemaVersion is not 2");
  if (!json_object_object_get_ex (o, "manifests", &list) || !json_object_is_type (list, json_type_array))
    return bad (err, "index", "manifests is not a list");
  n = json_object_array_length (list);
  for (size_t i = 0; i < n; i++)
    {
      json_object *e = json_object_array_get_idx (list, i), *platform;
      const char *os = "", *arch = "";
      struct rt_oci_desc d;

      if (read_desc (e, "index", &d, err) < 0)
        return -1;
      if (json_object_object_get_ex (e, "platform", &platform))
        {
          if (!json_object_is_type (platform, json_type_object) || (os = opt_str (platform, "os")) == NULL
              || (arch = opt_str (platform, "architecture")) == NULL)
            return bad (err, "index", "a platform is not {os, architecture} strings");
        }
      if (attestation (e))
        continue;
      if (strcmp (os, "linux") == 0 && strcmp (arch, "amd64") == 0)
        {
          if (strcmp (d.media_type, RT_OCI_MANIFEST) != 0 && strcmp (d.media_type, RT_DOCKER_MANIFEST) != 0)
            return bad (err, "index", "its linux/amd64 entry is not an image manifest");
          *out = d;
          return 0;
        }
      /* The platforms it has, for the error: the first few.  */
      if (i < 8 && (*os || *arch))
        {
          char *more = rt_strdup_printf ("%s%s%.20s/%.20s", seen ? seen : "", seen ? ", " : "", os, arch);

          if (more == NULL)
            return rt_error_oom (err);
          free (seen);
          seen = more;
        }
    }
  rt_error_set (err, ENOENT, "not_found", "the image has no linux/amd64 variant%s%s%s", seen ? " (it has " : "",
                seen ? seen : "", seen ? ")" : "");
  return -1;
}

void
rt_oci_manifest_clear (struct rt_oci_manifest *m)
{
  free (m->layers);
  free (m->compression);
  memset (m, 0, sizeof *m);
}

/* A layer's compression by its media type; -1 when not a layer we take.  */
static int
layer_compression (const char *mt)
{
  static const struct
  {
    const char *type;
    enum rt_oci_compression c;
  } known[] = {
    { "application/vnd.oci.image.layer.v1.tar", RT_OCI_TAR },
    { "application/vnd.oci.image.layer.v1.tar+gzip", RT_OCI_GZIP },
    { "application/vnd.oci.image.layer.v1.tar+zstd", RT_OCI_ZSTD },
    { "application/vnd.docker.image.rootfs.diff.tar.gzip", RT_OCI_GZIP },
    { "application/vnd.docker.image.rootfs.diff.tar", RT_OCI_TAR },
  };

  for (size_t i = 0; i < sizeof known / sizeof *known; i++)
    if (strcmp (mt, known[i].type) == 0)
      return (int) known[i].c;
  return -1;
}

int
rt_oci_manifest_parse (const char *json, size_t len, struct rt_oci_manifest *m, rt_error **err)
{
  cleanup_json json_object *o = parse_object (json, len, RT_OCI_MAX_MANIFEST, "manifest", err);
  json_object *v, *layers;
  size_t n;

  memset (m, 0, sizeof *m);
  if (o == NULL)
    return -1;
  if (!json_object_object_get_ex (o, "schemaVersion", &v) || !json_object_is_type (v, json_type_int)
      || json_object_get_int64 (v) != 2)
    return bad (err, "manifest", "schemaVersion is not 2 (a schema 1 manifest is not supported)");
  if (!json_object_object_get_ex (o, "config", &v))
    return bad (err, "manifest", "it has no config");
  if (read_desc (v, "manifest", &m->config, err) < 0)
    return -1;
  if (!json_object_object_get_ex (o, "layers", &layers) || !json_object_is_type (layers, json_type_array))
    return bad (err, "manifest", "layers is not a list");
  n = json_object_array_length (layers);
  if (n > RT_OCI_MAX_LAYERS)
    return rt_error_set (err, E2BIG, "invalid_request", "the image has %zu layers, more than the %u taken", n,
                         RT_OCI_MAX_LAYERS);
  m->layers = calloc (n ? n : 1, sizeof *m->layers);
  m->compression = calloc (n ? n : 1, sizeof *m->compression);
  if (m->layers == NULL || m->compression == NULL)
    {
      rt_oci_manifest_clear (m);
      return rt_error_oom (err);
    }
  for (size_t i = 0; i < n; i++)
    {
      int c;

      if (read_desc (json_object_array_get_idx (layers, i), "manifest", &m->layers[i], err) < 0)
        {
          rt_oci_manifest_clear (m);
          return -1;
        }
      c = layer_compression (m->layers[i].media_type);
      if (c < 0)
        {
          rt_error_set (err, EINVAL, "invalid_request", "the image's layer %zu is of a type not supported: %.100s",
                        i + 1, m->layers[i].media_type[0] ? m->layers[i].media_type : "(none)");
          rt_oci_manifest_clear (m);
          return -1;
        }
      m->compression[i] = (enum rt_oci_compression) c;
      m->n_layers++;
    }
  return 0;
}

void
rt_oci_config_clear (struct rt_oci_config *c)
{
  cleanup_strvp (&c->env);
  cleanup_strvp (&c->entrypoint);
  cleanup_strvp (&c->cmd);
  cleanup_strvp (&c->healthcheck);
  cleanup_strvp (&c->diff_ids);
  free (c->workdir);
  free (c->user);
  memset (c, 0, sizeof *c);
}

/* A list of strings (NULL-ended copy in *@out), or null/absent (*@out
   NULL, or an empty list when @empty).  */
static int
read_strv (json_object *o, const char *key, bool empty, char ***out, size_t *count, rt_error **err)
{
  json_object *a;
  size_t n;

  *out = NULL;
  if (!json_object_object_get_ex (o, key, &a) || a == NULL)
    {
      if (empty && (*out = calloc (1, sizeof **out)) == NULL)
        return rt_error_oom (err);
      if (count)
        *count = 0;
      return 0;
    }
  if (!json_object_is_type (a, json_type_array))
    return bad (err, "config", "a list of strings is of another type");
  n = json_object_array_length (a);
  *out = calloc (n + 1, sizeof **out);
  if (*out == NULL)
    return rt_error_oom (err);
  for (size_t i = 0; i < n; i++)
    {
      json_object *s = json_object_array_get_idx (a, i);

      if (!json_object_is_type (s, json_type_string))
        return bad (err, "config", "a list of strings holds something else");
      (*out)[i] = strndup (json_object_get_string (s), (size_t) json_object_get_string_len (s));
      if ((*out)[i] == NULL || strlen ((*out)[i]) != (size_t) json_object_get_string_len (s))
        return (*out)[i] ? bad (err, "config", "a string holds a NUL") : rt_error_oom (err);
    }
  if (count)
    *count = n;
  return 0;
}

static int
read_str (json_object *o, const char *key, char **out, rt_error **err)
{
  const char *s = opt_str (o, key);

  *out = NULL;
  if (s == NULL)
    return bad (err, "config", "a setting that is a string is of another type");
  if (*s && (*out = strdup (s)) == NULL)
    return rt_error_oom (err);
  return 0;
}

int
rt_oci_config_parse (const char *json, size_t len, size_t n_layers, struct rt_oci_config *c, rt_error **err)
{
  cleanup_json json_object *o = parse_object (json, len, RT_OCI_MAX_CONFIG, "config", err);
  json_object *run = NULL, *rootfs, *hc;
  const char *os, *arch, *type;
  int ret;

  memset (c, 0, sizeof *c);
  if (o == NULL)
    return -1;
  os = opt_str (o, "os");
  arch = opt_str (o, "architecture");
  if (os == NULL || arch == NULL || strcmp (os, "linux") != 0 || strcmp (arch, "amd64") != 0)
    return rt_error_set (err, EINVAL, "invalid_request", "the image is for %.20s/%.20s, not linux/amd64",
                         os && *os ? os : "?", arch && *arch ? arch : "?");
  if (json_object_object_get_ex (o, "config", &run) && run != NULL && !json_object_is_type (run, json_type_object))
    return bad (err, "config", "config is not an object");
  if (!json_object_object_get_ex (o, "rootfs", &rootfs) || !json_object_is_type (rootfs, json_type_object)
      || (type = opt_str (rootfs, "type")) == NULL || strcmp (type, "layers") != 0)
    return bad (err, "config", "rootfs is not {type: \"layers\", diff_ids}");
  ret = read_strv (rootfs, "diff_ids", true, &c->diff_ids, &c->n_diff_ids, err);
  for (size_t i = 0; ret == 0 && i < c->n_diff_ids; i++)
    if (!rt_oci_digest_valid (c->diff_ids[i]))
      ret = bad (err, "config", "a diff_id is not a digest");
  if (ret == 0 && c->n_diff_ids != n_layers)
    ret = rt_error_set (err, EINVAL, "invalid_request", "the image's config names %zu layers, its manifest %zu",
                        c->n_diff_ids, n_layers);
  if (ret == 0 && run)
    {
      ret = read_strv (run, "Env", true, &c->env, NULL, err);
      if (ret == 0)
        ret = read_strv (run, "Entrypoint", false, &c->entrypoint, NULL, err);
      if (ret == 0)
        ret = read_strv (run, "Cmd", false, &c->cmd, NULL, err);
      if (ret == 0)
        ret = read_str (run, "WorkingDir", &c->workdir, err);
      if (ret == 0)
        ret = read_str (run, "User", &c->user, err);
      if (ret == 0 && json_object_object_get_ex (run, "Healthcheck", &hc) && hc != NULL)
        ret = json_object_is_type (hc, json_type_object) ? read_strv (hc, "Test", false, &c->healthcheck, NULL, err)
                                                         : bad (err, "config", "Healthcheck is not an object");
    }
  else if (ret == 0 && (c->env = calloc (1, sizeof *c->env)) == NULL)
    ret = rt_error_oom (err);
  for (char **e = c->env; ret == 0 && e && *e; e++)
    if (strchr (*e, '=') == NULL || **e == '=')
      ret = bad (err, "config", "an Env entry is not K=V");
  if (ret < 0)
    rt_oci_config_clear (c);
  return ret;
}
