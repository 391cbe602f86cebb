/* view.c - the one view of a sandbox (view.h): a list of the fields
   callers see, not a list of those to hide.  */
#include <string.h>

#include "records/view.h"

static const struct
{
  const char *key;
  bool host_only;
} fields[] = {
  { "id", false },
  { "kind", false },
  { "name", false },
  { "labels", false },
  { "state", false },
  { "funding", false },
  { "fundingReason", false },
  { "vcpu", false },
  { "memoryMiB", false },
  { "diskMiB", false },
  { "image", false },
  { "imageId", false },
  { "timeoutSeconds", false },
  { "onLeaseEnd", false },
  { "idlePauseSeconds", false },
  { "autoWake", false },
  { "createdAt", false },
  { "expiresAt", false },
  { "endedAt", false },
  { "stopReason", false },
  { "error", false },
  { "pausedAt", false },
  { "pauseReason", false }, /* lease_ended, idle, requested */
  { "paused", false }, /* {path (host only), storedBytes} */
  { "network", false },
  { "envNames", false },
  { "cpuSeconds", false },
  { "runningSeconds", false },
  { "chargedMicros", false },
  { "start", false },
  { "template", false },
  { "snapshot", false },
  { "readyMs", false },
  { "jail", true },
  { "tenant", true },
};

static json_object *
paused_view (json_object *paused, enum rt_view who)
{
  json_object *o, *v;

  if (!json_object_is_type (paused, json_type_object))
    return json_object_get (paused);
  o = json_object_new_object ();
  if (o == NULL)
    return NULL;
  if (who == RT_VIEW_HOST && json_object_object_get_ex (paused, "path", &v))
    json_object_object_add (o, "path", json_object_get (v));
  if (json_object_object_get_ex (paused, "storedBytes", &v))
    json_object_object_add (o, "storedBytes", json_object_get (v));
  return o;
}

json_object *
rt_sandbox_view (json_object *record, enum rt_view who)
{
  json_object *o = json_object_new_object (), *v;

  if (o == NULL)
    return NULL;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    {
      if ((fields[i].host_only && who != RT_VIEW_HOST) || !json_object_object_get_ex (record, fields[i].key, &v))
        continue;
      v = strcmp (fields[i].key, "paused") == 0 ? paused_view (v, who) : json_object_get (v);
      if (v == NULL && json_object_object_get (record, fields[i].key) != NULL)
        {
          json_object_put (o);
          return NULL;
        }
      json_object_object_add (o, fields[i].key, v);
    }
  return o;
}
