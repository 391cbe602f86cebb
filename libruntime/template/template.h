/* template.h - saved, warmed VMs that sandboxes start from: one template
 * per (image id, vCPUs, memory, disk, kernel, initramfs (the agent's
 * build), QEMU binary, accelerator).  See "Templates and clones" in
 * docs/ARCHITECTURE.md.
 *
 *   <cache>/templates/<key>/       key: sha256 of meta.json's "inputs"
 *       meta.json    {"inputs":{…}, "createdAt", "cmdline", "memoryMiB",
 *                     "ramBytes" (on disk), "stateBytes", "makeMs"}
 *       ram          the guest's RAM, LZ4-compressed in chunks, zero pages
 *                    left out (snapshot/ramfile.h; "ramFormat" in the
 *                    inputs)
 *       state        the device state (a migration stream without RAM)
 *       disk.qcow2   the template's overlay of the image's base disk
 *       clone.qcow2  an empty overlay of disk.qcow2: a clone's overlay is
 *                    a copy of it
 *   <cache>/templates/.tmp-XXXXXX/ a template being made: renamed to its
 *                    key when complete, so a dir named by a key is whole
 *   <cache>/templates/.lock-<key>  flock: one maker per key at a time
 *   <state>/.templates/<key:32>.sock  its keeper (rt_template_ram_fd):
 *                    the key's first 32 digits, to fit a socket path
 *
 * Any changed input is another key: a stale template is never found, and
 * making a template removes the others of its image and shape.
 */
#ifndef RT_TEMPLATE_H
#define RT_TEMPLATE_H

#include "core/context.h"
#include "net/netns.h"

/* The kernel command line of every template VM: a clone boots nothing
   and gets its hostname by RESTORE (vmm/guest-ops.h).  */
#define RT_TEMPLATE_CMDLINE "rt.hostname=runtime rt.net=" RT_NET_GUEST "," RT_NET_GATEWAY

/* What a template is made of; every field is part of its key, and so is
   the machine runtime describes for it (QEMU's options).  */
struct rt_template_inputs
{
  const char *image_id;
  const char *disk;       /* the image's base disk */
  unsigned vcpu;
  unsigned memory_mib;
  unsigned disk_mib;      /* the sandbox's disk: only the base's size
                             (no --disk larger than it) has templates */
  const char *vmlinux;
  const char *initramfs;  /* its name carries the agent's build */
  const char *accel;
};

/* A complete template found on disk.  */
struct rt_template
{
  char key[65];
  char *dir;
  char *ram, *state, *disk, *clone_disk; /* paths in @dir */
  char *cmdline;        /* the kernel command line it booted with: a
                           clone's is the same */
  unsigned memory_mib;
};

/* False under RUNTIME_TEMPLATES=off: every start is cold and no template
   is made in the background (ctx->templates_off).  */
bool rt_templates_enabled (rt_context *ctx);

/* @in's key (hex sha256 of its inputs: each file's path, size, mtime and
   inode, the QEMU binary's too) and, when @inputs is not NULL, those
   inputs as a JSON object (meta.json's "inputs").  */
int rt_template_key (rt_context *ctx, const struct rt_template_inputs *in, char key[65], json_object **inputs,
                     rt_error **err);

/* 1 with *out filled when a complete template for @in exists; 0 when none
   (or stale: another key); <0 on error.  */
int rt_template_find (rt_context *ctx, const struct rt_template_inputs *in, struct rt_template *out, rt_error **err);
void rt_template_clear (struct rt_template *t);

/* The template's RAM as a sealed memfd (F_SEAL_WRITE | F_SEAL_SHRINK |
   F_SEAL_GROW | F_SEAL_SEAL): a clone's QEMU maps it private and cannot
   write it back, even escaped.  From the template's keeper, a small
   process holding one memfd per template so that every clone shares its
   pages (it exits after RUNTIME_TEMPLATE_KEEP_S seconds unasked, default
   300, or when its template goes); started here, loading `ram`, when none
   runs.  The caller closes *fd.  */
int rt_template_ram_fd (rt_context *ctx, const struct rt_template *t, int *fd, rt_error **err);

/* Removes every template of @image_id (image rm) and ends their keepers.  */
int rt_template_remove_image (rt_context *ctx, const char *image_id, rt_error **err);

/* Removes the other templates of @in's image and shape (their key
   differs: stale), once @key is made.  */
void rt_template_remove_stale (rt_context *ctx, const struct rt_template_inputs *in, const char *key);

/* The templates as a JSON array of meta.json objects with "key" and
   "sizeBytes" added (image warm --json, tests).  */
int rt_template_list (rt_context *ctx, json_object **out, rt_error **err);

/* Removes the .tmp-* dirs of makers that are gone: one whose maker.pid
   names a dead process; one without a (readable) maker.pid when no maker
   holds a .lock-<key> (a maker takes it before making its .tmp- dir), or
   when it is over an hour old; .tmp-del-* (a removal cut short) always.  */
void rt_template_sweep (rt_context *ctx);

/* Ends @key's keeper, if one runs, once its template dir is gone: it
   checks on every request, so this asks it once and waits (≤ 2 s) for it
   to close.  A killed keeper's socket is removed.  */
void rt_template_keeper_stop (rt_context *ctx, const char *key);

#endif
