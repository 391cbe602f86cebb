/* secrets.c - `runtime secrets set/ls/rm`: values from stdin only.  */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

/* The value: all of stdin (one trailing newline dropped), or a line typed
   without echo at a terminal.  -1 when there is more than the limit.  */
static ssize_t
read_value (const char *name, char *buf, size_t size)
{
  size_t len = 0;
  ssize_t n;

  if (isatty (0))
    {
      struct termios old, quiet;
      bool echo_off = tcgetattr (0, &old) == 0;
      fprintf (stderr, "Value of %s (not shown): ", name);
      if (echo_off)
        {
          quiet = old;
          quiet.c_lflag &= ~ECHO;
          tcsetattr (0, TCSAFLUSH, &quiet);
        }
      if (fgets (buf, size, stdin) == NULL)
        buf[0] = '\0';
      if (echo_off)
        tcsetattr (0, TCSAFLUSH, &old);
      fputc ('\n', stderr);
      len = strlen (buf);
    }
  else
    while ((n = read (0, buf + len, size - len)) != 0)
      {
        if (n < 0 && errno == EINTR)
          continue;
        if (n < 0)
          return -1;
        len += n;
        if (len == size)
          return -1;
      }
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  if (len > 0 && buf[len - 1] == '\r')
    len--;
  return len;
}

static int
secrets_set (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *placeholder = NULL;
  char buf[RT_MAX_SECRET_VALUE + 2];
  const char *name;
  ssize_t len;
  int code = 1, ret;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  name = a.pos[0];
  /* NAME=value would put the value in shell histories and ps.  */
  if (strchr (name, '='))
    return cli_usage_error ("printf %s \"$VALUE\" | runtime secrets set NAME --host HOST",
                            "the value comes from stdin only, never from the command line");
  len = read_value (name, buf, sizeof buf - 1);
  if (len < 0)
    {
      /* What was read of a value too long is still a secret.  */
      explicit_bzero (buf, sizeof buf);
      return cli_fail ("invalid_request", NULL, "a secret's value is at most 8 KiB");
    }
  ctx = cli_context ();
  if (ctx == NULL)
    {
      explicit_bzero (buf, sizeof buf);
      return 1;
    }
  rt_secret_opts opts = {
    .hosts = cli_opt_list (cmd, &a, "host", NULL),
    .header = cli_opt (cmd, &a, "header"),
    .format = cli_opt (cmd, &a, "format"),
    .in_url = cli_opt (cmd, &a, "in-url") != NULL,
    .rules = cli_opt_list (cmd, &a, "rule", NULL),
  };
  ret = rt_secret_set_opts (ctx, name, buf, len, &opts, &placeholder, &err);
  explicit_bzero (buf, sizeof buf);
  if (ret < 0)
    return cli_lib_fail (err);
  if (a.json)
    printf ("{\"name\":\"%s\",\"placeholder\":\"%s\"}\n", name, placeholder);
  else
    printf ("Stored %s. Sandboxes see %s=%s.\n", name, name, placeholder);
  return 0;
}

static int
list_secrets (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_secret_list_json (ctx, json, err);
}

/* The strings of @o's array @key joined with commas into @buf, or @none.  */
static const char *
joined (json_object *o, const char *key, char *buf, size_t size, const char *none)
{
  json_object *arr;
  size_t used = 0;

  buf[0] = '\0';
  if (json_object_object_get_ex (o, key, &arr) && json_object_is_type (arr, json_type_array))
    for (size_t h = 0; h < json_object_array_length (arr) && used < size; h++)
      used += snprintf (buf + used, size - used, "%s%s", h ? "," : "",
                        json_object_get_string (json_object_array_get_idx (arr, h)));
  return buf[0] ? buf : none;
}

