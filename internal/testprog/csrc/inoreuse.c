/*
 * inoreuse: makes a filesystem give a freed inode number to a new file,
 * and opens both files, each twice, the way git's lock files do.
 *
 *   DIR/a        made (open O_CREAT), then opened again (O_RDONLY)
 *   DIR/a.lock   made, then renamed over DIR/a: the file a was is freed
 *   DIR/b        made, then opened again: on ext4 and xfs it has the
 *                number a had
 *   DIR/c        made in the place of DIR/b, which is deleted first (the
 *                plain unlink and create), then opened again
 *
 * Every open is openat. Prints one line per file made, "NAME INO", so the
 * caller can tell whether the numbers were reused on this filesystem.
 *
 * Usage: inoreuse DIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[4096];

static const char *at(const char *dir, const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* Make dir/name with a few bytes in it, print its inode number, open it
 * again. */
static void make(const char *dir, const char *name, int reopen)
{
	struct stat st;
	int fd = openat(AT_FDCWD, at(dir, name), O_CREAT | O_EXCL | O_WRONLY, 0644);

	if (fd < 0 || write(fd, name, strlen(name)) < 0 || fstat(fd, &st) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
	printf("%s %llu\n", name, (unsigned long long)st.st_ino);
	if (!reopen)
		return;
	fd = openat(AT_FDCWD, at(dir, name), O_RDONLY);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	char from[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: inoreuse DIR\n");
		return 2;
	}
	const char *dir = argv[1];
	make(dir, "a", 1);
	make(dir, "a.lock", 0);
	snprintf(from, sizeof(from), "%s/a.lock", dir);
	if (rename(from, at(dir, "a")) < 0) {
		perror("rename");
		return 1;
	}
	/* Let a filesystem that frees inodes lazily (xfs's inodegc, ext4's
	 * orphan list at close) be done with the old one. */
	sync();
	make(dir, "b", 1);
	if (unlink(at(dir, "b")) < 0) {
		perror(path);
		return 1;
	}
	sync();
	make(dir, "c", 1);
	return 0;
}
