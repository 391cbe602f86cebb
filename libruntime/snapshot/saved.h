/* saved.h - a VM saved to disk, and what a sandbox continues from: a
 * snapshot, a paused sandbox, a fork's source (docs/ARCHITECTURE.md,
 * "Snapshots, fork and pause").  The same pieces as a template
 * (template/template.h): memory, device state, disk layers; a sandbox
 * started from one is made unique (or, waking, current) by the agent's
 * RESTORE (vmm/guest-ops.h).
 *
 *   <dir>/meta.json  {"id", "kind": "snapshot"|"paused", "name", "labels",
 *                    "createdAt", "sourceSandboxId", "image": {"id",
 *                    "ref"}, "shape": {"vcpu", "memoryMiB", "diskMiB"},
 *                    "accel", "base" (the boot disk's identity), "layers"
 *                    (how many), "memoryBytes", "stateBytes", "diskBytes",
 *                    "storedBytes", "ramFormat" ("lz4": `ram` is a
 *                    snapshot/ramfile.h file; absent in a VM saved
 *                    before, whose `ram` is the memory, sparse),
 *                    "memoryDataBytes" (its non-zero pages, uncompressed),
 *                    "sandbox" (what its monitor ran with,
 *                    rt_saved_sandbox_json), "captureMs"}
 *   <dir>/ram        the guest's RAM, LZ4-compressed in chunks, zero pages
 *                    left out (snapshot/ramfile.h); "memoryBytes" its
 *                    size
 *   <dir>/state      the device state: a migration stream without RAM
 *   <layers>/N.qcow2 the read-only disk layers above the image's base,
 *                    oldest first, hard links (copies across file
 *                    systems); a snapshot's are <dir>/layers/, the last
 *                    one its source's disk at the capture
 *
 * A paused sandbox's is <disk dir>/saved/ (records/store.h), its layers
 * <disk dir>/layers/ and its writable disk <disk dir>/overlay.qcow2, kept
 * in place.  Everything here was written by a guest or by a QEMU a guest
 * may have taken over: the qcow2 layers are only ever opened by QEMU with
 * every backing node named (never by qemu-img, which would follow the
 * backing file names their headers hold), ram and state only by a QEMU in
 * the same jail as the one that wrote them.
 */
#ifndef RT_SAVED_H
#define RT_SAVED_H

#include "core/context.h"
#include "vmm/guest-ops.h"
#include "snapshot/ramfile.h"
#include "vmm/qmp.h"

/* Disk layers a chain may have between the base and a sandbox's own
   overlay (a fork of a fork of … adds one each time).  */
#define RT_MAX_LAYERS 8

/* meta.json's "ramFormat" of a `ram` that is a snapshot/ramfile.h file.  */
#define RT_SAVED_RAM_FORMAT "lz4"

struct rt_saved
{
  char *dir;
  json_object *meta;
  char *ram, *state;                    /* paths in @dir */
  char *layers[RT_MAX_LAYERS + 1];      /* NULL-terminated */
  size_t n_layers;
  unsigned vcpu, memory_mib, disk_mib;
  const char *image_id;                 /* in @meta */
  const char *kind;                     /* in @meta */
  bool ram_packed;                      /* ram is a snapshot/ramfile.h
                                           file, not the memory sparse */
};

/* Reads @dir/meta.json; the layers are @layers_dir/0.qcow2… (NULL:
   @dir/layers).  Errors: "not_found" (no complete saved VM there),
   "internal".  */
int rt_saved_load (const char *dir, const char *layers_dir, struct rt_saved *out, rt_error **err);
void rt_saved_clear (struct rt_saved *s);
#define cleanup_saved __attribute__ ((cleanup (rt_saved_clear)))

/* The guest RAM in @ram_fd (a memfd of @size bytes) into a new file at
   @path (snapshot/ramfile.h), compressed when @compress.  @sizes: its data
   and the file's size, or NULL.  */
int rt_saved_write_ram (int ram_fd, uint64_t size, const char *path, bool compress, struct rt_ramfile_sizes *sizes,
                        rt_error **err);

/* @src_fd's data (a template's memfd, or a `ram` saved before it was
   compressed) into @dst_fd, an empty memfd of @size bytes: only its
   non-zero pages are copied.  */
int rt_saved_ram_fill (int src_fd, int dst_fd, uint64_t size, rt_error **err);

/* @src at @dst: a hard link, or a copy when they are on different file
   systems; @dst is new (O_EXCL).  */
int rt_saved_link (const char *src, const char *dst, rt_error **err);

/* Captures a stopped VM into @dir (which exists): its device state over
   @q (vmm/migrate.h), its RAM from @ram_fd (@memory_mib), its layers
   (@layers, NULL-terminated) linked into @dir/layers/ and, when
   @overlay is not NULL, a copy of it as the last layer; the RAM
   compressed unless @once (a fork's capture, read once and removed).
   @meta gets "memoryBytes", "stateBytes", "diskBytes", "storedBytes",
   "layers".  The VM stays stopped.  */
int rt_saved_capture (struct rt_qmp *q, int ram_fd, unsigned memory_mib, char *const *layers, const char *overlay,
                      const char *dir, bool once, json_object *meta, rt_error **err);

/* The disk part of rt_saved_capture (also for a paused sandbox, whose
   memory is already saved): "layers" and "diskBytes" in @meta.  */
int rt_saved_capture_disk (char *const *layers, const char *overlay, const char *dir, json_object *meta,
                           rt_error **err);

/* The identity of the image's boot disk @disk (inode, size, mtime), for
   meta.json's "base"; and the check that @s was saved over that same
   file ("invalid_request" when it was made again: the layers over it
   would be garbage).  */
json_object *rt_saved_base_json (const char *disk);
int rt_saved_check_base (const struct rt_saved *s, const char *disk, rt_error **err);

/* The total size on disk of the files under @dir (st_blocks).  */
int64_t rt_saved_stored_bytes (const char *dir);

#endif
