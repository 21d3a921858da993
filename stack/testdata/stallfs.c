/* stallfs DIR: mounts a FUSE file system at DIR that answers the kernel's
 * INIT and nothing after it: a lookup in it (any name below DIR) waits
 * for an answer that never comes, until this process ends (its /dev/fuse
 * closed, the connection aborts). Writes "ready\n" to stdout once DIR is
 * mounted and initialized. */
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	char opts[128];
	int fd;

	if (argc != 2)
		return 2;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("open /dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("stallfs", argv[1], "fuse.stallfs", MS_NOSUID | MS_NODEV, opts)) {
		perror("mount");
		return 1;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		struct fuse_in_header *in = (void *)buf;

		if (n <= 0)
			return 0;
		if (in->opcode == FUSE_INIT) {
			struct {
				struct fuse_out_header h;
				struct fuse_init_out o;
			} out;
			memset(&out, 0, sizeof out);
			out.h.len = sizeof out;
			out.h.unique = in->unique;
			out.o.major = FUSE_KERNEL_VERSION;
			out.o.minor = 31;
			out.o.max_write = 4096;
			out.o.max_readahead = 4096;
			if (write(fd, &out, sizeof out) < 0) {
				perror("write");
				return 1;
			}
			write(1, "ready\n", 6);
		}
		/* Anything else: no answer. */
	}
}
