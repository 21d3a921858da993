/*
 * timecmd: runs a command and prints, as one JSON object on stdout, its
 * wall time and the CPU time the kernel charged to it (wait4's rusage).
 * `make bench` runs cp through it so that every tracer row measures the
 * same thing, the cp process alone: a wrapping tracer's start-up and report
 * fall outside, and a system-wide tracer's own CPU time is not charged to
 * the command.
 *
 * usage: timecmd CMD [ARGS...]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t tv_ns(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

int main(int argc, char **argv)
{
	int64_t t0 = now_ns();

	if (argc < 2) {
		fprintf(stderr, "usage: timecmd CMD [ARGS...]\n");
		return 2;
	}
	int64_t start = now_ns();
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status;
	struct rusage ru;

	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 1;
	}
	int64_t wall = now_ns() - start;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

	printf("{\"pid\":%d,\"start_ns\":%lld,\"wall_ns\":%lld,\"utime_ns\":%lld,"
	       "\"stime_ns\":%lld,\"maxrss_kb\":%ld,\"exit_code\":%d}\n",
	       (int)pid, (long long)t0, (long long)wall,
	       (long long)tv_ns(ru.ru_utime), (long long)tv_ns(ru.ru_stime),
	       ru.ru_maxrss, code);
	return code;
}
