/* image.c - `runtime image …`: build, ls, get, rm, export, import.  */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char *
jstr (json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (o, key, &v) && v ? json_object_get_string (v) : NULL;
}

static void
join (json_object *arr, char *out, size_t size)
{
  size_t n = arr ? json_object_array_length (arr) : 0, used = 0;

  out[0] = '\0';
  for (size_t i = 0; i < n && used < size; i++)
    used += snprintf (out + used, size - used, "%s%s", i ? "," : "", json_object_get_string (json_object_array_get_idx (arr, i)));
  if (n == 0)
    snprintf (out, size, "-");
}

static int
image_build (struct cli_command *cmd, int argc, char **argv)
{
  struct cli_args a;
  rt_context *ctx;
  rt_error *err = NULL;
  char *id = NULL;
  int code = 1;
  rt_build_opts o = { .log_fd = 2 };

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  o.from = cli_opt (cmd, &a, "from");
  o.apt = (char *const *) cli_opt_list (cmd, &a, "apt", NULL);
  o.pip = (char *const *) cli_opt_list (cmd, &a, "pip", NULL);
  o.npm = (char *const *) cli_opt_list (cmd, &a, "npm", NULL);
  o.run = (char *const *) cli_opt_list (cmd, &a, "run", NULL);
  o.files = (char *const *) cli_opt_list (cmd, &a, "file", NULL);
  o.env = (char *const *) cli_opt_list (cmd, &a, "env", NULL);
  o.workdir = cli_opt (cmd, &a, "workdir");
  o.name = cli_opt (cmd, &a, "name") ? cli_opt (cmd, &a, "name") : cli_opt (cmd, &a, "tag");
  o.no_cache = cli_opt (cmd, &a, "no-cache") != NULL;
  o.dir = a.npos > 0 ? a.pos[0] : NULL;
  if (o.workdir && o.workdir[0] != '/')
    {
      cli_usage_error (NULL, "--workdir must be an absolute path, not '%s'", o.workdir);
      goto out;
    }
  if (o.dir && access (o.dir, R_OK | X_OK) < 0)
    {
      cli_fail ("file_not_found", "give a folder holding runtime.json", "cannot read the folder '%s': %s", o.dir,
                strerror (errno));
      goto out;
    }
  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_image_build (ctx, &o, &id, &err) < 0)
    code = cli_lib_fail (err);
  else
    {
      if (a.json)
        printf ("{\"id\":\"%s\"}\n", id);
      else
        printf ("%s\n", id);
      code = 0;
    }
  free (id);
  rt_context_free (ctx);
out:
  cli_args_free (&a);
  return code;
}

static int
image_ls (struct cli_command *cmd, int argc, char **argv)
{
  struct cli_args a;
  rt_context *ctx;
  rt_error *err = NULL;
  char *json = NULL;
  json_object *arr;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_image_list_json (ctx, &json, &err) < 0)
    {
      code = cli_lib_fail (err);
      rt_context_free (ctx);
      goto out;
    }
  if (a.json)
    printf ("%s\n", json);
  else if ((arr = json_tokener_parse (json)))
    {
      /* PRODUCT.md's columns; layers and exact bytes are in --json.  */
      printf ("%-12s %-20s %-7s %-16s %8s %s\n", "ID", "NAME", "VERSION", "TAGS", "MIB", "CREATED");
      for (size_t i = 0; i < json_object_array_length (arr); i++)
        {
          json_object *o = json_object_array_get_idx (arr, i), *v;
          char tags[128];
          join (json_object_object_get_ex (o, "tags", &v) ? v : NULL, tags, sizeof tags);
          printf ("%-12.12s %-20s %-7" PRId64 " %-16s %8.1f %s\n", jstr (o, "id"),
                  jstr (o, "name") ? jstr (o, "name") : "-",
                  json_object_object_get_ex (o, "version", &v) ? json_object_get_int64 (v) : (int64_t) 0, tags,
                  json_object_object_get_ex (o, "sizeBytes", &v) ? json_object_get_int64 (v) / 1048576.0 : 0.0,
                  jstr (o, "created") ? jstr (o, "created") : "-");
        }
      json_object_put (arr);
    }
  code = 0;
  free (json);
  rt_context_free (ctx);
out:
  cli_args_free (&a);
  return code;
}

static int
image_get (struct cli_command *cmd, int argc, char **argv)
{
  struct cli_args a;
  rt_context *ctx;
  rt_error *err = NULL;
  char *json = NULL;
  json_object *o;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_image_get_json (ctx, a.pos[0], &json, &err) < 0)
    code = cli_lib_fail (err);
  else if (a.json)
    {
      printf ("%s\n", json);
      code = 0;
    }
  else if ((o = json_tokener_parse (json)))
    {
      json_object_object_foreach (o, k, v)
      {
        if (json_object_is_type (v, json_type_array))
          {
            printf ("%-10s", k);
            if (json_object_array_length (v) == 0)
              printf (" -");
            for (size_t i = 0; i < json_object_array_length (v); i++)
              printf ("%s%s\n", i ? "           " : " ", json_object_get_string (json_object_array_get_idx (v, i)));
            if (json_object_array_length (v) == 0)
              printf ("\n");
          }
        else
          printf ("%-10s %s\n", k, v ? json_object_get_string (v) : "-");
      }
      json_object_put (o);
      code = 0;
    }
  free (json);
  rt_context_free (ctx);
out:
  cli_args_free (&a);
  return code;
}

