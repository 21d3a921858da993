/*
 * threadexit: forks PROCS children one after another. Each starts THREADS
 * threads that open FILE OPENS times each and then block; when all have
 * opened, the main thread ends the process with exit_group, so that every
 * thread exits at once, in an order the scheduler picks. A thread whose
 * repeats wait in its own slot must still have them counted when it is
 * not the last to die.
 *
 * Usage: threadexit FILE PROCS THREADS OPENS
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *file;
static int opens;
static int done;

static void open_all(void)
{
	for (int i = 0; i < opens; i++) {
		int fd = openat(AT_FDCWD, file, O_RDONLY);
		if (fd < 0) {
			perror(file);
			_exit(1);
		}
		close(fd);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	open_all();
	__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST);
	for (;;)
		pause();
	return NULL;
}

static void child(int threads)
{
	pthread_t t;

	for (int i = 0; i < threads; i++) {
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			_exit(1);
		}
	}
	while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < threads)
		sched_yield();
	open_all();
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: threadexit FILE PROCS THREADS OPENS\n");
		return 2;
	}
	file = argv[1];
	int procs = atoi(argv[2]), threads = atoi(argv[3]);
	opens = atoi(argv[4]);
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			child(threads);
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "child %d failed\n", i);
			return 1;
		}
	}
	return 0;
}
