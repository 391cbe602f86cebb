/* openapi.c - GET /v1/openapi.json: an OpenAPI 3.1 document made from the
   route table (routes.c) and the body fields each handler checks
   (handlers.h), so that what it says is what the server does.
   (no header of its own: handlers.h declares it).  */
#include <event2/http.h>
#include <stdbool.h>
#include <string.h>

#include "api/handlers.h"
#include "common/util.h"

#define SB "/v1/sandboxes/{id}"

/* The routes whose body is a JSON object of known fields; a {verb}
   route's verbs each by its own path.  A route not here takes no body (a
   GET, a DELETE), raw bytes (a file, an archive, an upload's chunk) or an
   empty one (an upload's :commit and :abort).  */
static const struct
{
  int method;
  const char *path;
  const struct srv_field *fields;
  const char *nested;                  /* a field that is itself an object of known fields */
  const struct srv_field *nested_fields;
} bodies[] = {
  { EVHTTP_REQ_POST, "/v1/sandboxes", srv_fields_create, NULL, NULL },
  { EVHTTP_REQ_PUT, SB "/network", srv_fields_network, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":exec", srv_fields_exec, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":stop", srv_fields_none, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":pause", srv_fields_none, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":wake", srv_fields_wake, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":extend", srv_fields_extend, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":update", srv_fields_update, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":fork", srv_fields_fork, NULL, NULL },
  { EVHTTP_REQ_POST, SB ":snapshot", srv_fields_snapshot, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/sessions", srv_fields_session, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/sessions/{session}:revoke", srv_fields_none, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/processes", srv_fields_spawn, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:write", srv_fields_write, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:signal", srv_fields_signal, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:resize", srv_fields_size, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/uploads", srv_fields_upload, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/files:mkdir", srv_fields_mkdir, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/files:remove", srv_fields_remove, NULL, NULL },
  { EVHTTP_REQ_POST, SB "/files:rename", srv_fields_rename, NULL, NULL },
  { EVHTTP_REQ_POST, "/v1/images", srv_fields_build, "recipe", srv_fields_recipe },
  { EVHTTP_REQ_PUT, "/v1/egress-secrets/{name}", srv_fields_secret, NULL, NULL },
};

static const char *
method_name (int m)
{
  switch (m)
    {
    case EVHTTP_REQ_GET:
      return "get";
    case EVHTTP_REQ_POST:
      return "post";
    case EVHTTP_REQ_PUT:
      return "put";
    case EVHTTP_REQ_DELETE:
      return "delete";
    default:
      return "patch";
    }
}

/* The JSON Schema of a field of type @t (json_type_null: any).  */
static json_object *
type_schema (json_type t)
{
  static const struct
  {
    json_type t;
    const char *name;
  } names[] = {
    { json_type_int, "integer" }, { json_type_double, "number" }, { json_type_boolean, "boolean" },
    { json_type_string, "string" }, { json_type_array, "array" },  { json_type_object, "object" },
  };
  json_object *s = json_object_new_object ();

  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].t == t)
      json_object_object_add (s, "type", json_object_new_string (names[i].name));
  return s;
}

/* An object of exactly @fields: what srv_body_json refuses (an unknown
   field, a wrong type) the schema refuses too.  */
static json_object *
object_schema (const struct srv_field *fields, const char *nested, const struct srv_field *nested_fields)
{
  json_object *s = json_object_new_object (), *props = json_object_new_object ();

  for (const struct srv_field *f = fields; f->name; f++)
    json_object_object_add (props, f->name,
                            nested && strcmp (f->name, nested) == 0 ? object_schema (nested_fields, NULL, NULL)
                                                                    : type_schema (f->type));
  json_object_object_add (s, "type", json_object_new_string ("object"));
  json_object_object_add (s, "properties", props);
  json_object_object_add (s, "additionalProperties", json_object_new_boolean (false));
  return s;
}

/* A string parameter @name (@len bytes) in the path (required) or the
   query.  */
static json_object *
parameter (const char *name, size_t len, const char *in)
{
  json_object *param = json_object_new_object (), *schema = json_object_new_object ();

  json_object_object_add (param, "name", json_object_new_string_len (name, (int) len));
  json_object_object_add (param, "in", json_object_new_string (in));
  if (strcmp (in, "path") == 0)
    json_object_object_add (param, "required", json_object_new_boolean (true));
  json_object_object_add (schema, "type", json_object_new_string ("string"));
  json_object_object_add (param, "schema", schema);
  return param;
}

/* One operation of @path: its path and query parameters, its token, its
   body.  */