static void
secrets_table (json_object *arr)
{
  printf ("%-20s %-32s %-24s %-20s %s\n", "NAME", "HOSTS", "HEADER", "RULES", "PLACEHOLDER");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i), *v;
      char list[256], rules[512], header[128] = "-";
      if (json_object_object_get_ex (o, "header", &v) && v)
        snprintf (header, sizeof header, "%s: %s", json_object_get_string (v),
                  json_object_get_string (json_object_object_get (o, "format")));
      joined (o, "rules", rules, sizeof rules, "*:/*");
      if (json_object_get_boolean (json_object_object_get (o, "inUrl")))
        snprintf (rules + strlen (rules), sizeof rules - strlen (rules), " +url");
      printf ("%-20s %-32s %-24s %-20s %s\n", json_object_get_string (json_object_object_get (o, "name")),
              joined (o, "hosts", list, sizeof list, "-"), header, rules,
              json_object_get_string (json_object_object_get (o, "placeholder")));
    }
}

static int
secrets_get (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *all = NULL, *one = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (rt_secret_list_json (ctx, &json, &err) < 0)
    return cli_lib_fail (err);
  all = json_tokener_parse (json);
  for (size_t i = 0; all && i < json_object_array_length (all) && one == NULL; i++)
    {
      json_object *o = json_object_array_get_idx (all, i);
      if (strcmp (json_object_get_string (json_object_object_get (o, "name")), a.pos[0]) == 0)
        one = json_object_get (o);
    }
  if (one == NULL)
    return cli_fail ("not_found", "runtime secrets ls lists them", "no secret named '%s'", a.pos[0]);
  if (a.json)
    printf ("%s\n", json_object_to_json_string_ext (one, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  else
    {
      json_object *row = json_object_new_array ();
      json_object_array_add (row, json_object_get (one));
      secrets_table (row);
      json_object_put (row);
    }
  return 0;
}

static int
secrets_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_secrets, secrets_table);
}

static int
secrets_rm (struct cli_command *cmd, int argc, char **argv)
{
  return cli_remove_named (cmd, argc, argv, rt_secret_remove);
}

static const struct cli_opt set_opts[] = {
  { "host", "HOST", "a host name (or *.domain) whose HTTPS requests get the value (1-16)", NULL, true },
  { "header", "NAME",
    "a header to set on every request to those hosts (with --format), and no other header gets the value",
    "none: the placeholder is swapped in Authorization, X-Api-Key, Api-Key, X-Auth-Token or X-Goog-Api-Key only",
    false },
  { "format", "TEXT", "the header's value, with {value} for the secret (with --header)", "none", false },
  { "in-url", NULL, "also swap the placeholder in the request line (path, query), for APIs that take ?key=",
    "headers only: servers quote paths back; a placeholder there is refused", false },
  { "rule", "METHOD:/GLOB", "only requests with this method (or *) and path glob get the value (1-16)",
    "every request to the hosts", true },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt no_opts[] = { { NULL, NULL, NULL, NULL, false } };

static struct cli_command secrets_cmds[] = {
  { "set", secrets_set,
    "Store a secret (value from stdin) bound to hosts; sandboxes see only a placeholder, which the egress proxy "
    "swaps for the value in the credential headers (or sets --header) of HTTPS requests to those hosts, and puts "
    "back where their answers quote the value.",
    "NAME --host HOST [--host HOST]… [--header NAME --format TEXT] [--in-url] [--rule METHOD:/GLOB]…",
    "printf %s \"$DEEPSEEK_API_KEY\" | runtime secrets set DEEPSEEK_API_KEY --host api.deepseek.com", set_opts, false,
    1, 1, NULL },
  { "ls", secrets_ls, "List secrets: name, hosts, header, rules, placeholder (never a value).", "",
    "runtime secrets ls", no_opts, false, 0, 0, NULL },
  { "get", secrets_get, "Show one secret: hosts, header, rules, placeholder (never its value).", "NAME",
    "runtime secrets get DEEPSEEK_API_KEY", no_opts, false, 1, 1, NULL },
  { "rm", secrets_rm, "Forget a secret.", "NAME", "runtime secrets rm DEEPSEEK_API_KEY", no_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_secrets (int argc, char **argv)
{
  return cli_group_dispatch ("secrets", secrets_cmds, argc, argv);
}
