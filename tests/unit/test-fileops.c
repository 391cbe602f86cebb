/* test-fileops.c - the listing a guest sends for the server's files routes
   (sandbox/fileops.h): well-formed records become FileEntry objects; a
   guest's lies (no NUL, bad numbers, relative paths, an endless stream,
   text after the last record) are skipped, impossible times clamped, never read past.  */
#include <string.h>

#include "sandbox/fileops.h"
#include "tap.h"

static json_object *
parse (const char *buf, size_t len, size_t max, bool *more)
{
  json_object *arr = json_object_new_array ();
  *more = rt_guest_parse_entries (buf, len, max, arr);
  return arr;
}

static const char *
field (json_object *arr, size_t i, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (json_object_array_get_idx (arr, i), key, &v) ? json_object_get_string (v) : NULL;
}

int
main (void)
{
  static const char good[] = "f 13 644 1764569888.5000000000 /workspace/a b.txt\0\0"
                             "l 11 777 1764569888.0 /workspace/link\0/etc/passwd\0"
                             "d 4096 1777 0 /tmp\0\0"
                             "p 0 600 1.5 /workspace/fifo\0\0";
  static const char bad[] = "f x 644 1 /a\0\0"     /* size not a number */
                            "f 1 999 1 /a\0\0"     /* mode not octal */
                            "f 1 644 1 rel\0\0"    /* a relative path */
                            "f 1 644 -5 /old\0\0"  /* a time before 1970: 1970 */
                            "f 1 644 nan /nan\0\0" /* a lie: 1970 */
                            "f 1 644 1 /ok\0\0"
                            "f 1 644 1 /unterminated"; /* no NUL: not read */
  json_object *arr;
  bool more;

  arr = parse (good, sizeof (good) - 1, 100, &more);
  ok (json_object_array_length (arr) == 4 && !more, "four records, four entries");
  ok (strcmp (field (arr, 0, "name"), "a b.txt") == 0 && strcmp (field (arr, 0, "type"), "file") == 0
          && strcmp (field (arr, 0, "mode"), "644") == 0 && strcmp (field (arr, 0, "size"), "13") == 0,
      "a file: its name with a space, type, mode, size");
  ok (strcmp (field (arr, 0, "modifiedAt"), "2025-12-01T06:18:08.500Z") == 0, "modifiedAt in ISO 8601 with ms (%s)",
      field (arr, 0, "modifiedAt"));
  ok (strcmp (field (arr, 1, "type"), "symlink") == 0 && strcmp (field (arr, 1, "symlinkTarget"), "/etc/passwd") == 0,
      "a symlink with its target");
  ok (field (arr, 0, "symlinkTarget") == NULL, "no symlinkTarget for a file");
  ok (strcmp (field (arr, 2, "type"), "directory") == 0 && strcmp (field (arr, 2, "mode"), "1777") == 0,
      "a directory, a sticky mode");
  ok (strcmp (field (arr, 3, "type"), "other") == 0, "a FIFO is other");
  json_object_put (arr);

  arr = parse (good, sizeof (good) - 1, 2, &more);
  ok (json_object_array_length (arr) == 2 && more, "cut at the maximum, and says so");
  json_object_put (arr);

  arr = parse (bad, sizeof (bad) - 1, 100, &more);
  ok (json_object_array_length (arr) == 3 && strcmp (field (arr, 2, "path"), "/ok") == 0,
      "malformed records skipped, an unterminated one not read");
  ok (strcmp (field (arr, 0, "modifiedAt"), "1970-01-01T00:00:00.000Z") == 0
          && strcmp (field (arr, 1, "modifiedAt"), "1970-01-01T00:00:00.000Z") == 0,
      "times before 1970 and NaN shown as 1970");
  json_object_put (arr);

  arr = parse ("/", 1, 100, &more);
  ok (json_object_array_length (arr) == 0 && !more, "a stray byte: nothing");
  json_object_put (arr);
  {
    static const char root[] = "d 4096 755 1 /\0\0";
    arr = parse (root, sizeof (root) - 1, 100, &more);
    ok (json_object_array_length (arr) == 1 && strcmp (field (arr, 0, "name"), "/") == 0, "/ is named /");
    json_object_put (arr);
  }
  return tap_done ();
}
