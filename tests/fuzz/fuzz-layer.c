/* fuzz-layer.c - the layer-path checks (image/layer.h), which judge every
 * entry of a layer an image import or a hostile build step hands the host.
 *
 * Input: entries, one a line: byte 0 the entry's type (low 3 bits: file,
 * dir, symlink, hard link, char device, block device, whiteout, fifo),
 * byte 1 flags (1: opaque, 2: the image's first layer), then the name,
 * and for a hard link a TAB and its target.  Every entry is checked twice:
 * as extraction sees it (no symlink set) and as import does (the symlinks
 * of the entries before it).
 *
 * Checked: whatever is to be written has a clean, relative name with no
 * ".." (and so has a hard link's target); cleaning is idempotent; at
 * import nothing is written through a symlink an earlier entry made, and
 * no device node but a first layer's dev/ passes; an OCI whiteout name
 * deletes only a safe path beside it, never the root.
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "image/layer.h"

static const mode_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFREG, S_IFCHR, S_IFBLK, S_IFCHR, S_IFIFO };

static void
check_clean (const char *p)
{
  char *again = rt_layer_path_clean (p);

  FUZZ_CHECK (p[0] != '/');
  FUZZ_CHECK (rt_layer_path_safe (p));
  FUZZ_CHECK (strncmp (p, "./", 2) != 0 && strstr (p, "//") == NULL);
  FUZZ_CHECK (again == NULL || strcmp (again, p) == 0);
  free (again);
}

/* Whether a proper prefix of @p, cut at a '/', is a symlink of @links.  */
static bool
below_link (json_object *links, const char *p)
{
  char *copy = strdup (p);
  bool found = false;

  if (copy == NULL)
    return false;
  for (char *s = strchr (copy, '/'); s && !found; s = strchr (s + 1, '/'))
    {
      *s = '\0';
      found = json_object_object_get_ex (links, copy, NULL);
      *s = '/';
    }
  free (copy);
  return found;
}

/* An OCI whiteout deletes a clean path with no "..", never the root, in
   the whiteout's own directory; an opaque marker names that directory.  */
static void
check_oci (const char *clean)
{
  char *target = NULL;
  const char *slash = strrchr (clean, '/');
  size_t dir = slash ? (size_t) (slash - clean) : 0;

  switch (rt_layer_oci_whiteout (clean, &target))
    {
    case RT_LAYER_OCI_WHITEOUT:
      FUZZ_CHECK (target && *target && rt_layer_path_safe (target));
      FUZZ_CHECK (strncmp (target, clean, dir) == 0 && strchr (target + (dir ? dir + 1 : 0), '/') == NULL);
      break;
    case RT_LAYER_OCI_OPAQUE:
      FUZZ_CHECK (target && strlen (target) == dir && strncmp (target, clean, dir) == 0);
      break;
    case RT_LAYER_OCI_PLAIN:
      FUZZ_CHECK (target == NULL && strncmp (slash ? slash + 1 : clean, ".wh.", 4) != 0);
      break;
    case RT_LAYER_OCI_BAD:
    case RT_LAYER_OCI_NO_MEMORY:
      FUZZ_CHECK (target == NULL);
    }
  free (target);
}

static void
check_entry (json_object *links, bool first, const struct rt_layer_entry *e)
{
  struct rt_layer_check c;
  json_object *before = NULL;
  enum rt_layer_verdict v;

  if (links && json_object_deep_copy (links, &before, NULL) != 0)
    return;
  v = rt_layer_check_entry (links, first, e, &c);
  if (v != RT_LAYER_BAD_PATH && v != RT_LAYER_NO_MEMORY && c.path && *c.path)
    {
      check_clean (c.path);
      check_oci (c.path);
    }
  if (v == RT_LAYER_WRITE)
    {
      FUZZ_CHECK (e->hardlink == NULL || c.target != NULL);
      if (c.target)
        check_clean (c.target);
      if (links)
        {
          FUZZ_CHECK (!below_link (before, c.path));
          FUZZ_CHECK (c.target == NULL || !below_link (before, c.target));
          if (e->type == S_IFBLK || (e->type == S_IFCHR && e->rdev != 0))
            FUZZ_CHECK (first && strncmp (c.path, "dev/", 4) == 0);
        }
      else
        FUZZ_CHECK (e->type != S_IFBLK && !(e->type == S_IFCHR));
    }
  rt_layer_check_clear (&c);
  json_object_put (before);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = malloc (size + 1);
  json_object *links = json_object_new_object ();
  char *line, *save = NULL;

  if (text == NULL || links == NULL)
    {
      free (text);
      json_object_put (links);
      return 0;
    }
  memcpy (text, data, size);
  text[size] = '\0';
  for (line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      unsigned kind, flags;
      char *tab;
      struct rt_layer_entry e = { 0 };

      if (strlen (line) < 3)
        continue;
      kind = (unsigned char) line[0] & 7;
      flags = (unsigned char) line[1];
      e.name = line + 2;
      e.type = types[kind];
      e.rdev = kind == 4 || kind == 5 ? 0x0801 : 0;
      e.opaque = (flags & 1) && e.type == S_IFDIR;
      if (kind == 3 && (tab = strchr (e.name, '\t')))
        {
          *tab = '\0';
          e.hardlink = tab + 1;
        }
      check_entry (NULL, flags & 2, &e);
      check_entry (links, flags & 2, &e);
    }
  json_object_put (links);
  free (text);
  return 0;
}
