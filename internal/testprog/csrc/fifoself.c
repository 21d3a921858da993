/*
 * fifoself: a hostile program for --stacks. Run as root, it first becomes
 * uid and gid 65534 (nobody). It renames its own executable to PATH.moved
 * and makes a FIFO at PATH, the path it was mapped from: whoever opens
 * that path, blocking, waits for a writer that never comes. Then it opens
 * FILE twice from open_twice (a duplicate open, whose stack goes through
 * this very program), writes "r" to stdout and sleeps MS milliseconds.
 *
 * Usage: fifoself FILE MS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile int opened;

__attribute__((noinline)) void open_twice(const char *path)
{
	for (int i = 0; i < 2; i++) {
		int fd = open(path, O_RDONLY);

		opened += fd >= 0;
		if (fd >= 0)
			close(fd);
	}
}

int main(int argc, char **argv)
{
	char self[4096], moved[4200];
	ssize_t n;
	long ms;
	struct timespec ts;

	if (argc != 3) {
		fprintf(stderr, "usage: fifoself FILE MS\n");
		return 2;
	}
	if (getuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534))) {
		perror("fifoself: becoming nobody");
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0) {
		perror("fifoself: /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	snprintf(moved, sizeof moved, "%s.moved", self);
	if (rename(self, moved) || mkfifo(self, 0666)) {
		perror("fifoself: a FIFO at its own path");
		return 1;
	}
	open_twice(argv[1]);
	if (write(1, "r", 1) != 1)
		return 1;
	ms = atol(argv[2]);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	nanosleep(&ts, NULL);
	return opened == 2 ? 0 : 1;
}
