/*
 * statloop: the stat loop of W5 in `make bench`. It makes N newfstatat
 * calls, alternately of a file that exists (a hit) and of a name that does
 * not (a miss, ENOENT), and prints, as one JSON object on stdout, how long
 * a call took on average, measured here with CLOCK_MONOTONIC so that a
 * tracer's start-up and report stay out of the number.
 *
 * usage: statloop HIT MISS N
 *
 * Raw syscalls: glibc's stat() may go through statx or newfstatat
 * depending on its version, and the loop must be one syscall.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: not a traced syscall */
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int64_t t0 = now_ns();
	struct stat st;
	int64_t ns[2] = { 0 };
	long n[2] = { 0 };

	if (argc != 4) {
		fprintf(stderr, "usage: statloop HIT MISS N\n");
		return 2;
	}
	long total = strtol(argv[3], NULL, 10);

	if (total < 2) {
		fprintf(stderr, "statloop: N must be at least 2\n");
		return 2;
	}
	for (long i = 0; i < total; i++) {
		int miss = i & 1;
		int64_t a = now_ns();
		long r = syscall(SYS_newfstatat, AT_FDCWD, argv[1 + miss], &st, 0);

		ns[miss] += now_ns() - a;
		n[miss]++;
		if (miss ? (r == 0 || errno != ENOENT) : r != 0) {
			fprintf(stderr, "statloop: %s: unexpected result %ld\n", argv[1 + miss], r);
			return 1;
		}
	}
	printf("{\"pid\":%d,\"start_ns\":%lld,\"n\":%ld,\"ns_per_call\":%.1f,"
	       "\"hit\":{\"n\":%ld,\"ns_per_call\":%.1f},\"miss\":{\"n\":%ld,\"ns_per_call\":%.1f}}\n",
	       (int)getpid(), (long long)t0, total, (double)(ns[0] + ns[1]) / total,
	       n[0], (double)ns[0] / n[0], n[1], (double)ns[1] / n[1]);
	return 0;
}
