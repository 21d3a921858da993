/*
 * stackprog: opens FILE once from each of three functions (open_alpha,
 * open_beta, open_gamma), writes one byte to stdout and waits for one on
 * stdin (so that a test can read its /proc/PID/maps while it is paused),
 * then, from exec_delta, runs PROG through execvp(3): with a PATH of two
 * directories without it before its own, two failed execve calls, then
 * one that succeeds. Built without frame pointers (-O2
 * -fomit-frame-pointer), as most distribution code is: unwinding it needs
 * its CFI.
 *
 * Usage: stackprog FILE PROG [ARG...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int opened[3];

/* noinline and each unlike the others: three distinct call sites, not one
 * function folded into the three names. */
__attribute__((noinline)) void open_alpha(const char *path)
{
	int fd = open(path, O_RDONLY);

	opened[0] += fd >= 0;
	if (fd >= 0)
		close(fd);
}

__attribute__((noinline)) void open_beta(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	opened[1] += 2 * (fd >= 0);
	if (fd >= 0)
		close(fd);
}

__attribute__((noinline)) void open_gamma(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOCTTY);

	opened[2] += 3 * (fd >= 0);
	if (fd >= 0)
		close(fd);
}

__attribute__((noinline)) int exec_delta(char **argv)
{
	execvp(argv[0], argv);
	perror(argv[0]);
	return 127;
}

int main(int argc, char **argv)
{
	char c = 'r';

	if (argc < 3) {
		fprintf(stderr, "usage: stackprog FILE PROG [ARG...]\n");
		return 2;
	}
	open_alpha(argv[1]);
	open_beta(argv[1]);
	open_gamma(argv[1]);
	if (opened[0] + opened[1] + opened[2] != 6) {
		perror(argv[1]);
		return 1;
	}
	if (write(1, &c, 1) != 1 || read(0, &c, 1) != 1)
		return 1;
	return exec_delta(argv + 2);
}
