/*
 * reopen: opens FILE N times (openat, O_RDONLY), then, given M, executes
 * itself to open FILE M times in a new image. Static: no loader opens come
 * between the two images' opens, so the thread's last opens before the
 * exec are FILE's, as they are when a program execs right after reading a
 * file.
 *
 * Usage: reopen FILE N [M]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: reopen FILE N [M]\n");
		return 2;
	}
	int n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		int fd = openat(AT_FDCWD, argv[1], O_RDONLY);
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		close(fd);
	}
	if (argc == 4) {
		char *next[] = {argv[0], argv[1], argv[3], NULL};
		execv(argv[0], next);
		perror(argv[0]);
		return 1;
	}
	return 0;
}
