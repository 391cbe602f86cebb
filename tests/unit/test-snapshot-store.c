/* test-snapshot-store.c - the snapshot store (snapshot/store.c) on a temp
   data dir with hand-written meta.json files: ids and what passes for
   one, resolving by id and name, the listing (complete snapshots only,
   oldest first), names, the sweep of what dead captures and forks left,
   removal, and which images a snapshot or a paused sandbox needs.  */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "snapshot/store.h"
#include "tap.h"

static char root[] = "/tmp/test-snapshot-store-XXXXXX";

static bool
exists (const char *rel)
{
  char path[512];
  struct stat st;

  snprintf (path, sizeof path, "%s/%s", root, rel);
  return lstat (path, &st) == 0;
}

static void
put (const char *rel, const char *text)
{
  char path[512], *slash;

  snprintf (path, sizeof path, "%s/%s", root, rel);
  slash = strrchr (path, '/');
  *slash = '\0';
  rt_mkdir_p (path, 0700, NULL);
  *slash = '/';
  rt_write_file_atomic (path, text, strlen (text), 0600, NULL);
}

/* A snapshot's meta.json in the dir @name.  */
static void
put_meta (const char *name, const char *id, const char *snap_name, const char *created, const char *image,
          const char *extra)
{
  char rel[256], text[1024];

  snprintf (rel, sizeof rel, "snapshots/%s/meta.json", name);
  snprintf (text, sizeof text,
            "{\"id\":\"%s\",\"kind\":\"snapshot\",\"name\":%s%s%s,\"labels\":{\"k\":\"v\"},\"createdAt\":\"%s\","
            "\"sourceSandboxId\":\"sb-0000000000aa\",\"image\":{\"id\":\"%s\",\"ref\":\"runtime\"},"
            "\"shape\":{\"vcpu\":2,\"memoryMiB\":1024,\"diskMiB\":4096},\"storedBytes\":4096,"
            "\"memoryBytes\":1073741824,\"diskBytes\":65536%s}",
            id, snap_name ? "\"" : "", snap_name ? snap_name : "null", snap_name ? "\"" : "", created, image,
            extra ? extra : "");
  put (rel, text);
}

/* A pid that named a process which has exited.  */
static pid_t
dead_pid (void)
{
  pid_t p = fork ();

  if (p == 0)
    _exit (0);
  waitpid (p, NULL, 0);
  return p;
}

static void
test_ids (void)
{
  static const char *const bad[] = { "",
                                     "snap-",
                                     "snap-0123456789a",
                                     "snap-0123456789abc",
                                     "snap-0123456789AB",
                                     "snap-0123456789a/",
                                     "snap-../../etc/x",
                                     "snap-01234..789ab",
                                     "sb-0123456789abcd",
                                     "xnap-0123456789ab",
                                     ".tmp-snap-0123456789ab" };
  char a[RT_SNAPSHOT_ID_LEN + 1], b[RT_SNAPSHOT_ID_LEN + 1];
  cleanup_error rt_error *err = NULL;

  ok (rt_snapshot_make_id (a, &err) == 0 && rt_snapshot_make_id (b, &err) == 0, "two ids made");
  ok (strlen (a) == 17 && strncmp (a, "snap-", 5) == 0 && rt_snapshot_id_valid (a) && rt_snapshot_id_valid (b),
      "an id is snap- and 12 lowercase hex digits, and valid: %s", a);
  ok (strcmp (a, b) != 0, "two ids differ: %s %s", a, b);
  ok (rt_snapshot_id_valid ("snap-0123456789ab"), "snap-0123456789ab is valid");
  ok (!rt_snapshot_id_valid (NULL), "NULL is not an id");
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ok (!rt_snapshot_id_valid (bad[i]), "'%s' is not an id", bad[i]);
}

/* Three snapshots whose dir order is not their age, and what is not one.  */
static void
populate (void)
{
  put_meta ("snap-bbbbbbbbbbbb", "snap-bbbbbbbbbbbb", "newest", "2026-12-01T03:00:00.000Z", "img1", NULL);
  put_meta ("snap-aaaaaaaaaaaa", "snap-aaaaaaaaaaaa", "middle", "2026-11-30T03:00:00.000Z", "img1", NULL);
  put_meta ("snap-cccccccccccc", "snap-cccccccccccc", NULL, "2026-11-01T03:00:00.000Z", "img4", NULL);
  put_meta ("snap-0000000000dd", "snap-0000000000dd", "snap-cccccccccccc", "2026-11-02T03:00:00.000Z", "img5", NULL);
  /* Not snapshots: being captured, a fork's, no meta.json, an id that
     is not the dir's, a name that is not an id.  */
  put_meta (".tmp-snap-dddddddddddd", "snap-dddddddddddd", "tmp", "2026-10-01T00:00:00.000Z", "img1", NULL);
  put_meta (".fork-snap-eeeeeeeeeeee", "snap-eeeeeeeeeeee", "fork", "2026-10-01T00:00:00.000Z", "img1", NULL);
  put ("snapshots/snap-ffffffffffff/ram", "");
  put_meta ("snap-111111111111", "snap-222222222222", "liar", "2026-10-01T00:00:00.000Z", "img1", NULL);
  put_meta ("notanid", "notanid", "odd", "2026-10-01T00:00:00.000Z", "img1", NULL);
}

