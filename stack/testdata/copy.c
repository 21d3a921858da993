// copy.c: one file opened from three call sites through two levels of
// calls, the shape of a cp that probes its source before copying it.
// Built -O2 -fomit-frame-pointer -g: unwinding needs the CFI.
// With -DINLINE_SPARSE, check_sparse is inlined into copy_file, so one
// address stands for two frames.
#include <fcntl.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#ifdef INLINE_SPARSE
#define SPARSE static inline __attribute__((always_inline))
#else
#define SPARSE NOINLINE
#endif

volatile int sink;

NOINLINE int check_for_data(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	sink += fd;
	return fd;
}

SPARSE int check_sparse(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	sink += 2 * fd;
	return fd;
}

NOINLINE int do_copy(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY);
	if (fd >= 0) {
		sink += read(fd, buf, sizeof buf);
		close(fd);
	}
	sink += 3 * fd;
	return fd;
}

NOINLINE int copy_file(const char *path)
{
	int r = check_for_data(path);
	sink += r;
	r += check_sparse(path);
	sink += r;
	r += do_copy(path);
	sink += r;
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int r = copy_file(argv[1]);
	sink += r;
	return r < 0;
}
