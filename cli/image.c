/* image.c - `runtime image …`: build, ls, get, rm, export, import, warm.  */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

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

/* One line for a template rt_image_warm described: its key, shape and
   how long it took to make.  */
static void
warm_summary (FILE *out, json_object *t)
{
  json_object *v;
  double secs = json_object_object_get_ex (t, "makeMs", &v) ? json_object_get_int64 (v) / 1000.0 : 0;
  bool fresh = json_object_object_get_ex (t, "fresh", &v) && json_object_get_boolean (v);

  fprintf (out, "template %.12s of %.12s: %d vCPU, %d MiB, %s in %.1f s\n", cli_jstr (t, "key"), cli_jstr (t, "imageId"),
           json_object_object_get_ex (t, "vcpu", &v) ? json_object_get_int (v) : 0,
           json_object_object_get_ex (t, "memoryMiB", &v) ? json_object_get_int (v) : 0,
           fresh ? "made" : "there already, made", secs);
}

/* image build --warm: the new image's template for the default shape.
   The image stays when warming fails; the error says so.  */
static int
build_warm (rt_context *ctx, const char *id, bool json)
{
  rt_error *err = NULL;
  cleanup_free char *out = NULL;
  cleanup_json json_object *t = NULL, *o = NULL;

  if (rt_image_warm (ctx, id, 0, 0, &out, &err) < 0)
    {
      char hint[160];
      snprintf (hint, sizeof hint, "the image %.12s was built; runtime image warm %.12s makes its template", id, id);
      free (err->hint);
      err->hint = strdup (hint);
      return cli_lib_fail (err);
    }
  t = json_tokener_parse (out);
  if (json)
    {
      o = json_object_new_object ();
      json_object_object_add (o, "id", json_object_new_string (id));
      json_object_object_add (o, "template", json_object_get (t));
      printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
      return 0;
    }
  if (t)
    warm_summary (stderr, t);
  printf ("%s\n", id);
  return 0;
}

static int
image_build (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *id = NULL;
  int code = 1, ret;
  rt_build_opts o = { .log_fd = 2, .cancel_fd = -1 };
  sigset_t mask;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  o.from = cli_opt (cmd, &a, "from");
  o.apt = cli_opt_list (cmd, &a, "apt", NULL);
  o.pip = cli_opt_list (cmd, &a, "pip", NULL);
  o.npm = cli_opt_list (cmd, &a, "npm", NULL);
  o.run = cli_opt_list (cmd, &a, "run", NULL);
  o.files = cli_opt_list (cmd, &a, "file", NULL);
  o.env = cli_opt_list (cmd, &a, "env", NULL);
  o.workdir = cli_opt (cmd, &a, "workdir");
  o.name = cli_opt (cmd, &a, "name") ? cli_opt (cmd, &a, "name") : cli_opt (cmd, &a, "tag");
  o.no_cache = cli_opt (cmd, &a, "no-cache") != NULL;
  o.apt_mirror = cli_opt (cmd, &a, "apt-mirror");
  o.dir = a.npos > 0 ? a.pos[0] : NULL;
  if (o.workdir && o.workdir[0] != '/')
    return cli_usage_error (NULL, "--workdir must be an absolute path, not '%s'", o.workdir);
  if (o.dir && access (o.dir, R_OK | X_OK) < 0)
    return cli_fail ("file_not_found", "give a folder holding runtime.json", "cannot read the folder '%s': %s", o.dir,
                     strerror (errno));
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (cli_opt (cmd, &a, "quiet"))
    {
      o.log_fd = -1;
      rt_context_set_progress (ctx, NULL, NULL);
    }
  /* Ctrl-C, SIGTERM and SIGHUP stop the build through the library (it
     watches the signalfd), which removes its sandbox and unfinished layer
     first: as `run`, they must not kill us half-way (nor a closed stderr
     pipe).  */
  cli_block_stop_signals (&mask);
  o.cancel_fd = signalfd (-1, &mask, SFD_CLOEXEC);
  signal (SIGPIPE, SIG_IGN);
  ret = rt_image_build (ctx, &o, &id, &err);
  if (o.cancel_fd >= 0)
    close (o.cancel_fd);
  if (ret < 0 && strcmp (err->code, "interrupted") == 0 && !a.json)
    {
      fprintf (stderr, "runtime: interrupted; %s\n", err->msg);
      rt_error_free (err);
      return 130;
    }
  if (ret < 0)
    return strcmp (err->code, "interrupted") == 0 ? (cli_lib_fail (err), 130) : cli_lib_fail (err);
  if (cli_opt (cmd, &a, "warm"))
    return build_warm (ctx, id, a.json);
  printf (a.json ? "{\"id\":\"%s\"}\n" : "%s\n", id);
  return 0;
}

static int
list_images (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_image_list_json (ctx, json, err);
}

static void
images_table (json_object *arr)
{
  /* What a person picks an image by; layers and exact bytes are in --json.  */
  printf ("%-12s %-20s %-7s %-16s %8s %s\n", "ID", "NAME", "VERSION", "TAGS", "MIB", "CREATED");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i), *v;
      char tags[128];
      join (json_object_object_get_ex (o, "tags", &v) ? v : NULL, tags, sizeof tags);
      printf ("%-12.12s %-20s %-7" PRId64 " %-16s %8.1f %s\n", cli_jstr (o, "id"), cli_jstr (o, "name") ? cli_jstr (o, "name") : "-",
              json_object_object_get_ex (o, "version", &v) ? json_object_get_int64 (v) : (int64_t) 0, tags,
              json_object_object_get_ex (o, "sizeBytes", &v) ? json_object_get_int64 (v) / 1048576.0 : 0.0,
              cli_jstr (o, "created") ? cli_jstr (o, "created") : "-");
    }
}

