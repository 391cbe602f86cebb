/* jail-files.c - QEMU's files in its jail (jail-files.h).  */
#include <elf.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/jail-files.h"

#define TCG_MODULE "accel-tcg-x86_64.so"
#define FIRMWARE "bios-microvm.bin"

/* The ELF interpreter (PT_INTERP) of @path into @buf, or -1.  */
static int
elf_interp (const char *path, char *buf, size_t size)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  Elf64_Ehdr eh;

  if (fd < 0 || pread (fd, &eh, sizeof eh, 0) != (ssize_t) sizeof eh || memcmp (eh.e_ident, ELFMAG, SELFMAG) != 0
      || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof (Elf64_Phdr))
    return -1;
  for (unsigned i = 0; i < eh.e_phnum; i++)
    {
      Elf64_Phdr ph;
      if (pread (fd, &ph, sizeof ph, (off_t) (eh.e_phoff + i * sizeof ph)) != (ssize_t) sizeof ph)
        return -1;
      if (ph.p_type != PT_INTERP)
        continue;
      if (ph.p_filesz == 0 || ph.p_filesz > size
          || pread (fd, buf, ph.p_filesz, (off_t) ph.p_offset) != (ssize_t) ph.p_filesz)
        return -1;
      buf[ph.p_filesz - 1] = '\0';
      return 0;
    }
  return -1;
}

/* Appends to @out the libraries the loader @interp maps for @path, one
   path a line.  */
static int
list_libs (const char *interp, const char *path, char **out, rt_error **err)
{
  char *argv[] = { (char *) interp, (char *) "--list", (char *) path, NULL };
  cleanup_free char *text = NULL;
  char *save = NULL;
  int rc = rt_run_capture (argv, &text, err);

  if (rc < 0)
    return rc;
  if (rc != 0)
    return rt_error_set (err, EIO, "startup_failed", "the jail could not be set up: %s --list %s: %s", interp, path,
                         text ? text : "");
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char *lib = strstr (line, "=> "), *end;
      char *joined;
      lib = lib ? lib + 3 : line + strspn (line, " \t");
      if (strncmp (lib, "not found", 9) == 0)
        return rt_error_set (err, ENOENT, "startup_failed", "the jail could not be set up: %s needs %s", path, line);
      if (*lib != '/')
        continue; /* the vDSO */
      end = strstr (lib, " (");
      if (end)
        *end = '\0';
      joined = rt_strdup_printf ("%s%s\n", *out ? *out : "", lib);
      if (joined == NULL)
        return rt_error_oom (err);
      free (*out);
      *out = joined;
    }
  return 0;
}

