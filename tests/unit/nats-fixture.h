/* nats-fixture.h - three nats-servers clustered on loopback for a test
   (tests/fixtures/nats-cluster.sh, its path given by the test's first
   argument): started under @dir, their client URLs returned
   comma-separated; server K's pid in @dir/pid.K, its monitoring port in
   @dir/mon.K.  */
#ifndef RT_TESTS_NATS_FIXTURE_H
#define RT_TESTS_NATS_FIXTURE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cluster/seal.h"

static inline void
nats_fixture_stop (const char *fixture, const char *dir)
{
  char cmd[600];
  snprintf (cmd, sizeof cmd, "%s stop %s", fixture, dir);
  if (system (cmd) != 0)
    fprintf (stderr, "# could not stop the cluster\n");
}

static inline char *
nats_fixture_start (const char *fixture, const char *dir)
{
  char cmd[600], *urls = malloc (4096);
  FILE *p;

  snprintf (cmd, sizeof cmd, "%s start %s 3", fixture, dir);
  p = popen (cmd, "r");
  if (p == NULL || urls == NULL || fgets (urls, 4096, p) == NULL)
    {
      free (urls);
      if (p)
        pclose (p);
      return NULL;
    }
  pclose (p);
  urls[strcspn (urls, "\n")] = '\0';
  return urls;
}

/* The end of a test of a replica: its @log shown when a check @failed,
   the test's @top dir removed.  */
static inline void
nats_fixture_done (bool failed, const char *log, const char *top)
{
  char cmd[600];

  snprintf (cmd, sizeof cmd, "sed 's/^/# /' %s", log);
  if (failed && system (cmd) != 0)
    fprintf (stderr, "# no log\n");
  snprintf (cmd, sizeof cmd, "rm -rf %s", top);
  if (system (cmd) != 0)
    fprintf (stderr, "# could not remove %s\n", top);
}

/* A cluster key (cluster/seal.h) made at @path (mode 0600), derived into
   @k, and named to the nodes and replicas this test starts by their
   variables.  0, or -1.  */
static inline int
nats_fixture_key (const char *path, struct rt_seal_key *k)
{
  unsigned char raw[RT_SEAL_KEY_LEN];
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && getrandom (raw, sizeof raw, 0) == sizeof raw && write (fd, raw, sizeof raw) == sizeof raw;

  if (fd >= 0)
    close (fd);
  if (!ok)
    return -1;
  rt_seal_key_derive (raw, k);
  setenv ("RUNTIME_NODE_CLUSTER_KEY", path, 1);
  setenv ("RUNTIME_SERVE_CLUSTER_KEY", path, 1);
  return 0;
}

/* The number in @dir/@file, or 0.  */
static inline int
nats_fixture_read_int (const char *dir, const char *file)
{
  char path[400];
  int v = 0;
  FILE *f;

  snprintf (path, sizeof path, "%s/%s", dir, file);
  f = fopen (path, "r");
  if (f && fscanf (f, "%d", &v) != 1)
    v = 0;
  if (f)
    fclose (f);
  return v;
}

#endif
