/* migrate.c - a VM's device state saved to and loaded from a file over
   QMP (migrate.h).  */
#include <poll.h>
#include <string.h>

#include "vmm/migrate.h"

#define IGNORE_SHARED                                                                                                  \
  "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"                                         \
  "[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}"

/* Polls query-migrate until "completed"; "failed" or the deadline is an
   error.  */
static int
wait_completed (struct rt_qmp *q, int timeout_ms, rt_error **err)
{
  uint64_t deadline = rt_now_ms () + timeout_ms;

  for (;;)
    {
      cleanup_json json_object *r = NULL;
      json_object *status = NULL, *desc = NULL;
      const char *s;
      int ret = rt_qmp_exec (q, "{\"execute\":\"query-migrate\"}", -1, &r, timeout_ms, err);

      if (ret < 0)
        return ret;
      json_object_object_get_ex (r, "status", &status);
      s = status ? json_object_get_string (status) : "";
      if (strcmp (s, "completed") == 0)
        return 0;
      if (strcmp (s, "failed") == 0 || strcmp (s, "cancelled") == 0)
        {
          cleanup_free char *cut = NULL, *why = NULL;
          json_object_object_get_ex (r, "error-desc", &desc);
          cut = strndup (desc ? json_object_get_string (desc) : s, 200);
          why = cut ? rt_text_escape (cut, false) : NULL;
          return rt_error_set (err, EIO, "startup_failed", "QEMU could not move the VM's state: %s", why ? why : "?");
        }
      if (rt_now_ms () > deadline)
        return rt_error_set (err, ETIMEDOUT, "startup_failed", "QEMU did not finish moving the VM's state");
      poll (NULL, 0, 1);
    }
}

int
rt_vm_save_state (struct rt_qmp *q, int fd, int timeout_ms, rt_error **err)
{
  int ret = rt_qmp_exec (q, "{\"execute\":\"stop\"}", -1, NULL, timeout_ms, err);

  if (ret == 0)
    ret = rt_qmp_exec (q, IGNORE_SHARED, -1, NULL, timeout_ms, err);
  if (ret == 0)
    ret = rt_qmp_exec (q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"state\"}}", fd, NULL, timeout_ms, err);
  if (ret == 0)
    ret = rt_qmp_exec (q, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:state\"}}", -1, NULL, timeout_ms,
                       err);
  if (ret == 0)
    ret = wait_completed (q, timeout_ms, err);
  return ret;
}

int
rt_vm_load_state (struct rt_qmp *q, int fd, bool resume, int timeout_ms, rt_error **err)
{
  int ret = rt_qmp_exec (q, IGNORE_SHARED, -1, NULL, timeout_ms, err);

  if (ret == 0)
    ret = rt_qmp_exec (q, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"state\"}}", fd, NULL, timeout_ms, err);
  if (ret == 0)
    ret = rt_qmp_exec (q, "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:state\"}}", -1, NULL,
                       timeout_ms, err);
  if (ret == 0)
    ret = wait_completed (q, timeout_ms, err);
  if (ret == 0 && resume)
    ret = rt_qmp_exec (q, "{\"execute\":\"cont\"}", -1, NULL, timeout_ms, err);
  return ret;
}
