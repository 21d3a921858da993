/*
 * renameopen: opens the same names again while the directories above
 * them are renamed, as a test of opens sent without their strings (an
 * open that repeats the thread's last one): every open's path must be the
 * one it resolved to then. Waits for stdin to close first, then in ROOT
 * (which holds a/sub/f), from the directory ROOT/a as its cwd:
 *
 *   open sub/f x3; rename a -> b; open x2; rename b -> a; open x2;
 *   rename a -> LONG (a 39-byte name); open x2; rename LONG -> a;
 *   open sub/g (a hard link to f, named in the same buffer) x2; open x1
 *   of sub/f again; rename sub/f.next (another file, which ROOT/a/sub
 *   must hold) over sub/f; open x2; open x2 with
 *   O_RDWR; set its comm to renameopen2; open x2 (with O_RDWR).
 *
 * Those last steps change only what the path does not show: the file, the
 * flags, the task. Each open after one is sent in full, then repeated.
 *
 * Prints nothing; the test knows the sequence. Usage: renameopen ROOT
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define LONG "a-directory-name-of-forty-bytes-long-xx"

static char buf[64];

static int flags = O_RDONLY | O_CLOEXEC;

static int opens(int n)
{
	for (int i = 0; i < n; i++) {
		int fd = openat(AT_FDCWD, buf, flags);
		if (fd < 0) {
			perror(buf);
			return 1;
		}
		close(fd);
	}
	return 0;
}

static int mv(const char *root, const char *from, const char *to)
{
	char a[4096], b[4096];

	snprintf(a, sizeof a, "%s/%s", root, from);
	snprintf(b, sizeof b, "%s/%s", root, to);
	if (rename(a, b)) {
		perror(a);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char c, dir[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: renameopen ROOT\n");
		return 2;
	}
	while (read(0, &c, 1) > 0)
		;
	snprintf(dir, sizeof dir, "%s/a", argv[1]);
	if (chdir(dir)) {
		perror(dir);
		return 1;
	}
	strcpy(buf, "sub/f");
	if (opens(3) || mv(argv[1], "a", "b") || opens(2) || mv(argv[1], "b", "a") || opens(2) ||
	    mv(argv[1], "a", LONG) || opens(2) || mv(argv[1], LONG, "a"))
		return 1;
	strcpy(buf, "sub/g");
	if (opens(2))
		return 1;
	strcpy(buf, "sub/f");
	if (opens(1))
		return 1;
	if (rename("sub/f.next", "sub/f")) {
		perror("sub/f.next");
		return 1;
	}
	if (opens(2))
		return 1;
	flags = O_RDWR | O_CLOEXEC;
	if (opens(2))
		return 1;
	if (prctl(PR_SET_NAME, "renameopen2")) {
		perror("prctl");
		return 1;
	}
	return opens(2);
}