/* On stderr: which version an import made and whether it took latest,
   or that the image was there already.  */
static void
import_note (rt_context *ctx, const char *id, bool already)
{
  rt_error *err = NULL;
  char *json = NULL;
  json_object *o, *tags;
  char joined[128];
  bool latest = false;

  if (rt_image_get_json (ctx, id, &json, &err) < 0)
    {
      rt_error_free (err);
      return;
    }
  if ((o = json_tokener_parse (json)))
    {
      if (!json_object_object_get_ex (o, "tags", &tags))
        tags = NULL;
      join (tags, joined, sizeof joined);
      for (size_t i = 0; tags && i < json_object_array_length (tags); i++)
        latest |= strcmp (json_object_get_string (json_object_array_get_idx (tags, i)), "latest") == 0;
      if (already)
        fprintf (stderr, "runtime: already in the store as %s@%s (tags: %s); nothing changed\n", jstr (o, "name"),
                 jstr (o, "version"), joined);
      else
        fprintf (stderr, "runtime: imported as %s@%s (tags: %s)%s\n", jstr (o, "name"), jstr (o, "version"), joined,
                 latest ? "" : "; latest stays on a newer version");
      json_object_put (o);
    }
  free (json);
}

enum ref_action
{
  ACT_RM,
  ACT_EXPORT,
  ACT_IMPORT,
};

/* rm REF, export REF FILE, import FILE: one call, one line (or object).  */
static int
image_ref_action (struct cli_command *cmd, int argc, char **argv, enum ref_action act)
{
  static const char *const keys[] = { "removed", "file", "id" };
  struct cli_args a;
  rt_context *ctx;
  rt_error *err = NULL;
  char *id = NULL;
  const char *shown;
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (act == ACT_RM)
    ret = rt_image_remove (ctx, a.pos[0], &err);
  else if (act == ACT_EXPORT)
    ret = rt_image_export (ctx, a.pos[0], a.pos[1], &err);
  else
    ret = rt_image_import (ctx, a.pos[0], &id, &err);
  if (ret < 0)
    code = cli_lib_fail (err);
  else
    {
      if (act == ACT_IMPORT)
        import_note (ctx, id, ret == 1);
      shown = act == ACT_RM ? a.pos[0] : act == ACT_EXPORT ? a.pos[1] : id;
      if (a.json)
        {
          json_object *o = json_object_new_object ();
          json_object_object_add (o, keys[act], json_object_new_string (shown));
          printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
          json_object_put (o);
        }
      else
        printf ("%s\n", shown);
      code = 0;
    }
  free (id);
  rt_context_free (ctx);
out:
  cli_args_free (&a);
  return code;
}

static int
image_rm (struct cli_command *cmd, int argc, char **argv)
{
  return image_ref_action (cmd, argc, argv, ACT_RM);
}

static int
image_export (struct cli_command *cmd, int argc, char **argv)
{
  return image_ref_action (cmd, argc, argv, ACT_EXPORT);
}

static int
image_import (struct cli_command *cmd, int argc, char **argv)
{
  return image_ref_action (cmd, argc, argv, ACT_IMPORT);
}

static const struct cli_opt build_opts[] = {
  { "from", "REF", "the image to start from", "runtime", false },
  { "apt", "PKG", "a Debian package (reaches only Debian's archive)", NULL, true },
  { "pip", "PKG", "a Python package (reaches only PyPI)", NULL, true },
  { "npm", "PKG", "an npm package, installed globally (reaches only the npm registry; needs Node.js)", NULL, true },
  { "run", "CMD", "a shell command run as root, with no network", NULL, true },
  { "file", "SRC:DST", "a host file or folder put at DST (absolute; DST/ keeps the name)", NULL, true },
  { "env", "K=V", "a variable of the image's environment", NULL, true },
  { "workdir", "DIR", "the image's working directory", "the base's", false },
  { "name", "NAME[:TAG]", "the image's name (each build is its next version)", "image", false },
  { "tag", "NAME[:TAG]", "the same as --name (also -t)", "image", false },
  { "no-cache", NULL, "run every step even when its layer is cached", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt no_opts[] = { { NULL, NULL, NULL, NULL, false } };

static struct cli_command image_cmds[] = {
  { "build", image_build,
    "Build an image, one cached layer per step (files, apt, pip, npm, then run); print its id.",
    "[DIR] [options]", "runtime image build --apt jq --pip requests --name tools", build_opts, false, 0, 1, NULL },
  { "ls", image_ls, "List images, every version.", "", "runtime image ls", no_opts, false, 0, 0, NULL },
  { "get", image_get, "Show one image: layers, env, workdir, the steps that made it.", "REF",
    "runtime image get tools:latest", no_opts, false, 1, 1, NULL },
  { "rm", image_rm, "Remove an image version (not while a live sandbox runs it).", "REF", "runtime image rm tools@1",
    no_opts, false, 1, 1, NULL },
  { "export", image_export, "Write an image to a portable tar (manifest and layers).", "REF FILE.tar",
    "runtime image export tools tools.tar", no_opts, false, 2, 2, NULL },
  { "import", image_import, "Add an exported image; every digest is checked.", "FILE.tar",
    "runtime image import tools.tar", no_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cmd_image (int argc, char **argv)
{
  /* -t is docker's spelling.  */
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "-t") == 0)
      argv[i] = (char *) "--tag";
  return cli_group_dispatch ("image", image_cmds, argc, argv);
}
