/* routes.c - the monitor's HTTP API (see routes.h): which handler answers
   a request, and the handlers that only read or set the state.  */
#include <event2/buffer.h>
#include <string.h>

#include "monitor/capture.h"
#include "monitor/exec.h"
#include "monitor/idle.h"
#include "monitor/lifecycle.h"
#include "monitor/proc-stdin.h"
#include "monitor/procs.h"
#include "monitor/reply.h"
#include "monitor/routes.h"
#include "monitor/spare.h"
#include "net/proxy.h"

typedef void (*route_fn) (struct mon *m, struct evhttp_request *req, json_object *body);

struct route
{
  enum evhttp_cmd_type method;
  /* "" the sandbox itself, "/sub" a sub-resource, ":verb" an action; NULL
     any action (or none) not listed before it.  */
  const char *path;
  route_fn handler;
  /* Answered while the sandbox stops too (without its body); the others
     get sandbox_not_ready then.  GETs have no body and are always
     answered.  */
  bool when_stopping;
};

static void handle_state (struct mon *m, struct evhttp_request *req, json_object *body);
static void handle_get_network (struct mon *m, struct evhttp_request *req, json_object *body);
static void handle_put_network (struct mon *m, struct evhttp_request *req, json_object *body);
static void handle_metrics (struct mon *m, struct evhttp_request *req, json_object *body);
static void handle_no_action (struct mon *m, struct evhttp_request *req, json_object *body);

static const struct route routes[] = {
  { EVHTTP_REQ_GET, "", handle_state, true },
  { EVHTTP_REQ_GET, "/network", handle_get_network, true },
  { EVHTTP_REQ_PUT, "/network", handle_put_network, false },
  { EVHTTP_REQ_GET, "/metrics", handle_metrics, true },
  { EVHTTP_REQ_POST, ":exec", mon_handle_exec, false },
  { EVHTTP_REQ_POST, ":signal", mon_handle_signal, false },
  { EVHTTP_REQ_POST, ":spawn", mon_handle_spawn, false },
  { EVHTTP_REQ_POST, ":ps", mon_handle_ps, false },
  { EVHTTP_REQ_POST, ":logs", mon_handle_logs, false },
  { EVHTTP_REQ_POST, ":kill", mon_handle_kill, false },
  { EVHTTP_REQ_POST, ":write", mon_handle_write, false },
  { EVHTTP_REQ_POST, ":resize", mon_handle_resize, false },
  { EVHTTP_REQ_POST, ":extend", mon_handle_extend, false },
  { EVHTTP_REQ_POST, ":stop", mon_handle_stop, true },
  { EVHTTP_REQ_POST, ":pause", mon_handle_pause, false },
  { EVHTTP_REQ_POST, ":wake", mon_handle_wake, false },
  { EVHTTP_REQ_POST, ":snapshot", mon_handle_snapshot, false },
  { EVHTTP_REQ_POST, ":fork", mon_handle_fork, false },
  { EVHTTP_REQ_POST, ":update", mon_handle_update, false },
  { EVHTTP_REQ_POST, ":reserve", mon_handle_reserve, false },
  { EVHTTP_REQ_POST, ":claim", mon_handle_claim, false },
  { EVHTTP_REQ_POST, ":claimed", mon_handle_claimed, false },
  { EVHTTP_REQ_POST, NULL, handle_no_action, false },
};

static void
handle_state (struct mon *m, struct evhttp_request *req, json_object *body)
{
  (void) body;
  mon_reply_json (req, 200, m->state);
}

static void
handle_get_network (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *net;

  (void) body;
  /* Without rules yet, the state object (as it always was).  */
  if (json_object_object_get_ex (m->state, "network", &net))
    return mon_reply_json (req, 200, net);
  mon_reply_json (req, 200, m->state);
}

static void
handle_put_network (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct rt_egress_rules rules = { 0 };
  cleanup_error rt_error *err = NULL;
  json_object *net;
  int closed;

  if (rt_egress_rules_from_json (body, &rules, &err) < 0)
    return mon_reply_error (req, 400, err->code, err->hint, "%s", err->msg);
  rules.trial = m->trial;
  /* The kernel refuses new connections first, then the proxy cuts the
     open ones the new rules refuse.  */
  if (rt_netns_apply (&m->net, &rules, &err) < 0)
    {
      rt_egress_rules_clear (&rules);
      return mon_reply_error (req, 500, err->code, err->hint, "%s", err->msg);
    }
  closed = rt_proxy_set_rules (m->proxy, &rules, &err);
  if (closed < 0)
    {
      rt_egress_rules_clear (&rules);
      return mon_reply_error (req, 500, err->code, err->hint, "%s", err->msg);
    }
  net = rt_egress_rules_to_json (&rules);
  rt_egress_rules_clear (&rules);
  if (net == NULL)
    return mon_reply_error (req, 500, "internal", NULL, "out of memory");
  json_object_object_add (m->state, "network", json_object_get (net));
  mon_save_state (m);
  json_object_object_add (net, "closed", json_object_new_int (closed));
  mon_reply_json (req, 200, net);
  json_object_put (net);
}

