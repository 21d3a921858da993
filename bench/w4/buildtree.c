/*
 * buildtree: the workload of make bench's W4, a build-like tree. It runs N
 * jobs, J at a time (make -jJ), each a fork and an exec of this program as
 * a "compiler" that opens M distinct files DIR/f00000... once each, as
 * cc1 reads headers, and exits. Every 100th job also opens DIR/f00000
 * twice more: a duplicate, so the tree has findings to report.
 *
 * usage: buildtree DIR N M [J]
 *
 * When every job is done it prints {"end_unix_ns": T}: the wall-clock time
 * it exits at, from which the bench times what a tracer takes after it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int compile(const char *dir, long files, int repeat)
{
	char path[4096];

	for (long i = 0; i < files; i++) {
		snprintf(path, sizeof path, "%s/f%05ld", dir, i);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	for (int i = 0; i < repeat; i++) {
		snprintf(path, sizeof path, "%s/f00000", dir);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 1;
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "-c") == 0)
		return compile(argv[2], atol(argv[3]), atoi(argv[4]));
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: buildtree DIR N M [J]\n");
		return 2;
	}
	const char *dir = argv[1];
	long jobs = atol(argv[2]), files = atol(argv[3]);
	long par = argc == 5 ? atol(argv[4]) : 2;
	long running = 0, failed = 0;
	/* Exec'd by its own path, not /proc/self/exe: the jobs keep the comm
	 * "buildtree", which a tracer's --comm filter can select. */
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0) {
		perror("/proc/self/exe");
		return 1;
	}
	self[n] = 0;

	for (long j = 0; j < jobs || running > 0;) {
		if (j < jobs && running < par) {
			pid_t pid = fork();
			if (pid < 0) {
				perror("fork");
				return 1;
			}
			if (pid == 0) {
				char *a[] = {argv[0], "-c", (char *)dir, argv[3], j % 100 == 0 ? "2" : "0", NULL};
				execv(self, a);
				_exit(127);
			}
			j++;
			running++;
			continue;
		}
		int st;
		if (wait(&st) > 0) {
			running--;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				failed++;
		}
	}
	(void)files;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	printf("{\"end_unix_ns\": %lld}\n", (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
	fflush(stdout);
	return failed != 0;
}
