/* doctor.c - `runtime doctor [--json]`: what this host gives sandboxes,
   for a bug report; runs as any user, boots and fetches nothing.  */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static json_object *
get (json_object *o, const char *key)
{
  json_object *v = NULL;
  return o && json_object_object_get_ex (o, key, &v) ? v : NULL;
}

/* @key of @o as text, "unknown" when null.  */
static const char *
text (json_object *o, const char *key)
{
  json_object *v = get (o, key);
  return v ? json_object_get_string (v) : "unknown";
}

/* Bytes as a person reads them: 1.2 GiB, 340 MiB, 12 KiB.  */
static void
print_size (const char *label, json_object *dir)
{
  json_object *b = get (dir, "bytes");
  double v = b ? (double) json_object_get_int64 (b) : 0;
  const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  size_t u = 0;

  while (v >= 1024 && u + 1 < sizeof units / sizeof *units)
    v /= 1024, u++;
  if (b == NULL)
    printf ("  %-12s unreadable   %s\n", label, text (dir, "path"));
  else
    printf ("  %-12s %7.1f %-4s %s\n", label, v, units[u], text (dir, "path"));
}

static void
print_report (json_object *o)
{
  json_object *caller = get (o, "caller"), *accel = get (o, "accelerator"), *caches = get (o, "caches");
  json_object *img = get (o, "defaultImage"), *trial = get (o, "trial"), *jail = get (o, "jail");
  json_object *host = get (o, "host"), *shape = get (host, "defaultShape"), *unread = get (o, "unreadable");
  const char *names[][2]
      = { { "kernel", "kernel" },       { "baseRootfs", "base rootfs" }, { "bootDisks", "boot disks" },
          { "overlays", "overlays" },   { "templates", "templates" },    { "images", "images" },
          { "snapshots", "snapshots" }, { "sandboxes", "sandboxes" } };

  printf ("runtime %s (%s mode%s%s)\n", text (o, "version"), text (o, "mode"), get (o, "apiUrl") ? ", " : "",
          get (o, "apiUrl") ? text (o, "apiUrl") : "");
  printf ("caller:       uid %s, %s sandboxes: %s\n", text (caller, "uid"),
          json_object_get_boolean (get (caller, "canManage")) ? "may manage" : "may not manage", text (caller, "why"));
  printf ("accelerator:  %s: %s\n", text (accel, "name"), text (accel, "why"));
  printf ("QEMU:         %s (%s)\n", text (get (o, "qemu"), "version"), text (get (o, "qemu"), "path"));
  printf ("kernel:       host %s, guest %s\n", text (get (o, "kernel"), "host"), text (get (o, "kernel"), "guest"));
  if (get (img, "built") == NULL)
    printf ("image:        default %s, unknown\n", text (img, "name"));
  else if (json_object_get_boolean (get (img, "built")))
    printf ("image:        default %s, built, id %s\n", text (img, "name"), text (img, "id"));
  else
    printf ("image:        default %s, not built yet (the first sandbox builds it)\n", text (img, "name"));
  printf ("trial:        %s hours left, %s trial sandboxes running\n", text (trial, "hoursLeft"),
          text (trial, "running"));
  printf ("jail:         %s, uids %s (%s, %s in use), cgroup %s\n",
          json_object_get_boolean (get (jail, "on")) ? "on" : "OFF", text (jail, "uidRange"), text (jail, "uids"),
          text (jail, "uidsInUse"), text (jail, "cgroup"));
  printf ("host:         %s CPUs, %s of %s MiB memory available, %s MiB disk free; default shape %s vCPU, %s MiB, "
          "%s MiB disk: %s\n",
          text (host, "cpus"), text (host, "memoryAvailableMiB"), text (host, "memoryTotalMiB"),
          text (host, "diskFreeMiB"), text (shape, "vcpu"), text (shape, "memoryMiB"), text (shape, "diskMiB"),
          json_object_get_boolean (get (host, "fitsDefaultShape")) ? "fits" : "does NOT fit");
  printf ("caches and stores:\n");
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    print_size (names[i][1], get (caches, names[i][0]));
  printf ("  %-12s %s\n", "spares", text (caches, "spares"));
  for (size_t i = 0; unread && i < json_object_array_length (unread); i++)
    printf ("%s %s\n",
            i ? "             " : "unreadable:  ", json_object_get_string (json_object_array_get_idx (unread, i)));
}

static int
doctor_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  rt_error *err = NULL;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  /* Not cli_context: the report is for callers that may not manage
     sandboxes too (it says so itself).  */
  if (rt_context_new (&ctx, &err) < 0 || rt_doctor_json (ctx, &json, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      printf ("%s\n", json);
      return 0;
    }
  if ((o = json_tokener_parse (json)) == NULL)
    return cli_fail ("internal", NULL, "the library returned unreadable JSON");
  print_report (o);
  return 0;
}

static struct cli_command doctor_cmd = {
  "doctor", doctor_run,
  "What this host gives sandboxes, to paste into a bug report: runtime's version, whether the caller may manage "
  "sandboxes, the accelerator and why, the versions of QEMU and of the host's and guest's kernels, the default "
  "image, trial hours left, the jail (uid range, cgroup version), free memory and disk against the default shape, "
  "and what the caches and stores hold. Runs as any user; boots, fetches and changes nothing.",
  "[--json]", "runtime doctor --json", cli_no_opts, false, 0, 0, "",
};

int
cli_cmd_doctor (int argc, char **argv)
{
  return cli_run_single (&doctor_cmd, argc, argv);
}
