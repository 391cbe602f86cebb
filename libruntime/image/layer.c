/* layer.c - the path-safety scheme for layer entries (layer.h).  */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "image/layer.h"

bool
rt_layer_path_safe (const char *p)
{
  if (*p == '/')
    return false;
  for (const char *c = p; *c;)
    {
      size_t n = strcspn (c, "/");
      if (n == 2 && c[0] == '.' && c[1] == '.')
        return false;
      c += n;
      c += strspn (c, "/");
    }
  return true;
}

bool
rt_layer_path_fits (const char *clean)
{
  size_t depth = 1;

  if (strlen (clean) > RT_LAYER_MAX_PATH)
    return false;
  for (const char *c = clean; *c; c++)
    depth += *c == '/';
  return depth <= RT_LAYER_MAX_DEPTH;
}

char *
rt_layer_path_clean (const char *p)
{
  char *out = malloc (strlen (p) + 1), *o = out;

  if (out == NULL)
    return NULL;
  while (*p)
    {
      size_t n = strcspn (p, "/");
      if (n > 0 && !(n == 1 && p[0] == '.'))
        {
          if (o > out)
            *o++ = '/';
          memcpy (o, p, n);
          o += n;
        }
      p += n;
      p += strspn (p, "/");
    }
  *o = '\0';
  return out;
}

enum rt_layer_oci
rt_layer_oci_whiteout (const char *clean, char **target)
{
  const char *slash = strrchr (clean, '/'), *base = slash ? slash + 1 : clean;
  size_t dir = slash ? (size_t) (slash - clean) : 0;
  const char *name = base + 4;

  *target = NULL;
  if (strncmp (base, ".wh.", 4) != 0)
    return RT_LAYER_OCI_PLAIN;
  if (strcmp (base, ".wh..wh..opq") == 0)
    {
      *target = strndup (clean, dir);
      if (*target == NULL)
        return RT_LAYER_OCI_NO_MEMORY;
      if (!rt_layer_path_safe (*target))
        {
          free (*target);
          *target = NULL;
          return RT_LAYER_OCI_BAD;
        }
      return RT_LAYER_OCI_OPAQUE;
    }
  /* Nothing, ".", "..", or a name the spec keeps for itself.  */
  if (*name == '\0' || strcmp (name, ".") == 0 || strcmp (name, "..") == 0 || strncmp (name, ".wh.", 4) == 0)
    return RT_LAYER_OCI_BAD;
  /* The dir, "/" and the name (no printf helper: fuzz-layer links only
     this file).  */
  *target = malloc (dir + 1 + strlen (name) + 1);
  if (*target == NULL)
    return RT_LAYER_OCI_NO_MEMORY;
  memcpy (*target, clean, dir);
  (*target)[dir] = '/';
  strcpy (*target + (dir ? dir + 1 : 0), name);
  if (!rt_layer_path_safe (*target))
    {
      free (*target);
      *target = NULL;
      return RT_LAYER_OCI_BAD;
    }
  return RT_LAYER_OCI_WHITEOUT;
}

size_t
rt_layer_through_link (json_object *links, char *path)
{
  for (char *slash = strchr (path, '/'); slash; slash = strchr (slash + 1, '/'))
    {
      bool found;
      *slash = '\0';
      found = json_object_object_get_ex (links, path, NULL);
      *slash = '/';
      if (found)
        return slash - path;
    }
  return 0;
}

/* @path and everything below it are no longer what they were.  */
static void
forget_below (json_object *links, const char *path)
{
  size_t len = strlen (path), n = 0;
  char **gone = calloc (json_object_object_length (links) + 1, sizeof (char *));

  if (gone == NULL)
    return;
  json_object_object_foreach (links, k, v)
  {
    (void) v;
    if (strncmp (k, path, len) == 0 && (k[len] == '\0' || k[len] == '/'))
      gone[n++] = strdup (k);
  }
  for (size_t i = 0; i < n; i++)
    if (gone[i])
      json_object_object_del (links, gone[i]);
  cleanup_strvp (&gone);
}

