/* test-layer.c - the path checks of layer entries (image/layer.h): what
   extraction onto a boot disk and the check of an imported layer accept
   and refuse.  A mistake here lets a layer write outside the image.  */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "image/layer.h"
#include "tap.h"

static const char *const verdicts[] = {
  [RT_LAYER_WRITE] = "write",          [RT_LAYER_ROOT] = "root",           [RT_LAYER_WHITEOUT] = "whiteout",
  [RT_LAYER_DEVICE] = "device",        [RT_LAYER_BAD_PATH] = "bad path",   [RT_LAYER_BAD_LINK] = "bad link",
  [RT_LAYER_VIA_LINK] = "via symlink", [RT_LAYER_NO_MEMORY] = "no memory",
};

/* One entry checked: the verdict and, when @path is not NULL, the cleaned
   path (and target, when @target is not NULL).  */
static void
check (json_object *links, bool first, const char *name, mode_t type, dev_t rdev, const char *hardlink,
       enum rt_layer_verdict want, const char *path, const char *target)
{
  struct rt_layer_entry e = { .name = name, .type = type, .rdev = rdev, .hardlink = hardlink };
  struct rt_layer_check c;
  enum rt_layer_verdict got = rt_layer_check_entry (links, first, &e, &c);
  bool same = got == want;

  if (same && path)
    same = c.path && strcmp (c.path, path) == 0;
  if (same && target)
    same = c.target && strcmp (c.target, target) == 0;
  ok (same, "%s '%.60s'%s%.60s: %s (got %s, '%.40s')", links ? "import" : "extract", name ? name : "(none)",
      hardlink ? " -> " : "", hardlink ? hardlink : "", verdicts[want], verdicts[got], c.path ? c.path : "");
  rt_layer_check_clear (&c);
}

/* An entry an import refuses as written through a symlink: @via_what
   through its first @via bytes.  */
static void
via (json_object *links, const char *name, mode_t type, const char *hardlink, const char *via_what, size_t n)
{
  struct rt_layer_entry e = { .name = name, .type = type, .hardlink = hardlink };
  struct rt_layer_check c;
  enum rt_layer_verdict got = rt_layer_check_entry (links, false, &e, &c);

  ok (got == RT_LAYER_VIA_LINK && c.via_what && strcmp (c.via_what, via_what) == 0 && c.via == n,
      "import '%s'%s%s: '%s' through the symlink '%.*s' (got %s)", name, hardlink ? " -> " : "",
      hardlink ? hardlink : "", via_what, (int) n, via_what, verdicts[got]);
  rt_layer_check_clear (&c);
}