static int
image_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_images, images_table);
}

static int
get_image (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  return rt_image_get_json (ctx, a->pos[0], json, err);
}

/* KEY VALUE, one per line; a list's items under each other.  */
static void
image_table (json_object *o)
{
  json_object_object_foreach (o, k, v)
  {
    if (json_object_is_type (v, json_type_array))
      {
        printf ("%-10s", k);
        if (json_object_array_length (v) == 0)
          printf (" -\n");
        for (size_t i = 0; i < json_object_array_length (v); i++)
          printf ("%s%s\n", i ? "           " : " ", json_object_get_string (json_object_array_get_idx (v, i)));
      }
    else
      printf ("%-10s %s\n", k, v ? json_object_get_string (v) : "-");
  }
}

static int
image_get (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, get_image, image_table);
}

/* On stderr: which version an import made and whether it took latest,
   or that the image was there already.  */
static void
import_note (rt_context *ctx, const char *id, bool already)
{
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  json_object *tags;
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
        fprintf (stderr, "runtime: already in the store as %s@%s (tags: %s); nothing changed\n", cli_jstr (o, "name"),
                 cli_jstr (o, "version"), joined);
      else
        fprintf (stderr, "runtime: imported as %s@%s (tags: %s)%s\n", cli_jstr (o, "name"), cli_jstr (o, "version"),
                 joined, latest ? "" : "; latest stays on a newer version");
    }
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
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *id = NULL;
  const char *shown;
  int ret, code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (act == ACT_RM)
    ret = rt_image_remove (ctx, a.pos[0], &err);
  else if (act == ACT_EXPORT)
    ret = rt_image_export (ctx, a.pos[0], a.pos[1], &err);
  else
    ret = rt_image_import (ctx, a.pos[0], &id, &err);
  if (ret < 0)
    return cli_lib_fail (err);
  if (act == ACT_IMPORT)
    import_note (ctx, id, ret == 1);
  shown = act == ACT_RM ? a.pos[0] : act == ACT_EXPORT ? a.pos[1] : id;
  if (a.json)
    {
      cleanup_json json_object *o = json_object_new_object ();
      json_object_object_add (o, keys[act], json_object_new_string (shown));
      printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
    }
  else
    printf ("%s\n", shown);
  return 0;
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

static int
image_warm (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_free char *out = NULL;
  cleanup_json json_object *t = NULL;
  rt_error *err = NULL;
  unsigned long vcpu = 0, mem = 0;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "vcpu", 1, RT_MAX_VCPU, &vcpu) < 0
      || cli_opt_mib (cmd, &a, "memory", RT_MIN_MEMORY_MIB, RT_MAX_MEMORY_MIB, &mem) < 0)
    return 1;
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_image_warm (ctx, a.npos > 0 ? a.pos[0] : NULL, vcpu, mem, &out, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    printf ("%s\n", out);
  else if ((t = json_tokener_parse (out)))
    warm_summary (stdout, t);
  return 0;
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
  { "apt-mirror", "URL", "the Debian mirror apt steps use and reach", "the default image's", false },
  { "warm", NULL, "then make its template (image warm) for the default shape", NULL, false },
  { "quiet", NULL, "no progress or step output on stderr (errors still print); only the id", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt warm_opts[] = {
  { "vcpu", "N", "the shape's virtual CPUs (1-16)", "2", false },
  { "memory", "SIZE", "the shape's memory, MiB or 512m, 4g (256m-64g)", "4096", false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command image_cmds[] = {
  { "build", image_build,
    "Build an image, one cached layer per step (files, apt, pip, npm, then run); print its id.",
    "[DIR] [options]", "runtime image build --apt jq --pip requests --name tools", build_opts, false, 0, 1, NULL },
  { "ls", image_ls, "List images, every version.", "", "runtime image ls", cli_no_opts, false, 0, 0, NULL },
  { "get", image_get, "Show one image: layers, env, workdir, the steps that made it.", "REF",
    "runtime image get tools:latest", cli_no_opts, false, 1, 1, NULL },
  { "rm", image_rm, "Remove an image version and its templates (not while a live sandbox runs it).", "REF", "runtime image rm tools@1",
    cli_no_opts, false, 1, 1, NULL },
  { "export", image_export, "Write an image to a portable tar (manifest and layers).", "REF FILE.tar",
    "runtime image export tools tools.tar", cli_no_opts, false, 2, 2, NULL },
  { "import", image_import, "Add an exported image; every digest is checked.", "FILE.tar",
    "runtime image import tools.tar", cli_no_opts, false, 1, 1, NULL },
  { "warm", image_warm,
    "Make the template sandboxes of this image and shape start from (saved memory, not a boot); print it.",
    "[REF] [options]", "runtime image warm tools --vcpu 2 --memory 4096", warm_opts, false, 0, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_image (int argc, char **argv)
{
  /* -t is docker's spelling.  */
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "-t") == 0)
      argv[i] = (char *) "--tag";
  return cli_group_dispatch ("image", image_cmds, argc, argv);
}
