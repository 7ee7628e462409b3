/* elf_internal.h - helpers shared by the files of src/elf/, not by others. */
#ifndef SS_ELF_INTERNAL_H
#define SS_ELF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/elf_image.h"

/* Opens an image over bytes it takes ownership of (munmap'ed when mmapped,
 * else free'd), also on failure. */
int elf_image__open_owned(const uint8_t *bytes, size_t len, bool mmapped,
			  const char *name, const struct log_sink *log,
			  struct elf_image **out);

#endif
