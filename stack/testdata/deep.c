// deep.c: 200 levels of recursion, then one open: the stack at the
// syscall is deeper than an 8 KiB window, so unwinding is cut short.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int open_it(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	return fd;
}

NOINLINE int recurse(const char *path, int n)
{
	volatile char pad[96];
	pad[n % sizeof pad] = (char)n;
	if (n == 0)
		return open_it(path) + pad[0];
	int r = recurse(path, n - 1);
	sink += r + pad[n % sizeof pad];
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int n = argc > 2 ? atoi(argv[2]) : 200;
	int r = recurse(argv[1], n);
	sink += r;
	return 0;
}
