/*
 * internalnames: opens files no mount reaches, the way programs do, and
 * prints the names /proc gives them. It makes a pipe and opens its read
 * end again through /proc/self/fd/N twice (printing "pipe NAME", NAME as
 * readlink of /proc/self/fd/N shows it), then copies EXE (an ELF program)
 * into a memfd named "oncetest", prints "memfd NAME" and executes the
 * memfd (execveat with AT_EMPTY_PATH, as fexecve does), which runs EXE's
 * code under the name "/memfd:oncetest (deleted)". Given FILE, it first
 * opens FILE, deletes it and opens it again through /proc/self/fd/N
 * (printing "deleted NAME": "FILE (deleted)"). Static: no loader opens.
 *
 * Usage: internalnames EXE [FILE]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void link_of(int fd, char *buf, size_t n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t l = readlink(p, buf, n - 1);
	if (l < 0) {
		perror(p);
		exit(1);
	}
	buf[l] = 0;
}

int main(int argc, char **argv)
{
	char name[4096], p[64];
	int pfd[2];

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: internalnames EXE [FILE]\n");
		return 2;
	}
	if (argc == 3) {
		int fd = openat(AT_FDCWD, argv[2], O_RDONLY);
		if (fd < 0 || unlink(argv[2]) < 0) {
			perror(argv[2]);
			return 1;
		}
		link_of(fd, name, sizeof(name));
		printf("deleted %s\n", name);
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		int again = openat(AT_FDCWD, p, O_RDONLY);
		if (again < 0) {
			perror(p);
			return 1;
		}
		close(again);
		close(fd);
	}
	int ns = openat(AT_FDCWD, "/proc/self/ns/net", O_RDONLY);
	if (ns < 0) {
		perror("/proc/self/ns/net");
		return 1;
	}
	link_of(ns, name, sizeof(name));
	printf("ns %s\n", name);
	close(ns);
	if (pipe(pfd) < 0) {
		perror("pipe");
		return 1;
	}
	link_of(pfd[0], name, sizeof(name));
	printf("pipe %s\n", name);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd[0]);
	for (int i = 0; i < 2; i++) {
		int fd = openat(AT_FDCWD, p, O_RDONLY | O_NONBLOCK);
		if (fd < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}

	int in = openat(AT_FDCWD, argv[1], O_RDONLY);
	if (in < 0) {
		perror(argv[1]);
		return 1;
	}
	int mfd = memfd_create("oncetest", 0);
	if (mfd < 0) {
		perror("memfd_create");
		return 1;
	}
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(mfd, buf, n) != n) {
			perror("write");
			return 1;
		}
	}
	close(in);
	link_of(mfd, name, sizeof(name));
	printf("memfd %s\n", name);
	fflush(stdout);
	char *args[] = {argv[1], NULL};
	char *env[] = {NULL};
	syscall(SYS_execveat, mfd, "", args, env, AT_EMPTY_PATH);
	perror("execveat");
	return 1;
}
