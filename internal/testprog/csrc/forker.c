/*
 * forker: process churn for the bounded-memory tests. Forks N children,
 * one after the other; each opens FILE twice (a duplicate open, so every
 * child is a row the live table must hold and then let go) and exits.
 *
 * Usage: forker N FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: forker N FILE\n");
		return 2;
	}
	long n = strtol(argv[1], NULL, 10);
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(open(argv[2], O_RDONLY));
			close(open(argv[2], O_RDONLY));
			_exit(0);
		}
		int status;
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "child %ld failed\n", i);
			return 1;
		}
	}
	return 0;
}
