/*
 * namedthread: a process whose worker thread has a name of its own, as a
 * JVM's compiler threads and a browser's workers do. Waits for stdin to
 * close, then: the main thread opens FILE N times; a thread it starts
 * names itself "nt-worker" (pthread_setname_np), opens FILE 2N times and
 * forks a child, which keeps the worker's name, opens FILE 3N times and
 * exits; the worker waits for it; the main thread joins the worker.
 *
 * Usage: namedthread FILE N
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *file;
static int n;

static void opens(int times)
{
	for (int i = 0; i < times; i++) {
		int fd = openat(AT_FDCWD, file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(file);
			_exit(1);
		}
		close(fd);
	}
}

static void *worker(void *arg)
{
	int st;
	pid_t c;

	(void)arg;
	if (pthread_setname_np(pthread_self(), "nt-worker") != 0) {
		fprintf(stderr, "pthread_setname_np failed\n");
		_exit(1);
	}
	opens(2 * n);
	c = fork();
	if (c < 0) {
		perror("fork");
		_exit(1);
	}
	if (c == 0) {
		opens(3 * n);
		_exit(0);
	}
	printf("child %d ran\n", (int)c);
	fflush(stdout);
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child failed\n");
		_exit(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char ch;

	if (argc != 3) {
		fprintf(stderr, "usage: namedthread FILE N\n");
		return 2;
	}
	file = argv[1];
	n = atoi(argv[2]);
	while (read(0, &ch, 1) > 0)
		;
	opens(n);
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	pthread_join(t, NULL);
	return 0;
}