static void
handle_metrics (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_json json_object *o = json_object_new_object ();
  const struct rt_meter *mt = &m->meter;
  char pct[32], ran[32];

  (void) body;
  if (!mon_stopping (m))
    rt_meter_sample (&m->meter);
  /* To the millisecond, as cpuSeconds: CPU over a window of running time.  */
  snprintf (ran, sizeof ran, "%.3f", mt->running_us / 1e6);
  snprintf (pct, sizeof pct, "%.1f", m->paused_to_disk ? 0.0 : mt->cpu_percent);
  json_object_object_add (o, "id", json_object_new_string (m->cfg->id));
  json_object_object_add (o, "state", json_object_get (json_object_object_get (m->state, "state")));
  json_object_object_add (o, "vcpu", json_object_new_int (m->cfg->vm.vcpu));
  json_object_object_add (o, "cpuPercent", json_object_new_double_s (m->paused_to_disk ? 0.0 : mt->cpu_percent, pct));
  json_object_object_add (o, "memoryMiB", json_object_new_int (m->cfg->vm.memory_mib));
  json_object_object_add (o, "runningSeconds", json_object_new_double_s (mt->running_us / 1e6, ran));
  json_object_object_add (o, "cpuSeconds", json_object_get (json_object_object_get (m->state, "cpuSeconds")));
  json_object_object_add (o, "chargedMicros", json_object_new_int64 (rt_meter_charged_micros (mt)));
  mon_reply_json (req, 200, o);
}

static void
handle_no_action (struct mon *m, struct evhttp_request *req, json_object *body)
{
  const char *uri = evhttp_request_get_uri (req), *colon = strchr (uri, ':');

  (void) m;
  (void) body;
  mon_reply_error (req, 404, "not_found", NULL, "no such action '%s'", colon ? colon + 1 : "");
}

static bool
route_matches (const struct route *r, const char *sub, const char *verb)
{
  if (r->path == NULL)
    return *sub == '\0';
  if (r->path[0] == '/')
    return *verb == '\0' && strcmp (r->path + 1, sub) == 0;
  if (r->path[0] == ':')
    return *sub == '\0' && strcmp (r->path + 1, verb) == 0;
  return *sub == '\0' && *verb == '\0';
}

/* The route for @method on @sub or @verb; NULL with *@known when another
   method has one there.  */
static const struct route *
find_route (enum evhttp_cmd_type method, const char *sub, const char *verb, bool *known)
{
  *known = false;
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
    if (route_matches (&routes[i], sub, verb))
      {
        *known = true;
        if (routes[i].method == method)
          return &routes[i];
      }
  return NULL;
}

/* The body of a POST or PUT: a JSON object, {} when empty; NULL after
   replying the error.  */
static json_object *
parse_body (struct evhttp_request *req)
{
  struct evbuffer *in = evhttp_request_get_input_buffer (req);
  size_t len = evbuffer_get_length (in);
  json_tokener *tok;
  json_object *body;

  if (len == 0)
    return json_object_new_object ();
  tok = json_tokener_new ();
  body = json_tokener_parse_ex (tok, (const char *) evbuffer_pullup (in, -1), len);
  if (body && !json_object_is_type (body, json_type_object))
    {
      json_object_put (body);
      body = NULL;
    }
  json_tokener_free (tok);
  if (body == NULL)
    mon_reply_error (req, 400, "invalid_request", NULL, "the request body is not a JSON object");
  return body;
}

/* /v1/sandboxes/{id}[/sub][:verb] into @path's id, sub and verb; false
   after replying not_found.  */
static bool
split_uri (struct mon *m, struct evhttp_request *req, char **path, const char **sub, const char **verb)
{
  const char *uri = evhttp_request_get_uri (req), *prefix = "/v1/sandboxes/";
  char *colon, *slash;

  if (uri == NULL || strncmp (uri, prefix, strlen (prefix)) != 0)
    return mon_reply_error (req, 404, "not_found", NULL, "no such endpoint"), false;
  *path = strdup (uri + strlen (prefix));
  if (*path == NULL)
    return mon_reply_error (req, 500, "internal", NULL, "out of memory"), false;
  if ((colon = strchr (*path, ':')))
    {
      *colon = '\0';
      *verb = colon + 1;
    }
  if ((slash = strchr (*path, '/')))
    {
      *slash = '\0';
      *sub = slash + 1;
    }
  if (strcmp (*path, m->cfg->id) != 0)
    return mon_reply_error (req, 404, "not_found", NULL, "no sandbox '%s' here", *path), false;
  return true;
}

void
mon_handle_request (struct evhttp_request *req, void *arg)
{
  struct mon *m = arg;
  enum evhttp_cmd_type method = evhttp_request_get_command (req);
  cleanup_free char *path = NULL;
  cleanup_json json_object *body = NULL;
  const char *verb = "", *sub = "";
  const struct route *r;
  bool known;

  mon_idle_touch (m);
  if (!split_uri (m, req, &path, &sub, &verb))
    return;
  r = find_route (method, sub, verb, &known);
  if (r == NULL && !known)
    return mon_reply_error (req, 404, "not_found", NULL, "no such endpoint");
  if (r == NULL)
    return mon_reply_error (req, 405, "invalid_request", NULL, "method not allowed");
  if (method == EVHTTP_REQ_GET)
    return r->handler (m, req, NULL);
  if (mon_stopping (m) && r->when_stopping)
    /* Stopping what stops already is done.  */
    return r->handler (m, req, NULL);
  if (mon_stopping (m))
    return mon_reply_error (req, 409, "sandbox_stopped", "runtime sandbox create starts a new one",
                            "sandbox %s is stopped", m->cfg->id);
  /* An unclaimed spare runs nothing (spare.h).  */
  if (m->phase == MON_SPARE && r->handler != mon_handle_reserve && r->handler != mon_handle_claim
      && r->handler != mon_handle_stop)
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is a spare", m->cfg->id);
  body = parse_body (req);
  if (body == NULL)
    return;
  r->handler (m, req, body);
}
