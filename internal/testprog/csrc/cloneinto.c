/*
 * cloneinto: makes N children with clone3(CLONE_INTO_CGROUP), each
 * started in the cgroup v2 directory CGROUP (not its parent's, as fork
 * would): each opens FILE twice and exits 0 without an exec. The parent
 * waits for each before it makes the next. Exits 1 if clone3 fails.
 *
 * Usage: cloneinto CGROUP FILE N
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cloneinto CGROUP FILE N\n");
		return 2;
	}
	int cg = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0) {
		perror(argv[1]);
		return 1;
	}
	long n = atol(argv[3]);
	for (long i = 0; i < n; i++) {
		struct clone_args a;
		memset(&a, 0, sizeof a);
		a.flags = CLONE_INTO_CGROUP;
		a.exit_signal = SIGCHLD;
		a.cgroup = (unsigned)cg;
		long pid = syscall(SYS_clone3, &a, sizeof a);
		if (pid < 0) {
			perror("clone3");
			return 1;
		}
		if (pid == 0) {
			for (int k = 0; k < 2; k++) {
				int fd = open(argv[2], O_RDONLY);
				if (fd >= 0)
					close(fd);
			}
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	}
	return 0;
}