static bool
is_whiteout (const struct rt_layer_entry *e)
{
  return e->type == S_IFCHR && e->rdev == 0;
}

static bool
is_device (const struct rt_layer_entry *e)
{
  return e->type == S_IFBLK || (e->type == S_IFCHR && e->rdev != 0);
}

/* A layer the store holds: what is not written is said before its hard
   link is looked at.  */
static enum rt_layer_verdict
extract_verdict (const struct rt_layer_entry *e, struct rt_layer_check *out)
{
  if (*out->path == '\0')
    return RT_LAYER_ROOT;
  if (is_whiteout (e))
    return RT_LAYER_WHITEOUT;
  if (is_device (e))
    return RT_LAYER_DEVICE;
  if (e->hardlink)
    {
      if (!rt_layer_path_safe (e->hardlink))
        return RT_LAYER_BAD_LINK;
      out->target = rt_layer_path_clean (e->hardlink);
      if (out->target == NULL)
        return RT_LAYER_NO_MEMORY;
      if (!rt_layer_path_fits (out->target))
        return RT_LAYER_BAD_LINK;
    }
  return RT_LAYER_WRITE;
}

/* An untrusted layer: nothing written through a symlink that this or an
   earlier layer made, whatever order the entries come in.  */
static enum rt_layer_verdict
import_verdict (json_object *links, bool first, const struct rt_layer_entry *e, struct rt_layer_check *out)
{
  if (e->hardlink && (out->target = rt_layer_path_clean (e->hardlink)) == NULL)
    return RT_LAYER_NO_MEMORY;
  if (out->target && !rt_layer_path_fits (out->target))
    return RT_LAYER_BAD_LINK;
  if (is_device (e) && !(first && strncmp (out->path, "dev/", 4) == 0))
    return RT_LAYER_DEVICE;
  if ((out->via = rt_layer_through_link (links, out->path)) > 0)
    out->via_what = out->path;
  else if (out->target && (out->via = rt_layer_through_link (links, out->target)) > 0)
    out->via_what = out->target;
  if (out->via_what)
    return RT_LAYER_VIA_LINK;
  /* A plain directory merges with what is below; anything else
     replaces it, and a whiteout or an opaque directory hides it.  */
  if (e->type == S_IFDIR && !e->opaque)
    json_object_object_del (links, out->path);
  else
    forget_below (links, out->path);
  /* A hard link to a symlink is a symlink too.  */
  if (e->type == S_IFLNK || (out->target && json_object_object_get_ex (links, out->target, NULL)))
    json_object_object_add (links, out->path, NULL);
  return RT_LAYER_WRITE;
}

enum rt_layer_verdict
rt_layer_check_entry (json_object *links, bool first, const struct rt_layer_entry *e, struct rt_layer_check *out)
{
  memset (out, 0, sizeof *out);
  if (e->name == NULL || !rt_layer_path_safe (e->name))
    return RT_LAYER_BAD_PATH;
  if (links && e->hardlink && !rt_layer_path_safe (e->hardlink))
    return RT_LAYER_BAD_LINK;
  out->path = rt_layer_path_clean (e->name);
  if (out->path == NULL)
    return RT_LAYER_NO_MEMORY;
  if (!rt_layer_path_fits (out->path))
    return RT_LAYER_BAD_PATH;
  return links ? import_verdict (links, first, e, out) : extract_verdict (e, out);
}

void
rt_layer_check_clear (struct rt_layer_check *c)
{
  free (c->path);
  free (c->target);
  c->path = c->target = NULL;
  c->via_what = NULL;
}

bool
rt_layer_within (const struct rt_layer_budget *b, uint64_t at, int64_t size)
{
  uint64_t more = size > 0 ? (uint64_t) size : 0;

  return b->used <= b->limit && at <= b->limit - b->used && more <= b->limit - b->used - at;
}