/* "dev:ino:size:mtime" of @path (or "-" when missing) appended to @key.  */
static void
add_key (char *key, size_t size, const char *path)
{
  struct stat st;
  size_t len = strlen (key);

  if (path && stat (path, &st) == 0)
    snprintf (key + len, size - len, "%lu:%lu:%lld:%lld.%09ld ", (unsigned long) st.st_dev, (unsigned long) st.st_ino,
              (long long) st.st_size, (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  else
    snprintf (key + len, size - len, "- ");
}

/* The libraries of @qemu and @module, one path a line: from the cache
   when its key still matches, else from the loader (then cached).  */
static int
qemu_libs (rt_context *ctx, const char *qemu, const char *module, char **out, rt_error **err)
{
  cleanup_free char *cache = rt_strdup_printf ("%s/qemu-libs", ctx->cache_dir);
  cleanup_free char *cached = NULL, *libs = NULL, *data = NULL;
  char key[256] = "", interp[PATH_MAX];
  int ret;

  if (cache == NULL)
    return rt_error_oom (err);
  add_key (key, sizeof key, qemu);
  add_key (key, sizeof key, module);
  if (rt_read_file (cache, &cached, NULL, NULL) == 0 && strncmp (cached, key, strlen (key)) == 0
      && cached[strlen (key)] == '\n')
    {
      *out = strdup (cached + strlen (key) + 1);
      return *out ? 0 : rt_error_oom (err);
    }
  if (elf_interp (qemu, interp, sizeof interp) < 0)
    return rt_error_set (err, ENOEXEC, "startup_failed", "the jail could not be set up: no ELF interpreter in %s",
                         qemu);
  ret = list_libs (interp, qemu, &libs, err);
  if (ret == 0 && module)
    ret = list_libs (interp, module, &libs, err);
  if (ret < 0)
    return ret;
  data = rt_strdup_printf ("%s\n%s", key, libs ? libs : "");
  if (data && rt_mkdir_p (ctx->cache_dir, 0755, NULL) == 0)
    rt_write_file_atomic (cache, data, strlen (data), 0644, NULL);
  *out = libs ? steal_pointer (&libs) : strdup ("");
  return *out ? 0 : rt_error_oom (err);
}

/* The real path of "@dir/@rel" into @buf when it exists.  */
static bool
find (const char *dir, const char *rel, char *buf)
{
  cleanup_free char *p = rt_strdup_printf ("%s/%s", dir, rel);

  return p && realpath (p, buf) != NULL;
}

/* The binds of every line of @libs; a library both lists name is bound
   once.  */
static int
bind_libs (struct rt_jail *j, char *libs, rt_error **err)
{
  char *save = NULL;

  for (char *lib = strtok_r (libs, "\n", &save); lib; lib = strtok_r (NULL, "\n", &save))
    {
      bool seen = false;
      for (size_t i = 0; i < j->n_binds && !seen; i++)
        seen = strcmp (j->binds[i].dst + strlen (j->root), lib) == 0;
      if (!seen && rt_jail_bind (j, lib, lib, RT_JAIL_RO, false, err) < 0)
        return -1;
    }
  return 0;
}

int
rt_jail_bind_qemu (rt_context *ctx, struct rt_jail *j, char **qemu, rt_error **err)
{
  char bin[PATH_MAX], bindir[PATH_MAX], moddir[PATH_MAX], module[PATH_MAX], fw[PATH_MAX], fwdir[PATH_MAX];
  cleanup_free char *libs = NULL, *fw_path = NULL;
  bool have_moddir, have_module;
  int ret;

  if (realpath (ctx->qemu, bin) == NULL)
    return rt_error_set (err, errno, "startup_failed", "cannot resolve '%s': %s", ctx->qemu, strerror (errno));
  snprintf (bindir, sizeof bindir, "%s", bin);
  dirname (bindir);
  /* QEMU looks for its modules and firmware next to its binary first,
     then where it was built to.  */
  have_moddir
      = find (bindir, "../lib/x86_64-linux-gnu/qemu", moddir) || find ("/usr/lib/x86_64-linux-gnu", "qemu", moddir);
  have_module = have_moddir && find (moddir, TCG_MODULE, module);
  if (!find (bindir, "../share/qemu/" FIRMWARE, fw) || !find (bindir, "../share/qemu", fwdir))
    {
      if (!find ("/usr/share/qemu", FIRMWARE, fw))
        return rt_error_set (err, ENOENT, "startup_failed", "the jail could not be set up: no %s for QEMU", FIRMWARE);
      snprintf (fwdir, sizeof fwdir, "/usr/share/qemu");
    }
  fw_path = rt_strdup_printf ("%s/" FIRMWARE, fwdir);
  *qemu = strdup (bin);
  if (fw_path == NULL || *qemu == NULL)
    return rt_error_oom (err);
  ret = qemu_libs (ctx, bin, have_module ? module : NULL, &libs, err);
  if (ret < 0)
    return ret;
  if (rt_jail_bind (j, bin, bin, RT_JAIL_RO, false, err) < 0 || bind_libs (j, libs, err) < 0
      || (access ("/etc/ld.so.cache", R_OK) == 0
          && rt_jail_bind (j, "/etc/ld.so.cache", "/etc/ld.so.cache", RT_JAIL_RO_DATA, false, err) < 0)
      || (have_moddir && rt_jail_bind (j, moddir, moddir, RT_JAIL_RO, true, err) < 0)
      || rt_jail_bind (j, fw, fw_path, RT_JAIL_RO_DATA, false, err) < 0)
    return -1;
  return 0;
}
