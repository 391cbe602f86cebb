/* layer.h - which entries of a layer may be written, and where: the one
   path-safety scheme for layers.  Extraction onto a boot disk
   (image/extract.c), the check of an untrusted layer at import
   (image/transfer.c) and a build step's changes (image/tar.c) all use it.
   Pure functions over strings: no file is opened, so a fuzzer can call
   them.  */
#ifndef RT_IMAGE_LAYER_H
#define RT_IMAGE_LAYER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime.h"

/* The most the layers of one image may unpack to, tar headers and
   padding included: 4 times the ext4 disk they are made into
   (RT_MIN_DISK_MIB, image/disk.c), room for what upper layers replace or
   delete.  An entry counts its whole size, holes too.  Making a disk
   (image/extract.c), the check of an import (image/transfer.c) and a
   build step's captured changes (build/step.c) stop past it.  */
#define RT_LAYER_MAX_BYTES ((uint64_t) 4 * RT_MIN_DISK_MIB << 20)

/* What the layers of one image unpacked to so far, against a limit.  */
struct rt_layer_budget
{
  uint64_t limit;
  uint64_t used; /* by the layers before the one being read */
};

/* One tar entry, as much of it as the checks need.  */
struct rt_layer_entry
{
  const char *name;     /* as in the tar: "./usr/bin/", "etc/passwd" */
  mode_t type;          /* S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR, S_IFBLK… */
  dev_t rdev;           /* a device node's; a 0:0 character device is
                           overlayfs's whiteout */
  bool opaque;          /* a directory with trusted.overlay.opaque=y */
  const char *hardlink; /* a hard link's target, or NULL */
};

enum rt_layer_verdict
{
  RT_LAYER_WRITE,    /* write it at .path (a hard link to .target) */
  RT_LAYER_ROOT,     /* extraction: it names the root, nothing to write */
  RT_LAYER_WHITEOUT, /* extraction: deletes .path from the layers below */
  RT_LAYER_DEVICE,   /* a device node: extraction drops it (the guest's
                         /dev is a devtmpfs), import refuses it */
  RT_LAYER_BAD_PATH, /* the name is absolute, has a ".." component, or
                         is too long or deep (rt_layer_path_fits) */
  RT_LAYER_BAD_LINK, /* so is the hard link's target */
  RT_LAYER_VIA_LINK, /* import: .via_what is written through the symlink
                         its first .via bytes name */
  RT_LAYER_NO_MEMORY,
};

struct rt_layer_check
{
  char *path;           /* the name cleaned (rt_layer_path_clean); owned */
  char *target;         /* the hard link's target cleaned, or NULL; owned */
  const char *via_what; /* RT_LAYER_VIA_LINK: .path or .target */
  size_t via;
};

/* The longest and deepest cleaned path an entry may have.  A deeper tree
   unpacks (libarchive walks it a component at a time) but then cannot be
   removed by path (nftw in rt_rm_rf, common/util.c: ENAMETOOLONG past
   PATH_MAX), which left half-made work directories behind.  */
#define RT_LAYER_MAX_PATH 2048
#define RT_LAYER_MAX_DEPTH 256

/* Whether @p is relative and has no ".." component.  */
bool rt_layer_path_safe (const char *p);

/* Whether @clean (rt_layer_path_clean) is at most RT_LAYER_MAX_PATH bytes
   and RT_LAYER_MAX_DEPTH components.  */
bool rt_layer_path_fits (const char *clean);

/* @p without "./", empty components and a trailing "/": "./usr//bin/"
   and "usr/bin" are the same path.  Return: a new string, NULL without
   memory.  */
char *rt_layer_path_clean (const char *p);

/* The length of the leading part of @path (cleaned) that an earlier entry
   made a symlink (a key of @links), or 0.  @path is cut at each '/' in
   turn and restored: nothing to allocate, nothing to fail.  */
size_t rt_layer_through_link (json_object *links, char *path);

/**
 * rt_layer_check_entry - the check of one layer entry
 * @links: NULL to extract a layer the store holds; to check an untrusted
 *         layer (import), the symlinks this and the image's earlier layers
 *         made (an empty object for the first), updated with this entry
 * @first: the image's first layer: its /dev may hold device nodes
 *         (debootstrap makes them; extraction drops them)
 * @e:     the entry
 * @out:   the cleaned names, to free with rt_layer_check_clear()
 *
 * Names are refused when absolute, with "..", or too long or deep once
 * cleaned (rt_layer_path_fits), hard link targets too.
 * Extracting: the root itself, whiteouts and device nodes are reported
 * before a hard link's target is looked at (none of them is written);
 * libarchive refuses symlinks on the way on the disk.  Checking: the
 * target is refused first, then any device node but a first layer's
 * dev/, then anything written through a symlink of @links.
 *
 * Return: the verdict.
 */
enum rt_layer_verdict rt_layer_check_entry (json_object *links, bool first, const struct rt_layer_entry *e,
                                            struct rt_layer_check *out);
void rt_layer_check_clear (struct rt_layer_check *c);

/* An OCI layer's whiteout files (the image spec's "Whiteouts"): for a
   cleaned entry name (rt_layer_path_clean) whose last component starts
   with ".wh.", what it deletes.  RT_LAYER_OCI_PLAIN: not a whiteout, write
   it; RT_LAYER_OCI_WHITEOUT: delete *@target (newly allocated, cleaned,
   never the root, never with ".."); RT_LAYER_OCI_OPAQUE (".wh..wh..opq"):
   delete what the layers below have in *@target, a directory ("" for the
   root; never with ".."); RT_LAYER_OCI_BAD: a whiteout of nothing (".wh."), of "." or
   "..", or another ".wh..wh." name (the spec reserves them): refused;
   RT_LAYER_OCI_NO_MEMORY.  */
enum rt_layer_oci
{
  RT_LAYER_OCI_PLAIN,
  RT_LAYER_OCI_WHITEOUT,
  RT_LAYER_OCI_OPAQUE,
  RT_LAYER_OCI_BAD,
  RT_LAYER_OCI_NO_MEMORY,
};
enum rt_layer_oci rt_layer_oci_whiteout (const char *clean, char **target);

/* Whether the layer being read, @at bytes unpacked so far (its tar
   stream: libarchive's archive_filter_bytes (a, 0)), then @size more for
   the entry whose header was just read, stays within @b.  */
bool rt_layer_within (const struct rt_layer_budget *b, uint64_t at, int64_t size);

#endif
