/* test-options.c - the CLI's option parser and did-you-mean.  */
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "tap.h"

static int
noop (struct cli_command *cmd, int argc, char **argv)
{
  (void) cmd;
  (void) argc;
  (void) argv;
  return 0;
}

static const struct cli_opt opts[] = {
  { "timeout", "S", "t", NULL, false },
  { "memory", "MiB", "m", NULL, false },
  { "label", "K=V", "l", NULL, true },
  { "keep", NULL, "k", NULL, false },
  { "all", NULL, "a", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command run = { "run", noop, "s", "[options] -- CMD", NULL, opts, true, 0, 0, "sandbox" };
static struct cli_command get = { "get", noop, "s", "ID", NULL, opts, false, 1, 1, "sandbox" };

static int
parse (struct cli_command *cmd, struct cli_args *a, int argc, const char **argv)
{
  return cli_parse (cmd, argc, (char **) argv, a);
}

int
main (void)
{
  struct cli_args a;
  const char *const words[] = { "timeout", "memory", "label", "keep", "json", "help", NULL };
  const char *const groups[] = { "sandbox", "image", "secrets", "usage", "chat", NULL };

  ok (strcmp (cli_suggest ("memory-mib", words), "memory") == 0, "memory-mib suggests memory (prefix)");
  ok (strcmp (cli_suggest ("mem", words), "memory") == 0, "mem suggests memory (prefix)");
  ok (strcmp (cli_suggest ("timout", words), "timeout") == 0, "timout suggests timeout (distance 1)");
  ok (strcmp (cli_suggest ("tmieout", words), "timeout") == 0, "tmieout suggests timeout (distance 2, long word)");
  ok (cli_suggest ("kepp", words) != NULL && strcmp (cli_suggest ("kepp", words), "keep") == 0, "kepp suggests keep");
  ok (cli_suggest ("kxxp", words) == NULL, "kxxp: distance 2 on a short word suggests nothing");
  ok (cli_suggest ("zzzzzz", words) == NULL, "nonsense suggests nothing");
  ok (strcmp (cli_suggest ("sandbx", groups), "sandbox") == 0, "sandbx suggests sandbox");
  ok (strcmp (cli_suggest ("rnu", (const char *const[]){ "run", "exec", NULL }), "run") == 0,
      "a transposition is one slip: rnu suggests run");
  ok (cli_suggest ("rxx", (const char *const[]){ "run", NULL }) == NULL, "rxx is too far from run");

  {
    const char *argv[] = { "run", "--timeout", "5", "--memory=512", "--label", "a=1", "--label", "b=2", "--keep",
                           "--json", "--", "echo", "--timeout", NULL };
    ok (parse (&run, &a, 13, argv) == 0, "full run line parses");
    ok (strcmp (a.val[0], "5") == 0 && strcmp (a.val[1], "512") == 0, "separate and = values");
    ok (a.count[2] == 2 && strcmp (a.multi[2][0], "a=1") == 0 && strcmp (a.multi[2][1], "b=2") == 0,
        "repeatable option keeps every value");
    ok (a.val[3] != NULL && a.json, "flags set");
    ok (a.nrest == 2 && strcmp (a.rest[1], "--timeout") == 0, "everything after -- belongs to the command");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "--memory-mib", "5", "--", "true", NULL };
    ok (parse (&run, &a, 5, argv) < 0, "unknown option refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "python3", "-c", "x", NULL };
    ok (parse (&run, &a, 4, argv) < 0, "command without -- refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "--timeout", "1", NULL };
    ok (parse (&run, &a, 3, argv) < 0, "missing command refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "--timeout", NULL };
    ok (parse (&run, &a, 2, argv) < 0, "option without its value refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "--timeout", "1", "--timeout", "2", "--", "x", NULL };
    ok (parse (&run, &a, 7, argv) < 0, "non-repeatable option given twice refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "run", "--keep=yes", "--", "x", NULL };
    ok (parse (&run, &a, 4, argv) < 0, "a flag with a value refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "get", "sb-1", NULL };
    ok (parse (&get, &a, 2, argv) == 0 && a.npos == 1 && strcmp (a.pos[0], "sb-1") == 0, "positional argument");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "get", NULL };
    ok (parse (&get, &a, 1, argv) < 0, "missing positional refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "get", "a", "b", NULL };
    ok (parse (&get, &a, 3, argv) < 0, "extra positional refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "get", "--", "x", NULL };
    ok (parse (&get, &a, 3, argv) < 0, "-- refused where no command is taken");
    cli_args_free (&a);
  }
  {
    unsigned long v = 0;
    const char *argv[] = { "run", "--timeout", "abc", "--", "x", NULL };
    parse (&run, &a, 5, argv);
    ok (cli_opt_uint (&run, &a, "timeout", 1, 10, &v) < 0, "non-numeric value refused");
    cli_args_free (&a);
    const char *argv2[] = { "run", "--timeout", "11", "--", "x", NULL };
    parse (&run, &a, 5, argv2);
    ok (cli_opt_uint (&run, &a, "timeout", 1, 10, &v) < 0, "out-of-range value refused");
    cli_args_free (&a);
    const char *argv3[] = { "run", "--timeout", "-1", "--", "x", NULL };
    parse (&run, &a, 5, argv3);
    ok (cli_opt_uint (&run, &a, "timeout", 1, 10, &v) < 0, "negative value refused");
    cli_args_free (&a);
    const char *argv4[] = { "run", "--timeout", "7", "--", "x", NULL };
    parse (&run, &a, 5, argv4);
    ok (cli_opt_uint (&run, &a, "timeout", 1, 10, &v) == 0 && v == 7, "in-range value accepted");
    cli_args_free (&a);
  }
  {
    /* Sizes as cp --max-size takes them; a plain number keeps its unit.  */
    uint64_t b = 0;
    unsigned long mib = 0;
    ok (cli_parse_size ("512m", 20, &b) == 0 && b == 512ull << 20, "512m is 512 MiB");
    ok (cli_parse_size ("4g", 20, &b) == 0 && b == 4ull << 30, "4g is 4 GiB");
    ok (cli_parse_size ("4GiB", 20, &b) == 0 && b == 4ull << 30, "4GiB is 4 GiB");
    ok (cli_parse_size ("1024", 20, &b) == 0 && b == 1024ull << 20, "a plain 1024 is MiB where MiB is the unit");
    ok (cli_parse_size ("1024", 0, &b) == 0 && b == 1024, "a plain 1024 is bytes where bytes are");
    ok (cli_parse_size ("3x", 20, &b) < 0 && cli_parse_size ("0", 20, &b) < 0 && cli_parse_size ("-1g", 20, &b) < 0
          && cli_parse_size ("", 20, &b) < 0 && cli_parse_size ("99999999999t", 20, &b) < 0,
        "3x, 0, -1g, an empty size and an overflow refused");
    const char *argv[] = { "run", "--memory", "4g", "--", "x", NULL };
    parse (&run, &a, 5, argv);
    ok (cli_opt_mib (&run, &a, "memory", 256, 65536, &mib) == 0 && mib == 4096, "--memory 4g is 4096 MiB");
    cli_args_free (&a);
    const char *argv2[] = { "run", "--memory", "100g", "--", "x", NULL };
    parse (&run, &a, 5, argv2);
    ok (cli_opt_mib (&run, &a, "memory", 256, 65536, &mib) < 0, "--memory 100g over the most refused");
    cli_args_free (&a);
    const char *argv3[] = { "run", "--memory", "1536k", "--", "x", NULL };
    parse (&run, &a, 5, argv3);
    ok (cli_opt_mib (&run, &a, "memory", 256, 65536, &mib) < 0, "--memory that is not whole MiB refused");
    cli_args_free (&a);
  }
  {
    const char *argv[] = { "get", "-h", NULL };
    /* The help it prints is not TAP: to /dev/null.  */
    int out = dup (1), null = open ("/dev/null", O_WRONLY);
    int ret;

    fflush (stdout);
    dup2 (null, 1);
    ret = parse (&get, &a, 2, argv);
    fflush (stdout);
    dup2 (out, 1);
    close (out);
    close (null);
    ok (ret == 1, "-h is --help");
    cli_args_free (&a);
    const char *argv2[] = { "get", "-a", "sb-1", NULL };
    ok (parse (&get, &a, 3, argv2) == 0 && cli_opt (&get, &a, "all") != NULL, "-a is --all where there is one");
    cli_args_free (&a);
  }
  return tap_done ();
}
