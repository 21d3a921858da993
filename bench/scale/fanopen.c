/*
 * fanopen: the workload of make bench's scale curve. It forks P processes
 * that each open (and close) the same F files DIR/f00000..., so a
 * system-wide tracer sees P x F distinct (process, file) pairs. Every child
 * stays alive until all have finished opening, so all P x F pairs are live
 * in the tracer's tables at the same moment: the peak is what is measured.
 *
 * usage: fanopen DIR P F [par|seq]
 *
 * par (the default) lets the children open concurrently, a burst from every
 * CPU at once; seq starts each child when the previous one is done, so one
 * CPU at a time produces events and the rest are free for the tracer.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void child(const char *dir, long files, int done_w, int hold_r)
{
	char path[4096];
	char b = 0;

	for (long i = 0; i < files; i++) {
		snprintf(path, sizeof path, "%s/f%05ld", dir, i);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			_exit(1);
		}
		close(fd);
	}
	if (write(done_w, &b, 1) != 1)
		_exit(1);
	/* Hold until the parent closes the pipe: EOF. */
	while (read(hold_r, &b, 1) > 0)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: fanopen DIR P F [par|seq]\n");
		return 2;
	}
	int seq = argc == 5 && argv[4][0] == 's';
	const char *dir = argv[1];
	long procs = strtol(argv[2], NULL, 10), files = strtol(argv[3], NULL, 10);
	int done[2], hold[2];

	if (procs < 1 || files < 1 || files > 99999) {
		fprintf(stderr, "fanopen: need 1 <= P and 1 <= F <= 99999\n");
		return 2;
	}
	if (pipe(done) != 0 || pipe(hold) != 0) {
		perror("pipe");
		return 1;
	}
	int64_t start = now_ns();
	long ready = 0;
	char b;

	for (long p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(done[0]);
			close(hold[1]);
			child(dir, files, done[1], hold[0]);
		}
		if (seq && read(done[0], &b, 1) == 1)
			ready++;
	}
	close(done[1]);
	close(hold[0]);
	while (ready < procs && read(done[0], &b, 1) == 1)
		ready++;
	int64_t opened = now_ns() - start;

	close(hold[1]); /* release the children */
	int status, failed = 0;

	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	printf("{\"pid\":%d,\"procs\":%ld,\"files\":%ld,\"opens\":%ld,\"open_phase_ns\":%lld,\"failed_children\":%d}\n",
	       (int)getpid(), procs, files, procs * files, (long long)opened, failed);
	return failed || ready < procs;
}