static void
test_list (rt_context *ctx)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *arr = NULL;
  json_object *first;

  ok (rt_snapshot_list_json (ctx, &json, &err) == 0 && (arr = json_tokener_parse (json)) != NULL, "listed");
  ok (arr && json_object_array_length (arr) == 4,
      "four complete snapshots listed (not .tmp-, .fork-, no meta.json, "
      "a mismatched id or a non-id): %s",
      json ? json : "");
  if (arr == NULL || json_object_array_length (arr) != 4)
    return;
  ok (strcmp (rt_json_str (json_object_array_get_idx (arr, 0), "id"), "snap-cccccccccccc") == 0
          && strcmp (rt_json_str (json_object_array_get_idx (arr, 1), "id"), "snap-0000000000dd") == 0
          && strcmp (rt_json_str (json_object_array_get_idx (arr, 2), "id"), "snap-aaaaaaaaaaaa") == 0
          && strcmp (rt_json_str (json_object_array_get_idx (arr, 3), "id"), "snap-bbbbbbbbbbbb") == 0,
      "oldest first by createdAt");
  first = json_object_array_get_idx (arr, 2);
  ok (strcmp (rt_json_str (first, "kind"), "snapshot") == 0 && strcmp (rt_json_str (first, "state"), "ready") == 0
          && strcmp (rt_json_str (first, "name"), "middle") == 0
          && strcmp (rt_json_str (first, "sourceSandboxId"), "sb-0000000000aa") == 0
          && rt_json_i64 (first, "storedBytes") == 4096 && rt_json_i64 (first, "memoryBytes") == 1073741824
          && strstr (rt_json_str (first, "path"), "/snapshots/snap-aaaaaaaaaaaa"),
      "the object: kind, state, name, source, sizes, path");
  ok (json_object_object_get_ex (first, "shape", NULL) && json_object_object_get_ex (first, "image", NULL)
          && json_object_object_get_ex (first, "labels", NULL) && json_object_object_get_ex (first, "createdAt", NULL)
          && !json_object_object_get_ex (first, "sandbox", NULL),
      "shape, image, labels, createdAt; not the monitor's own fields");
}

static void
test_resolve (rt_context *ctx)
{
  static const char *const missing[] = { "nope",
                                         "snap-999999999999",
                                         ".tmp-snap-dddddddddddd",
                                         "tmp",
                                         "fork",
                                         "../snapshots/snap-aaaaaaaaaaaa",
                                         "snap-ffffffffffff",
                                         "" };
  cleanup_free char *by_id = NULL, *by_name = NULL, *json = NULL;
  cleanup_error rt_error *err = NULL;

  ok (rt_snapshot_resolve (ctx, "snap-aaaaaaaaaaaa", &by_id, &err) == 0
          && strstr (by_id, "/snapshots/snap-aaaaaaaaaaaa"),
      "resolved by id: %s", by_id ? by_id : "");
  ok (rt_snapshot_resolve (ctx, "middle", &by_name, &err) == 0 && strcmp (by_id, by_name) == 0, "and by name");
  ok (rt_snapshot_get_json (ctx, "newest", &json, &err) == 0 && strstr (json, "snap-bbbbbbbbbbbb"), "get by name");
  {
    cleanup_free char *dir = NULL;
    ok (rt_snapshot_resolve (ctx, "snap-cccccccccccc", &dir, &err) == 0 && strstr (dir, "snap-cccccccccccc"),
        "an id wins over another snapshot's name that looks like it");
  }
  for (size_t i = 0; i < sizeof missing / sizeof *missing; i++)
    {
      cleanup_error rt_error *e = NULL;
      cleanup_free char *dir = NULL;
      int ret = rt_snapshot_resolve (ctx, missing[i], &dir, &e);
      ok (ret < 0 && e && (strcmp (e->code, "not_found") == 0 || strcmp (e->code, "usage") == 0),
          "'%s' is no snapshot: %s", missing[i], e ? e->code : "found");
    }
}

static void
test_names (rt_context *ctx)
{
  cleanup_error rt_error *err = NULL, *err2 = NULL;
  int fd = -1;

  ok (rt_snapshot_lock (ctx, &fd, &err) == 0 && fd >= 0 && exists ("snapshots/.lock"), "the lock is held");
  ok (rt_snapshot_name_free (ctx, "fresh", &err) == 0, "an unused name is free");
  ok (rt_snapshot_name_free (ctx, "middle", &err2) < 0 && err2 && strcmp (err2->code, "name_taken") == 0,
      "a snapshot's name is taken: %s", err2 ? err2->msg : "");
  ok (rt_snapshot_name_free (ctx, "tmp", NULL) == 0, "a capture's name in .tmp- does not count");
  close (fd);
}

