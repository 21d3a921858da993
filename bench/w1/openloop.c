/*
 * openloop: the W1 workload of `make bench`. It opens and closes one file
 * N times and prints, as one JSON object on stdout, how long each call took
 * on average, measured here with CLOCK_MONOTONIC so that a tracer's own
 * start-up and reporting (once run writes its report at exit) stay out of
 * the number.
 *
 * usage: openloop FILE N [open|openat|openat2|mixed]
 *
 * mixed (the default) makes N/3 calls of each kind in turn, timing each
 * third separately: one process run gives all three per-kind costs, so a
 * slow tracer (strace) is paid for once per round instead of three times.
 *
 * Every call is a raw syscall: glibc's open() is itself implemented with
 * openat, and openat2 has no glibc wrapper on older systems.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum kind { K_OPEN, K_OPENAT, K_OPENAT2, NKINDS };
static const char *names[NKINDS] = { "open", "openat", "openat2" };

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: not a traced syscall */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long open_once(enum kind k, const char *path)
{
	struct open_how how;

	switch (k) {
	case K_OPEN:
		return syscall(SYS_open, path, O_RDONLY | O_CLOEXEC);
	case K_OPENAT:
		return syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	default:
		memset(&how, 0, sizeof how);
		how.flags = O_RDONLY | O_CLOEXEC;
		return syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	}
}

int main(int argc, char **argv)
{
	/* Taken first so the harness can tell how long a wrapping tracer
	 * took to get the program running. */
	int64_t t0 = now_ns();
	long n[NKINDS] = { 0 };
	int64_t ns[NKINDS] = { 0 };

	if (argc < 3) {
		fprintf(stderr, "usage: openloop FILE N [open|openat|openat2|mixed]\n");
		return 2;
	}
	const char *path = argv[1];
	long total = strtol(argv[2], NULL, 10);
	const char *mode = argc > 3 ? argv[3] : "mixed";

	if (total < 3) {
		fprintf(stderr, "openloop: N must be at least 3\n");
		return 2;
	}
	if (strcmp(mode, "mixed") == 0) {
		for (int k = 0; k < NKINDS; k++)
			n[k] = total / NKINDS + (k < total % NKINDS);
	} else {
		int found = 0;

		for (int k = 0; k < NKINDS; k++)
			if (strcmp(mode, names[k]) == 0)
				n[k] = total, found = 1;
		if (!found) {
			fprintf(stderr, "openloop: unknown kind %s\n", mode);
			return 2;
		}
	}

	for (int k = 0; k < NKINDS; k++) {
		int64_t start = now_ns();

		for (long i = 0; i < n[k]; i++) {
			long fd = open_once(k, path);

			if (fd < 0) {
				perror(names[k]);
				return 1;
			}
			close((int)fd);
		}
		ns[k] = now_ns() - start;
	}

	int64_t all = ns[0] + ns[1] + ns[2];
	printf("{\"pid\":%d,\"start_ns\":%lld,\"n\":%ld,\"ns_per_call\":%.1f",
	       (int)getpid(), (long long)t0, total, (double)all / total);
	for (int k = 0; k < NKINDS; k++)
		if (n[k] > 0)
			printf(",\"%s\":{\"n\":%ld,\"ns_per_call\":%.1f}", names[k],
			       n[k], (double)ns[k] / n[k]);
	printf("}\n");
	return 0;
}