static json_object *
operation (const char *path, const struct srv_route *route, int body)
{
  json_object *op = json_object_new_object (), *params = json_object_new_array (), *resp = json_object_new_object ();
  cleanup_free char *id = rt_strdup_printf ("%s %s", method_name (route->method), path);

  json_object_object_add (op, "operationId", json_object_new_string (id ? id : path));
  for (const char *p = strchr (path, '{'); p; p = strchr (p + 1, '{'))
    {
      const char *end = strchr (p, '}');
      if (end == NULL)
        break;
      json_object_array_add (params, parameter (p + 1, (size_t) (end - p - 1), "path"));
    }
  /* The query parameters the server takes (any other is refused).  */
  for (const struct srv_query_names *q = srv_api_app.queries; q && q->pattern; q++)
    if (q->method == route->method && strcmp (q->pattern, route->pattern) == 0)
      for (const char *n = q->names; *n; n += strspn (n, " "))
        {
          size_t len = strcspn (n, " ");
          json_object_array_add (params, parameter (n, len, "query"));
          n += len;
        }
  json_object_object_add (op, "parameters", params);
  if (route->flags & SRV_NO_AUTH)
    json_object_object_add (op, "security", json_object_new_array ());
  if (body >= 0)
    {
      json_object *rb = json_object_new_object (), *content = json_object_new_object (),
                  *media = json_object_new_object ();
      json_object_object_add (media, "schema",
                              object_schema (bodies[body].fields, bodies[body].nested, bodies[body].nested_fields));
      json_object_object_add (content, "application/json", media);
      json_object_object_add (rb, "content", content);
      json_object_object_add (op, "requestBody", rb);
    }
  {
    json_object *dflt = json_object_new_object ();
    json_object_object_add (dflt, "description", json_object_new_string ("the answer, or {\"error\": …} (docs/API.md)"));
    json_object_object_add (resp, "default", dflt);
  }
  json_object_object_add (op, "responses", resp);
  return op;
}

static void
add_operation (json_object *paths, const char *path, const struct srv_route *route, int body)
{
  json_object *item;

  if (!json_object_object_get_ex (paths, path, &item))
    {
      item = json_object_new_object ();
      json_object_object_add (paths, path, item);
    }
  /* The first route of a method and path wins, as in the server.  */
  if (!json_object_object_get_ex (item, method_name (route->method), NULL))
    json_object_object_add (item, method_name (route->method), operation (path, route, body));
}

/* The bodies entry of @method on @path, or -1.  */
static int
body_of (int method, const char *path)
{
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
    if (bodies[i].method == method && strcmp (bodies[i].path, path) == 0)
      return (int) i;
  return -1;
}

/* True when a route of its own has @path as its pattern.  */
static bool
own_route (int method, const char *path)
{
  for (const struct srv_route *r = srv_api_app.routes; r->pattern; r++)
    if (r->method == method && strcmp (r->pattern, path) == 0)
      return true;
  return false;
}

json_object *
srv_openapi_document (void)
{
  json_object *doc = json_object_new_object (), *info = json_object_new_object (), *paths = json_object_new_object ();
  json_object *comp = json_object_new_object (), *schemes = json_object_new_object (), *bearer = json_object_new_object ();
  json_object *sec = json_object_new_array (), *req = json_object_new_object ();

  json_object_object_add (doc, "openapi", json_object_new_string ("3.1.0"));
  json_object_object_add (info, "title", json_object_new_string ("runtime serve"));
  json_object_object_add (info, "version", json_object_new_string (rt_version ()));
  json_object_object_add (doc, "info", info);
  for (const struct srv_route *r = srv_api_app.routes; r->pattern; r++)
    {
      const char *verb = strstr (r->pattern, "{verb}");
      if (verb == NULL)
        {
          add_operation (paths, r->pattern, r, body_of (r->method, r->pattern));
          continue;
        }
      /* A catch-all of verbs: each documented verb under its own path
         (not one a route of its own answers, as :exec), else the
         catch-all as it is.  */
      bool any = false;
      for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
        if (bodies[i].method == r->method && strncmp (bodies[i].path, r->pattern, (size_t) (verb - r->pattern)) == 0
            && strchr (bodies[i].path + (verb - r->pattern), '/') == NULL && !own_route (r->method, bodies[i].path))
          {
            add_operation (paths, bodies[i].path, r, (int) i);
            any = true;
          }
      if (!any)
        add_operation (paths, r->pattern, r, -1);
    }
  json_object_object_add (doc, "paths", paths);
  json_object_object_add (bearer, "type", json_object_new_string ("http"));
  json_object_object_add (bearer, "scheme", json_object_new_string ("bearer"));
  json_object_object_add (schemes, "token", bearer);
  json_object_object_add (comp, "securitySchemes", schemes);
  json_object_object_add (doc, "components", comp);
  json_object_object_add (req, "token", json_object_new_array ());
  json_object_array_add (sec, req);
  json_object_object_add (doc, "security", sec);
  return doc;
}

void
srv_openapi (struct srv_req *r)
{
  srv_reply_json (r, 200, srv_openapi_document ());
}
