/*
 * flooder: open-event overload for the loss tests. Opens (and closes) FILE
 * in a tight loop for MS milliseconds, then prints how many opens it made
 * (the inputs a tracer was offered) on stdout.
 *
 * When FILE is a directory each open is an O_TMPFILE in it: a new file
 * every time, so a tracer that counts repeated opens of one file in the
 * kernel (once does) still has an event to send for every one.
 *
 * With "fail", FILE must not exist and every open fails (ENOENT): repeats
 * of one failure, which a tracer that counts them in the kernel (once
 * watch) must still report, however full its ring.
 *
 * With "failnew", every open fails (ENOENT) on a name not tried before,
 * FILE.0, FILE.1, ... (FILE's directory must exist, and those names not):
 * a failure a tracer that reports failures by name must send every time.
 *
 * With "fstatfail", FILE must not exist: each round is an fstat of
 * stdin (newfstatat(0, "", AT_EMPTY_PATH), a lookup that names no file)
 * and then a failed open of FILE: a tracer whose hooks attach one by one
 * sees some fstat's entry without its exit, right before an open's exit.
 *
 * With "statfail", FILE must not exist and it is stat-ed instead, every
 * stat failing (ENOENT): repeats a tracer may count in the kernel, and
 * must then report, however full its ring (the count printed is of the
 * stats).
 *
 * Usage: flooder MS FILE [fail|failnew|fstatfail|statfail]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 ||
	    (argc == 4 && strcmp(argv[3], "fail") && strcmp(argv[3], "failnew") && strcmp(argv[3], "fstatfail") &&
	     strcmp(argv[3], "statfail"))) {
		fprintf(stderr, "usage: flooder MS FILE [fail|failnew|fstatfail|statfail]\n");
		return 2;
	}
	struct stat st;
	int flags = O_RDONLY;
	int fail = argc == 4;
	int statfail = fail && !strcmp(argv[3], "statfail");
	int failnew = fail && !strcmp(argv[3], "failnew");
	int fstatfail = fail && !strcmp(argv[3], "fstatfail");
	char name[4096];
	if (!fail && stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode))
		flags = O_TMPFILE | O_WRONLY;
	long long end = now_ms() + strtol(argv[1], NULL, 10);
	long long n = 0;
	do {
		for (int i = 0; i < 256; i++, n++) {
			if (statfail) {
				if (stat(argv[2], &st) == 0 || errno != ENOENT) {
					fprintf(stderr, "%s: found, or failed otherwise than ENOENT\n", argv[2]);
					return 1;
				}
				continue;
			}
			const char *path = argv[2];
			if (fstatfail && fstatat(0, "", &st, AT_EMPTY_PATH) != 0) {
				perror("fstatat");
				return 1;
			}
			if (failnew) {
				snprintf(name, sizeof(name), "%s.%lld", argv[2], n);
				path = name;
			}
			int fd = open(path, flags, 0600);
			if (fail) {
				if (fd >= 0 || errno != ENOENT) {
					fprintf(stderr, "%s: opened, or failed otherwise than ENOENT\n", path);
					return 1;
				}
				continue;
			}
			if (fd < 0) {
				perror(argv[2]);
				return 1;
			}
			close(fd);
		}
	} while (now_ms() < end);
	printf("%lld\n", n);
	return 0;
}