static void
test_extract (void)
{
  char *longname = malloc (8192), *deep = malloc (8192);
  json_object *links = json_object_new_object ();

  /* Out of the root.  */
  check (NULL, false, "../etc/passwd", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "usr/../../etc/passwd", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "usr/..", S_IFDIR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "./..//x", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "/etc/passwd", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "//etc", S_IFDIR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "/", S_IFDIR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, NULL, S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  /* Dots that are names.  */
  check (NULL, false, "...", S_IFREG, 0, NULL, RT_LAYER_WRITE, "...", NULL);
  check (NULL, false, "a/..b/.c", S_IFREG, 0, NULL, RT_LAYER_WRITE, "a/..b/.c", NULL);
  /* "./" prefixes, empty components, trailing "/" and ".".  */
  check (NULL, false, "./usr/bin/", S_IFDIR, 0, NULL, RT_LAYER_WRITE, "usr/bin", NULL);
  check (NULL, false, ".//./usr//bin/.", S_IFDIR, 0, NULL, RT_LAYER_WRITE, "usr/bin", NULL);
  check (NULL, false, "usr/./lib", S_IFDIR, 0, NULL, RT_LAYER_WRITE, "usr/lib", NULL);
  check (NULL, false, "./", S_IFDIR, 0, NULL, RT_LAYER_ROOT, "", NULL);
  check (NULL, false, ".", S_IFDIR, 0, NULL, RT_LAYER_ROOT, "", NULL);
  check (NULL, false, ".//./.", S_IFDIR, 0, NULL, RT_LAYER_ROOT, "", NULL);
  check (NULL, false, "", S_IFDIR, 0, NULL, RT_LAYER_ROOT, "", NULL);
  /* Hard links: their targets obey the same rules.  */
  check (NULL, false, "bin/sh2", S_IFREG, 0, "./bin//sh", RT_LAYER_WRITE, "bin/sh2", "bin/sh");
  check (NULL, false, "bin/sh2", S_IFREG, 0, "../../bin/sh", RT_LAYER_BAD_LINK, NULL, NULL);
  check (NULL, false, "bin/sh2", S_IFREG, 0, "/etc/shadow", RT_LAYER_BAD_LINK, NULL, NULL);
  check (NULL, false, "../sh2", S_IFREG, 0, "/etc/shadow", RT_LAYER_BAD_PATH, NULL, NULL);
  /* overlayfs's whiteouts; device nodes never reach the disk.  */
  check (NULL, false, "./etc/motd", S_IFCHR, 0, NULL, RT_LAYER_WHITEOUT, "etc/motd", NULL);
  check (NULL, false, "../etc/motd", S_IFCHR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (NULL, false, "dev/null", S_IFCHR, makedev (1, 3), NULL, RT_LAYER_DEVICE, "dev/null", NULL);
  check (NULL, false, "dev/sda", S_IFBLK, makedev (8, 0), NULL, RT_LAYER_DEVICE, "dev/sda", NULL);
  check (NULL, true, "dev/sda", S_IFBLK, 0, NULL, RT_LAYER_DEVICE, "dev/sda", NULL);
  /* What is not written is not looked at further.  */
  check (NULL, false, "etc/motd", S_IFCHR, 0, "../x", RT_LAYER_WHITEOUT, "etc/motd", NULL);
  check (NULL, false, "./", S_IFDIR, 0, "../x", RT_LAYER_ROOT, "", NULL);
  /* Names past RT_LAYER_MAX_PATH bytes or RT_LAYER_MAX_DEPTH components
     (cleaned) are refused: such a tree could not be removed by path.  */
  memset (longname, 'x', 8191);
  longname[8191] = '\0';
  check (NULL, false, longname, S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (links, false, longname, S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  longname[RT_LAYER_MAX_PATH] = '\0';
  check (NULL, false, longname, S_IFREG, 0, NULL, RT_LAYER_WRITE, longname, NULL);
  check (NULL, false, "a", S_IFREG, 0, longname, RT_LAYER_WRITE, "a", longname);
  longname[RT_LAYER_MAX_PATH] = 'x';
  longname[RT_LAYER_MAX_PATH + 1] = '\0';
  check (NULL, false, "a", S_IFREG, 0, longname, RT_LAYER_BAD_LINK, NULL, NULL);
  check (links, false, "a", S_IFREG, 0, longname, RT_LAYER_BAD_LINK, NULL, NULL);
  for (int i = 0; i < 4094; i++)
    memcpy (deep + 2 * i, "a/", 2);
  strcpy (deep + 2 * 4094, "..");
  check (NULL, false, deep, S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  deep[2 * 4094] = '\0';
  check (NULL, false, deep, S_IFDIR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  deep[2 * RT_LAYER_MAX_DEPTH - 1] = '\0'; /* "a/a/…/a": 256 components */
  check (NULL, false, deep, S_IFDIR, 0, NULL, RT_LAYER_WRITE, deep, NULL);
  deep[2 * RT_LAYER_MAX_DEPTH - 1] = '/';
  deep[2 * RT_LAYER_MAX_DEPTH + 1] = '\0'; /* 257 */
  check (NULL, false, deep, S_IFDIR, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  /* The limits are on the cleaned name: "./" and "//" do not count.  */
  for (int i = 0; i < 2000; i++)
    memcpy (deep + 2 * i, "./", 2);
  strcpy (deep + 4000, "usr//bin/");
  check (NULL, false, deep, S_IFDIR, 0, NULL, RT_LAYER_WRITE, "usr/bin", NULL);
  free (longname);
  free (deep);
  json_object_put (links);
}

/* Whiteouts and opaque directories named like directories ("opt/app/")
   act on the path itself: extraction then hides a symlink there, not
   what it points to (test-extract.c extracts them).  */
static void
test_dir_name (void)
{
  static const char *const names[] = { "./opt/app/", "opt/app/.", "opt//app//", "opt/app" };

  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    {
      check (NULL, false, names[i], S_IFCHR, 0, NULL, RT_LAYER_WHITEOUT, "opt/app", NULL);
      check (NULL, false, names[i], S_IFDIR, 0, NULL, RT_LAYER_WRITE, "opt/app", NULL);
    }
}

static void
test_import (void)
{
  json_object *links = json_object_new_object ();

  /* The same refusals of names and targets, before anything else.  */
  check (links, false, "../x", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (links, false, "/x", S_IFREG, 0, NULL, RT_LAYER_BAD_PATH, NULL, NULL);
  check (links, false, "x", S_IFREG, 0, "../y", RT_LAYER_BAD_LINK, NULL, NULL);
  check (links, false, "x", S_IFCHR, 0, "/y", RT_LAYER_BAD_LINK, NULL, NULL);
  check (links, false, "./", S_IFDIR, 0, "../y", RT_LAYER_BAD_LINK, NULL, NULL);
  /* Device nodes: refused but in a first layer's /dev; whiteouts pass.  */
  check (links, false, "dev/null", S_IFCHR, makedev (1, 3), NULL, RT_LAYER_DEVICE, "dev/null", NULL);
  check (links, true, "./dev/null", S_IFCHR, makedev (1, 3), NULL, RT_LAYER_WRITE, "dev/null", NULL);
  check (links, true, "devices/null", S_IFCHR, makedev (1, 3), NULL, RT_LAYER_DEVICE, NULL, NULL);
  check (links, true, "sda", S_IFBLK, makedev (8, 0), NULL, RT_LAYER_DEVICE, NULL, NULL);
  check (links, false, "etc/motd", S_IFCHR, 0, NULL, RT_LAYER_WRITE, "etc/motd", NULL);

  /* Nothing through a symlink an earlier entry made.  */
  check (links, true, "./lib", S_IFLNK, 0, NULL, RT_LAYER_WRITE, "lib", NULL);
  via (links, "lib/x", S_IFREG, NULL, "lib/x", 3);
  via (links, ".//lib//x/", S_IFDIR, NULL, "lib/x", 3);
  check (links, false, "lib", S_IFLNK, 0, NULL, RT_LAYER_WRITE, "lib", NULL);
  check (links, false, "libx/y", S_IFREG, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  /* Hard links: not to a path through a symlink, and one to a symlink is
     a symlink too.  */
  via (links, "y", S_IFREG, "lib/passwd", "lib/passwd", 3);
  check (links, false, "l2", S_IFREG, 0, "./lib", RT_LAYER_WRITE, "l2", "lib");
  via (links, "l2/z", S_IFREG, NULL, "l2/z", 2);
  /* A plain directory replaces the symlink at its name...  */
  check (links, false, "lib/", S_IFDIR, 0, NULL, RT_LAYER_WRITE, "lib", NULL);
  check (links, false, "lib/x", S_IFREG, 0, NULL, RT_LAYER_WRITE, "lib/x", NULL);
  /* ...but keeps the symlinks below it.  */
  check (links, false, "d/s", S_IFLNK, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  check (links, false, "d", S_IFDIR, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  via (links, "d/s/x", S_IFREG, NULL, "d/s/x", 3);
  /* A whiteout or an opaque directory hides what was below it.  */
  check (links, false, "d", S_IFDIR, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  {
    struct rt_layer_entry e = { .name = "d/", .type = S_IFDIR, .opaque = true };
    struct rt_layer_check c;
    ok (rt_layer_check_entry (links, false, &e, &c) == RT_LAYER_WRITE, "import opaque dir 'd/': write");
    rt_layer_check_clear (&c);
  }
  check (links, false, "d/s/x", S_IFREG, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  check (links, false, "l2", S_IFCHR, 0, NULL, RT_LAYER_WRITE, "l2", NULL);
  check (links, false, "l2/z", S_IFREG, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  /* A regular file over a symlink replaces it too.  */
  check (links, false, "s2", S_IFLNK, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  check (links, false, "s2", S_IFREG, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  check (links, false, "s2/x", S_IFREG, 0, NULL, RT_LAYER_WRITE, NULL, NULL);
  json_object_put (links);
}

/* The checks extraction and import made before they became one scheme:
   every short name over '.', '/' and 'a' gets the same answer.  */
static bool
old_safe_relative (const char *p)
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

static const char *
old_skip_dot (const char *p)
{
  while (p[0] == '.' && p[1] == '/')
    p += 2 + strspn (p + 2, "/");
  return p;
}

static void
test_same_as_before (void)
{
  static const char alphabet[] = "./a";
  size_t tried = 0, differ = 0;
  char name[8];

  for (int len = 0; len <= 7; len++)
    {
      int total = 1;
      for (int i = 0; i < len; i++)
        total *= 3;
      for (int k = 0; k < total; k++)
        {
          struct rt_layer_entry e = { .name = name, .type = S_IFREG };
          struct rt_layer_check c;
          enum rt_layer_verdict v;
          bool old_refused, old_skipped;
          for (int i = 0, x = k; i < len; i++, x /= 3)
            name[i] = alphabet[x % 3];
          name[len] = '\0';
          old_refused = !old_safe_relative (name);
          old_skipped = !old_refused && (*old_skip_dot (name) == '\0' || strcmp (old_skip_dot (name), ".") == 0);
          v = rt_layer_check_entry (NULL, false, &e, &c);
          if ((v == RT_LAYER_BAD_PATH) != old_refused || (v == RT_LAYER_ROOT) != old_skipped
              || rt_layer_path_safe (name) != old_safe_relative (name))
            {
              differ++;
              printf ("# differs: '%s'\n", name);
            }
          rt_layer_check_clear (&c);
          tried++;
        }
    }
  ok (differ == 0, "%zu names: refused and skipped as before", tried);
}

static void
test_clean (void)
{
  static const char *const cases[][2]
      = {
          { "", "" },     { ".", "" },          { "./", "" },           { "a", "a" },
          { "./a", "a" }, { "a/", "a" },        { "a//b", "a/b" },      { "a/./b", "a/b" },
          { "a/.", "a" }, { ".a/b.", ".a/b." }, { "a/../b", "a/../b" }, /* not resolved: rt_layer_path_safe refuses it */
        };

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      char *got = rt_layer_path_clean (cases[i][0]);
      ok (got && strcmp (got, cases[i][1]) == 0, "'%s' cleans to '%s' (got '%s')", cases[i][0], cases[i][1],
          got ? got : "(null)");
      free (got);
    }
}

static void
oci (const char *clean, enum rt_layer_oci want, const char *target)
{
  static const char *const names[] = { "plain", "whiteout", "opaque", "refused", "no memory" };
  char *got = NULL;
  enum rt_layer_oci v = rt_layer_oci_whiteout (clean, &got);

  ok (v == want && (target ? got && strcmp (got, target) == 0 : got == NULL), "OCI '%s': %s%s%s (got %s '%s')", clean,
      names[want], target ? " of " : "", target ? target : "", names[v], got ? got : "");
  free (got);
}

static void
test_oci_whiteouts (void)
{
  oci ("etc/passwd", RT_LAYER_OCI_PLAIN, NULL);
  oci ("etc/.whitelist", RT_LAYER_OCI_PLAIN, NULL);
  oci ("etc/.wh.passwd", RT_LAYER_OCI_WHITEOUT, "etc/passwd");
  oci (".wh.tmp", RT_LAYER_OCI_WHITEOUT, "tmp");
  oci ("a/b/.wh..hidden", RT_LAYER_OCI_WHITEOUT, "a/b/.hidden");
  oci ("usr/.wh..wh..opq", RT_LAYER_OCI_OPAQUE, "usr");
  oci (".wh..wh..opq", RT_LAYER_OCI_OPAQUE, "");
  oci ("../x/.wh..wh..opq", RT_LAYER_OCI_BAD, NULL);
  oci ("../.wh.x", RT_LAYER_OCI_BAD, NULL);
  oci ("etc/.wh.", RT_LAYER_OCI_BAD, NULL);
  oci ("etc/.wh..", RT_LAYER_OCI_BAD, NULL);
  oci ("etc/.wh...", RT_LAYER_OCI_BAD, NULL);
  oci (".wh...", RT_LAYER_OCI_BAD, NULL);
  oci ("etc/.wh..wh.plnk", RT_LAYER_OCI_BAD, NULL);
  oci ("etc/.wh..wh..opq2", RT_LAYER_OCI_BAD, NULL);
  oci (".wh.etc/passwd", RT_LAYER_OCI_PLAIN, NULL); /* a dir named so: only the last part counts */
}

int
main (void)
{
  test_oci_whiteouts ();
  test_clean ();
  test_extract ();
  test_dir_name ();
  test_import ();
  test_same_as_before ();
  return tap_done ();
}
