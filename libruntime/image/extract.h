/* extract.h - layers extracted onto a root (image/extract.c).  */
#ifndef RT_IMAGE_EXTRACT_H
#define RT_IMAGE_EXTRACT_H

#include "core/context.h"
#include "image/layer.h"

/* Makes the private place where a boot disk's tree is extracted:
   *@work, a new directory in @dir only its owner can enter (0700, named
   .tmp-XXXXXX, so a crashed run's leftover is found and removed), and
   *@root (its realpath), the tree's root inside it (0755, the mode the
   disk's root gets).  No other user can reach the tree's setuid files
   before the disk is made.  Removing *@work removes both.  */
int rt_image_work_dir (const char *dir, char **work, char **root, rt_error **err);

/* Extracts the layer file @layer over @root (a realpath, so it holds no
   symlink).  Entry names are checked by image/layer.h, then prefixed
   with @root; libarchive refuses the rest on the disk (symlinks on the
   way, ".." in link targets).  @upper: a layer above the first, whose
   whiteouts and opaque directories hide what is below.  @budget: the
   image's, shared by its layers: an entry that would unpack past its
   limit stops the extraction (invalid_request) before it is written;
   what the layer unpacked to is added to its used.  */
int rt_image_extract_layer (const char *root, const char *layer, bool upper, struct rt_layer_budget *budget,
                            rt_error **err);

#endif