static void
test_sweep (rt_context *ctx)
{
  char text[128], extra[128];
  struct timeval old[2];
  char path[512];

  snprintf (text, sizeof text, "%d 12345\n", dead_pid ());
  put ("snapshots/.tmp-snap-100000000000/monitor.pid", text);
  snprintf (text, sizeof text, "%d %llu\n", getpid (), rt_proc_starttime (getpid ()));
  put ("snapshots/.tmp-snap-200000000000/monitor.pid", text);
  snprintf (extra, sizeof extra, ",\"creatorPid\":\"%d 12345\"", dead_pid ());
  put_meta (".fork-snap-300000000000", "snap-300000000000", NULL, "2026-10-01T00:00:00.000Z", "img1", extra);
  snprintf (extra, sizeof extra, ",\"creatorPid\":\"%d %llu\"", getpid (), rt_proc_starttime (getpid ()));
  put_meta (".fork-snap-400000000000", "snap-400000000000", NULL, "2026-10-01T00:00:00.000Z", "img1", extra);
  put ("snapshots/.tmp-del-snap-500000000000/ram", "x");
  put ("snapshots/.tmp-snap-600000000000/ram", "x");
  snprintf (path, sizeof path, "%s/snapshots/.tmp-snap-600000000000", root);
  gettimeofday (&old[0], NULL);
  old[0].tv_sec -= 7200;
  old[1] = old[0];
  utimes (path, old);

  rt_snapshot_sweep (ctx);
  ok (!exists ("snapshots/.tmp-snap-100000000000"), "a capture whose monitor died is swept");
  ok (exists ("snapshots/.tmp-snap-200000000000"), "a capture whose monitor lives stays");
  ok (!exists ("snapshots/.fork-snap-300000000000"), "a fork's whose creator died is swept");
  ok (exists ("snapshots/.fork-snap-400000000000"), "a fork's whose creator lives stays");
  ok (!exists ("snapshots/.tmp-del-snap-500000000000"), "a removal cut short is finished");
  ok (!exists ("snapshots/.tmp-snap-600000000000"), "a capture over an hour old, without a pid file, is swept");
  ok (exists ("snapshots/.tmp-snap-dddddddddddd"), "a young capture without a pid file yet stays");
  ok (exists ("snapshots/snap-aaaaaaaaaaaa") && exists ("snapshots/snap-ffffffffffff"),
      "complete snapshots (and other dirs) are never swept");
}

static void
test_image_in_use (rt_context *ctx)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *who = NULL, *who2 = NULL, *who3 = NULL;

  put ("sandboxes/sb-0123456789ab/saved/meta.json",
       "{\"id\":\"sb-0123456789ab\",\"kind\":\"paused\",\"image\":{\"id\":\"img2\",\"ref\":\"x\"}}");
  put ("sandboxes/sb-0123456789ac/overlay.qcow2", "");
  ok (rt_snapshot_image_in_use (ctx, "img4", &who, &err) == 1 && who && strcmp (who, "snap-cccccccccccc") == 0,
      "an image a snapshot needs is in use, by it: %s", who ? who : "");
  ok (rt_snapshot_image_in_use (ctx, "img2", &who2, &err) == 1 && who2 && strcmp (who2, "sb-0123456789ab") == 0,
      "an image a paused sandbox needs is in use, by it: %s", who2 ? who2 : "");
  ok (rt_snapshot_image_in_use (ctx, "img3", &who3, &err) == 0 && who3 == NULL, "an image nothing saved needs is not");
}

static void
test_remove (rt_context *ctx)
{
  cleanup_error rt_error *err = NULL, *err2 = NULL;
  cleanup_free char *json = NULL;

  ok (rt_snapshot_remove (ctx, "middle", &err) == 0, "removed by name");
  ok (!exists ("snapshots/snap-aaaaaaaaaaaa") && !exists ("snapshots/.tmp-del-snap-aaaaaaaaaaaa"),
      "its dir is gone, nothing left under another name");
  ok (rt_snapshot_list_json (ctx, &json, NULL) == 0 && strstr (json, "snap-aaaaaaaaaaaa") == NULL
          && strstr (json, "snap-bbbbbbbbbbbb"),
      "no longer listed; the others are");
  ok (rt_snapshot_remove (ctx, "middle", &err2) < 0 && err2 && strcmp (err2->code, "not_found") == 0,
      "removing it again: not_found");
  ok (rt_snapshot_remove (ctx, "snap-cccccccccccc", NULL) == 0 && !exists ("snapshots/snap-cccccccccccc"),
      "removed by id");
}

int
main (void)
{
  rt_context ctx = { 0 };

  if (mkdtemp (root) == NULL)
    return 1;
  ctx.data_dir = root;
  ctx.state_dir = root;
  test_ids ();
  {
    cleanup_free char *json = NULL;
    ok (rt_snapshot_list_json (&ctx, &json, NULL) == 0 && strcmp (json, "[]") == 0, "no snapshots dir: []");
  }
  populate ();
  test_list (&ctx);
  test_resolve (&ctx);
  test_names (&ctx);
  test_sweep (&ctx);
  test_image_in_use (&ctx);
  test_remove (&ctx);
  rt_rm_rf (root, NULL);
  return tap_done ();
}
