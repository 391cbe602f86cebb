/* handle.c - the rt_sandbox handle: made, named, freed.  */
#include "records/handle.h"
#include "records/store.h"

void
rt_sandbox_close (rt_sandbox *sb)
{
  if (sb == NULL)
    return;
  free (sb->dir);
  free (sb->sock);
  free (sb);
}

rt_sandbox *
rt_sandbox_handle_new (rt_context *ctx, const char *id)
{
  rt_sandbox *sb = calloc (1, sizeof (*sb));
  if (sb == NULL)
    return NULL;
  sb->ctx = ctx;
  snprintf (sb->id, sizeof (sb->id), "%s", id);
  sb->dir = rt_sandbox_dir (ctx, id);
  sb->sock = rt_strdup_printf ("%s/api.sock", sb->dir);
  if (sb->dir == NULL || sb->sock == NULL)
    {
      rt_sandbox_close (sb);
      return NULL;
    }
  return sb;
}

const char *
rt_sandbox_id (rt_sandbox *sb)
{
  return sb->id;
}
