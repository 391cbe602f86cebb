/* ledger.c - the ledger (see ledger.h for its records): the monitor's
   writer and the fold every reader starts from.  */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "billing/ledger.h"

int
rt_ledger_open (rt_context *ctx, int *fd, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/ledger", ctx->data_dir);
  cleanup_free char *path = rt_strdup_printf ("%s/ledger/ledger.jsonl", ctx->data_dir);
  int ret;

  if (path == NULL || dir == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (dir, 0700, err);
  if (ret < 0)
    return ret;
  *fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (*fd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot open the ledger '%s': %s", path, strerror (errno));
  return 0;
}

void
rt_ledger_write (int fd, json_object *state, const struct rt_ledger_usage *u)
{
  cleanup_json json_object *o = json_object_new_object ();
  cleanup_free char *line = NULL;
  char now[32];
  json_object *v;
  const char *keys[] = { "id", "name", "funding", "createdAt", "state", "stopReason", NULL };

  if (fd < 0)
    return;
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (o, "t", json_object_new_string (now));
  for (const char **k = keys; *k; k++)
    json_object_object_add (o, *k, json_object_object_get_ex (state, *k, &v) ? json_object_get (v) : NULL);
  if (rt_json_str (state, "tenant"))
    json_object_object_add (o, "tenant", json_object_new_string (rt_json_str (state, "tenant")));
  json_object_object_add (o, "vcpu", json_object_new_int (u->vcpu));
  json_object_object_add (o, "memoryMiB", json_object_new_int (u->memory_mib));
  json_object_object_add (o, "runningUs", json_object_new_int64 ((int64_t) u->running_us));
  json_object_object_add (o, "cpuUs", json_object_new_int64 ((int64_t) u->cpu_us));
  json_object_object_add (o, "billedCpuUs", json_object_new_int64 ((int64_t) u->billed_cpu_us));
  json_object_object_add (o, "micros", json_object_new_int64 (u->micros));
  line = rt_strdup_printf ("%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN));
  /* One write(2) on an O_APPEND fd: lines of concurrent monitors never
     interleave.  */
  if (line && write (fd, line, strlen (line)) > 0)
    fdatasync (fd);
}

#define FOLD_CACHE_MIN (256 * 1024) /* newly folded bytes worth a cache write */

/* <data>/ledger/fold.json {"ino", "offset", "rows"}: the ledger's first
   `offset` bytes folded, so that a fold (every create asks, for the trial)
   reads only what was appended since.  Derived data: written atomically,
   ignored when it does not fit the ledger (another file, or shorter).  */
static void
fold_cache_load (const char *cache_path, const struct stat *st, json_object *by_id, json_object *order, off_t *start)
{
  cleanup_free char *text = NULL;
  cleanup_json json_object *cache = NULL;
  json_object *rows, *v;

  if (rt_read_file (cache_path, &text, NULL, NULL) < 0 || (cache = json_tokener_parse (text)) == NULL
      || !json_object_object_get_ex (cache, "rows", &rows) || !json_object_is_type (rows, json_type_array)
      || !json_object_object_get_ex (cache, "ino", &v) || (ino_t) json_object_get_int64 (v) != st->st_ino
      || !json_object_object_get_ex (cache, "offset", &v) || json_object_get_int64 (v) > st->st_size
      || json_object_get_int64 (v) < 0)
    return;
  *start = json_object_get_int64 (v);
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    {
      json_object *o = json_object_array_get_idx (rows, i);
      const char *id = rt_json_str (o, "id");
      if (id == NULL)
        continue;
      json_object_array_add (order, json_object_new_string (id));
      json_object_object_add (by_id, id, json_object_get (o));
    }
}

/* The last record of each sandbox, in the order they first appear.  */
int
rt_ledger_fold (rt_context *ctx, json_object **out, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/ledger/ledger.jsonl", ctx->data_dir);
  cleanup_free char *cache_path = rt_strdup_printf ("%s/ledger/fold.json", ctx->data_dir);
  cleanup_json json_object *by_id = json_object_new_object (), *order = json_object_new_array ();
  json_object *rows = json_object_new_array ();
  char *line = NULL;
  size_t cap = 0;
  off_t start = 0, folded = 0;
  struct stat st;
  ssize_t n;
  FILE *f;

  if (path == NULL || cache_path == NULL || rows == NULL || by_id == NULL || order == NULL)
    {
      json_object_put (rows);
      return rt_error_oom (err);
    }
  f = fopen (path, "re");
  if (f && fstat (fileno (f), &st) == 0)
    fold_cache_load (cache_path, &st, by_id, order, &start);
  if (f && start > 0 && fseeko (f, start, SEEK_SET) < 0)
    start = 0;
  folded = start;
  while (f && (n = getline (&line, &cap, f)) > 0)
    {
      json_object *o;
      const char *id;
      /* A line still being written is read again next time.  */
      if (line[n - 1] != '\n')
        break;
      folded += n;
      o = json_tokener_parse (line);
      id = o ? rt_json_str (o, "id") : NULL;
      /* A line cut short by a crash is skipped: the one before stands.  */
      if (id == NULL)
        {
          json_object_put (o);
          continue;
        }
      if (!json_object_object_get_ex (by_id, id, NULL))
        json_object_array_add (order, json_object_new_string (id));
      json_object_object_add (by_id, id, o);
    }
  free (line);
  if (f)
    fclose (f);
  for (size_t i = 0; i < json_object_array_length (order); i++)
    {
      json_object *o;
      json_object_object_get_ex (by_id, json_object_get_string (json_object_array_get_idx (order, i)), &o);
      json_object_array_add (rows, json_object_get (o));
    }
  if (f && folded - start >= FOLD_CACHE_MIN)
    {
      cleanup_json json_object *cache = json_object_new_object ();
      const char *text;
      json_object_object_add (cache, "ino", json_object_new_int64 ((int64_t) st.st_ino));
      json_object_object_add (cache, "offset", json_object_new_int64 ((int64_t) folded));
      json_object_object_add (cache, "rows", json_object_get (rows));
      text = json_object_to_json_string_ext (cache, JSON_C_TO_STRING_PLAIN);
      /* Best effort: without it the next fold only reads more.  */
      if (text)
        rt_write_file_atomic (cache_path, text, strlen (text), 0644, NULL);
    }
  *out = rows;
  return 0;
}

void
rt_ledger_keep_tenant (json_object *rows, const char *tenant)
{
  for (size_t i = json_object_array_length (rows); i-- > 0;)
    {
      const char *t = rt_json_str (json_object_array_get_idx (rows, i), "tenant");
      if (t == NULL || strcmp (t, tenant) != 0)
        json_object_array_del_idx (rows, i, 1);
    }
}
