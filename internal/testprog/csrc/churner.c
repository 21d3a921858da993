/*
 * churner: the hostile unprivileged churn for the memory-limit tests. For
 * MS milliseconds, JOBS loops fork children one after another; each child
 * takes a name no process had before (its comm), opens a file of DIR twice
 * (a duplicate open), fails to open a path no one opened before and fails
 * to exec a few PATH candidates before it exits. One child in 16 execs
 * itself instead (a new image, with a failed exec first), so images and
 * execs churn too. Prints how many children it made.
 *
 * Every row this makes is new: a tracer that keeps anything per comm,
 * per image, per path or per failed exec keeps more of it every second.
 *
 * Usage: churner MS JOBS DIR
 *        churner child DIR N    (the re-exec'd image)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void work(const char *dir, long n)
{
	char name[16], path[4096];
	static char *const argv[] = {"x", NULL};
	static char *const envp[] = {NULL};

	snprintf(name, sizeof name, "c%lx", n);
	prctl(PR_SET_NAME, name, 0, 0, 0);
	snprintf(path, sizeof path, "%s/f%ld", dir, n % 256);
	close(open(path, O_RDONLY));
	close(open(path, O_RDONLY));
	snprintf(path, sizeof path, "%s/missing/%ld/%s", dir, n, name);
	open(path, O_RDONLY);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "/nonexistent%d/%s", i, name);
		execve(path, argv, envp);
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "child") == 0) {
		work(argv[2], strtol(argv[3], NULL, 10));
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: churner MS JOBS DIR\n");
		return 2;
	}
	long long end = now_ms() + strtol(argv[1], NULL, 10);
	int jobs = atoi(argv[2]);
	const char *dir = argv[3];
	for (int f = 0; f < 256; f++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/f%d", dir, f);
		close(open(path, O_WRONLY | O_CREAT, 0644));
	}
	int pipefd[2];
	if (pipe(pipefd) < 0) {
		perror("pipe");
		return 1;
	}
	for (int j = 0; j < jobs; j++) {
		if (fork() != 0)
			continue;
		long made = 0;
		for (long n = j; now_ms() < end; n += jobs) {
			pid_t pid = fork();
			if (pid < 0)
				continue;
			if (pid == 0) {
				if (n % 16 == 0) {
					char num[32];
					snprintf(num, sizeof num, "%ld", n);
					char *const args[] = {argv[0], "child", (char *)dir, num, NULL};
					execve("/nonexistent/churner", args, NULL);
					execv("/proc/self/exe", args);
				}
				work(dir, n);
				_exit(0);
			}
			waitpid(pid, NULL, 0);
			made++;
		}
		write(pipefd[1], &made, sizeof made);
		_exit(0);
	}
	close(pipefd[1]);
	long total = 0, made;
	while (read(pipefd[0], &made, sizeof made) == sizeof made)
		total += made;
	while (wait(NULL) > 0)
		;
	printf("%ld\n", total);
	return 0;
}
