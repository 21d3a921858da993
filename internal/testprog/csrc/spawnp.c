/*
 * spawnp: run a program found through $PATH with posix_spawnp(3) and exit
 * with its status. Tests use it to produce the libc-driven PATH search
 * (one execve attempt per PATH entry, failures included) that the tracer
 * must count, from the same process or from a forked child.
 *
 * Usage: spawnp [-fork] NAME [ARGS...]
 *   -fork  fork() first; the child spawns and waits, then _exit()s with the
 *          spawned status, and the parent relays the child's status.
 * Exit status: the spawned program's exit status, 128+N if it was killed by
 * signal N, 127 if posix_spawnp failed, 2 on usage errors.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Map a wait status to the exit code the shell convention would use. */
static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 127;
}

/* Wait for pid, retrying on EINTR, and return its exit code. */
static int wait_code(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("spawnp: waitpid");
			return 127;
		}
	}
	return status_code(status);
}

static int spawn_and_wait(char **argv)
{
	pid_t pid;
	/* posix_spawnp reports exec failures (e.g. not found on any PATH
	 * entry) as its return value, not through errno. */
	int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);

	if (err != 0) {
		fprintf(stderr, "spawnp: %s: %s\n", argv[0], strerror(err));
		return 127;
	}
	return wait_code(pid);
}

int main(int argc, char **argv)
{
	int first = 1;
	int use_fork = 0;
	pid_t pid;

	if (argc > 1 && strcmp(argv[1], "-fork") == 0) {
		use_fork = 1;
		first++;
	}
	if (first >= argc) {
		fprintf(stderr, "usage: spawnp [-fork] NAME [ARGS...]\n");
		return 2;
	}
	if (!use_fork)
		return spawn_and_wait(argv + first);

	/* Flush before forking so buffered output is not written twice. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("spawnp: fork");
		return 127;
	}
	if (pid == 0)
		_exit(spawn_and_wait(argv + first));
	return wait_code(pid);
}
