/* view.h - a sandbox as callers see it, built from its state or record:
   rt_sandbox_get_json, rt_sandbox_list_json and the API's SandboxInfo
   (docs/API.md) are this one view.  */
#ifndef RT_RECORDS_VIEW_H
#define RT_RECORDS_VIEW_H

#include "common/util.h"

/* Who looks: a tenant (an API token) sees the sandbox; the host also sees
   what only the host may (its jail, its tenant, where its paused copy
   lies).  */
enum rt_view
{
  RT_VIEW_TENANT,
  RT_VIEW_HOST,
};

/* A new object holding the fields of @record a caller may see, in one
   order; a field the record lacks is left out, and so is every field the
   view does not name (a spare's mark, a claim's settings): nothing the
   monitor adds reaches a caller unless it is listed here.  NULL when out
   of memory.  */
json_object *rt_sandbox_view (json_object *record, enum rt_view who);

#endif
