/* tar.h - layer files: a tree or a build step's tar written as a
   compressed layer, layers put into the store, and the libarchive glue
   the other image files share.  */
#ifndef RT_IMAGE_TAR_H
#define RT_IMAGE_TAR_H

#include <archive.h>
#include <archive_entry.h>

#include "core/context.h"
#include "core/archive.h"
#include "image/layer.h"

enum
{
  RT_COPY_OK = 0,
  RT_COPY_READ_FAILED = -1,  /* @in's error says why */
  RT_COPY_WRITE_FAILED = -2, /* @out's */
};
/* Entry @e (its header, then its data) from @in to @out: block by block
   with offsets to a disk writer (@to_disk: holes stay holes), as a stream
   to an archive writer.  Return: RT_COPY_*.  */
int rt_archive_copy_entry (struct archive *in, struct archive *out, struct archive_entry *e, bool to_disk);
/* What the path checks (image/layer.h) need of @ae; the strings stay
   @ae's.  */
void rt_layer_entry_of (struct archive_entry *ae, struct rt_layer_entry *e);

/* The existing file <prefix><name>.tar.zst or .tar.gz, or NULL.  */
char *rt_image_find_tar (const char *prefix, const char *name);
/* Tars @root into @dest_prefix<ext> (through a temp name): sorted, numeric
   owners, one file system, so the same tree gives the same tar.  */
int rt_image_tar_tree (const char *root, const char *dest_prefix, rt_error **err);
/* Puts a layer file into the store under its digest: a hard link when the
   cache shares the file system, else a copy.  */
int rt_image_store_layer (const char *imgdir, const char *src, char digest[65], rt_error **err);
/* The stored file of layer @digest, or NULL.  */
char *rt_image_layer_path (rt_context *ctx, const char *digest);
/* Stores a raw tar (an overlayfs upper dir) as a compressed layer.  */
int rt_image_layer_from_tar (rt_context *ctx, const char *raw_tar, char digest[65], rt_error **err);

#endif
