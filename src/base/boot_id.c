/* boot_id.c - reading the host's boot id. */
#include "base/boot_id.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int boot_id_read(char out[37])
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	out[0] = 0;
	if (fd < 0)
		return -errno;
	n = read(fd, out, 36);
	err = errno;
	close(fd);
	if (n != 36) {
		out[0] = 0;
		return n < 0 ? -err : -EINVAL;
	}
	out[36] = 0;
	return 0;
}
