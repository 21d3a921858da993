/*
 * openmix: opens FILE N times as fast as it can, open, openat and openat2
 * in turn (raw syscalls), closing each descriptor: the acceptance case of
 * the event stream at full speed. Static: no loader opens before the
 * loop's.
 *
 * Usage: openmix FILE N
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct open_how how;

	if (argc != 3) {
		fprintf(stderr, "usage: openmix FILE N\n");
		return 2;
	}
	long n = strtol(argv[2], NULL, 10);
	memset(&how, 0, sizeof how);
	how.flags = O_RDONLY | O_CLOEXEC;
	for (long i = 0; i < n; i++) {
		long fd;
		switch (i % 3) {
		case 0:
			fd = syscall(SYS_open, argv[1], O_RDONLY | O_CLOEXEC);
			break;
		case 1:
			fd = syscall(SYS_openat, AT_FDCWD, argv[1], O_RDONLY | O_CLOEXEC);
			break;
		default:
			fd = syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof how);
			break;
		}
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		close((int)fd);
	}
	return 0;
}
