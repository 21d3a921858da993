/*
 * uringopen: opens files through io_uring, with raw syscalls (no
 * liburing), one request at a time, each waited for:
 *
 *   1. FILE with IORING_OP_OPENAT, issued inline (at submission)
 *   2. FILE with IORING_OP_OPENAT2 and IOSQE_ASYNC, so an io-wq worker
 *      thread runs it
 *   3. MISSING with IORING_OP_OPENAT: fails (ENOENT)
 *
 * No open(2) or openat(2) of either name is made: a syscall tracer sees
 * none of them. With "fixed", 1 and 2 open into the ring's fixed-file
 * table (slot 0 by index, the other allocated by the kernel) instead of
 * the process's fd table. With "sqpoll", the ring has a kernel thread
 * (IORING_SETUP_SQPOLL) that takes the requests from the ring itself.
 * With "syscall", FILE is opened once more after 2, with openat(2): the
 * one open a syscall tracer sees. With "syscall-first", that openat(2)
 * comes before 1 instead: the process's first open of FILE is a syscall,
 * its repeats io_uring's. With "statx", after 3 it looks names up with
 * IORING_OP_STATX (mask STATX_BASIC_STATS), each waited for:
 *
 *   4. FILE (succeeds)
 *   5. MISSING, twice (each fails: ENOENT)
 *   6. "" with AT_EMPTY_PATH on 1's fd: an fstat, which names no file
 *   7. FILE's basename, relative to the cwd, after chdir to its directory
 *      (FILE must be absolute)
 *
 * No stat, statx or access syscall names either file.
 *
 * With "search" MISSING2 instead, a search whose misses are io_uring's:
 * FILE opened 300 times with openat(2) (repeats a tracer may count),
 * then MISSING and MISSING2 (two directories, FILE's basename) tried
 * with IORING_OP_OPENAT, each failing (ENOENT), then FILE opened once
 * more with openat(2): the find that ends the search.
 *
 * Prints each request's result (the CQE's res) on a line. Exits 0 when
 * 1 and 2 succeeded and 3 failed (and with "statx", 4, 6 and 7 succeeded
 * and 5 failed), 77 when io_uring is not available (disabled, or not
 * built in), 1 otherwise.
 *
 * Usage: uringopen FILE MISSING [fixed|sqpoll|syscall|syscall-first|statx|search MISSING2]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ring_fd;
static unsigned *sq_tail, *sq_mask, *sq_array, *sq_flags;
static unsigned *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
static int sqpoll;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void setup(unsigned flags)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	p.flags = flags;
	ring_fd = syscall(__NR_io_uring_setup, 4, &p);
	if (ring_fd < 0) {
		perror("io_uring_setup");
		exit(errno == ENOSYS || errno == EPERM ? 77 : 1);
	}
	size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (cq_size > sq_size)
		sq_size = cq_size; /* IORING_FEAT_SINGLE_MMAP: one map for both */
	char *sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd,
			IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		die("mmap sq");
	char *cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd,
			  IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			die("mmap cq");
	}
	sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQES);
	if (sqes == MAP_FAILED)
		die("mmap sqes");
	sq_tail = (unsigned *)(sq + p.sq_off.tail);
	sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	sq_array = (unsigned *)(sq + p.sq_off.array);
	sq_flags = (unsigned *)(sq + p.sq_off.flags);
	cq_head = (unsigned *)(cq + p.cq_off.head);
	cq_tail = (unsigned *)(cq + p.cq_off.tail);
	cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/* Submit sqe and wait for its completion; returns its res. */
static int run(const struct io_uring_sqe *sqe)
{
	unsigned tail = *sq_tail, idx = tail & *sq_mask;
	unsigned enter_flags = IORING_ENTER_GETEVENTS;

	sqes[idx] = *sqe;
	sq_array[idx] = idx;
	__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (sqpoll && (__atomic_load_n(sq_flags, __ATOMIC_ACQUIRE) & IORING_SQ_NEED_WAKEUP))
		enter_flags |= IORING_ENTER_SQ_WAKEUP;
	if (syscall(__NR_io_uring_enter, ring_fd, sqpoll ? 0 : 1, 1, enter_flags, NULL, 0) < 0)
		die("io_uring_enter");
	for (;;) {
		unsigned head = *cq_head;
		if (head != __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
			int res = cqes[head & *cq_mask].res;
			__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
			return res;
		}
		if (syscall(__NR_io_uring_enter, ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
			die("io_uring_enter");
	}
}

/* One IORING_OP_STATX of name relative to dfd; returns its res. */
static int statx_req(int dfd, const char *name, int flags, struct statx *stx)
{
	struct io_uring_sqe sqe;

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_STATX;
	sqe.fd = dfd;
	sqe.addr = (unsigned long)name;
	sqe.len = STATX_BASIC_STATS;
	sqe.statx_flags = flags;
	sqe.addr2 = (unsigned long)stx;
	return run(&sqe);
}

/* The lookups of "statx" (4 to 7 above); whether each did as it should. */
static int lookups(const char *file, const char *missing, int fd)
{
	struct statx stx;
	char dir[4096];
	const char *base = strrchr(file, '/') + 1;
	int res[5];

	res[0] = statx_req(AT_FDCWD, file, 0, &stx);
	res[1] = statx_req(AT_FDCWD, missing, 0, &stx);
	res[2] = statx_req(AT_FDCWD, missing, 0, &stx);
	res[3] = statx_req(fd, "", AT_EMPTY_PATH, &stx);
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - file), file);
	if (chdir(dir) < 0)
		die(dir);
	res[4] = statx_req(AT_FDCWD, base, 0, &stx);
	for (int i = 0; i < 5; i++)
		printf("%d\n", res[i]);
	return res[0] == 0 && res[1] == -ENOENT && res[2] == -ENOENT && res[3] == 0 && res[4] == 0;
}

/*
 * "prepfail": requests that fail in their prep, before the kernel has a
 * copy of their name: an IORING_OP_OPENAT of a name of 5,000 bytes
 * (ENAMETOOLONG) and of an address not mapped (EFAULT), an
 * IORING_OP_STATX of the long name, an IORING_OP_OPENAT with an SQE flag
 * that does not exist (EINVAL, before the open's own prep); whether each
 * failed as it should.
 */
static int prep_failures(void)
{
	static char name[5001];
	struct io_uring_sqe sqe;
	struct statx stx;
	int res[4];

	memset(name, 'n', sizeof(name) - 1);
	name[0] = '/';
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_OPENAT;
	sqe.fd = AT_FDCWD;
	sqe.addr = (unsigned long)name;
	sqe.open_flags = O_RDONLY | O_CLOEXEC;
	res[0] = run(&sqe);
	sqe.addr = 1;
	res[1] = run(&sqe);
	res[2] = statx_req(AT_FDCWD, name, 0, &stx);
	/* A relative name refused before its opcode's prep (a flag no SQE
	 * has: EINVAL), in a request whose last use tried fd 0. The name is
	 * written here, not a literal: the kernel never copies it, so
	 * nothing faults its page in, and a literal's page of .rodata may
	 * not be mapped yet when the hook reads it (a tracepoint cannot
	 * fault), which would make it unreadable by chance. */
	static char refused[8];
	strcpy(refused, "refused");
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_OPENAT;
	sqe.fd = AT_FDCWD;
	sqe.addr = (unsigned long)refused;
	sqe.flags = 0x80;
	res[3] = run(&sqe);
	for (int i = 0; i < 4; i++)
		printf("%d\n", res[i]);
	return res[0] == -ENAMETOOLONG && res[1] == -EFAULT && res[2] == -ENAMETOOLONG && res[3] == -EINVAL;
}

/* "search": see the top. */
static int search(const char *file, const char *miss1, const char *miss2)
{
	const char *miss[2] = { miss1, miss2 };
	struct io_uring_sqe sqe;
	int fd, ok = 1;

	for (int i = 0; i < 300; i++) {
		if ((fd = openat(AT_FDCWD, file, O_RDONLY | O_CLOEXEC)) < 0)
			die(file);
		close(fd);
	}
	for (int j = 0; j < 2; j++) {
		memset(&sqe, 0, sizeof(sqe));
		sqe.opcode = IORING_OP_OPENAT;
		sqe.fd = AT_FDCWD;
		sqe.addr = (unsigned long)miss[j];
		sqe.open_flags = O_RDONLY | O_CLOEXEC;
		int r = run(&sqe);
		printf("%d\n", r);
		ok = ok && r == -ENOENT;
	}
	if ((fd = openat(AT_FDCWD, file, O_RDONLY | O_CLOEXEC)) < 0)
		die(file);
	close(fd);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct io_uring_sqe sqe;
	struct open_how how;
	int fixed = 0, then_syscall = 0, first_syscall = 0, statx_mode = 0, prepfail = 0, search_mode = 0, res[3];

	if (argc == 4 && !strcmp(argv[3], "fixed"))
		fixed = 1;
	else if (argc == 4 && !strcmp(argv[3], "sqpoll"))
		sqpoll = 1;
	else if (argc == 4 && !strcmp(argv[3], "syscall"))
		then_syscall = 1;
	else if (argc == 4 && !strcmp(argv[3], "syscall-first"))
		first_syscall = 1;
	else if (argc == 4 && !strcmp(argv[3], "statx") && argv[1][0] == '/')
		statx_mode = 1;
	else if (argc == 4 && !strcmp(argv[3], "prepfail"))
		prepfail = 1;
	else if (argc == 5 && !strcmp(argv[3], "search"))
		search_mode = 1;
	else if (argc != 3) {
		fprintf(stderr, "usage: uringopen FILE MISSING [fixed|sqpoll|syscall|syscall-first|statx|prepfail|search MISSING2]\n");
		return 2;
	}
	setup(sqpoll ? IORING_SETUP_SQPOLL : 0);
	if (search_mode)
		return search(argv[1], argv[2], argv[4]);
	if (fixed) {
		int none[2] = {-1, -1}; /* a sparse table of two slots */
		if (syscall(__NR_io_uring_register, ring_fd, IORING_REGISTER_FILES, none, 2) < 0)
			die("io_uring_register");
	}

	if (first_syscall && openat(AT_FDCWD, argv[1], O_RDONLY | O_CLOEXEC) < 0)
		die(argv[1]);
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_OPENAT;
	sqe.fd = AT_FDCWD;
	sqe.addr = (unsigned long)argv[1];
	sqe.open_flags = fixed ? O_RDONLY : O_RDONLY | O_CLOEXEC;
	sqe.file_index = fixed ? 1 : 0; /* slot 0 */
	res[0] = run(&sqe);

	memset(&how, 0, sizeof(how));
	how.flags = fixed ? O_RDONLY : O_RDONLY | O_CLOEXEC;
	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_OPENAT2;
	sqe.flags = IOSQE_ASYNC;
	sqe.fd = AT_FDCWD;
	sqe.addr = (unsigned long)argv[1];
	sqe.addr2 = (unsigned long)&how;
	sqe.len = sizeof(how);
	sqe.file_index = fixed ? IORING_FILE_INDEX_ALLOC : 0;
	res[1] = run(&sqe);
	if (then_syscall && openat(AT_FDCWD, argv[1], O_RDONLY | O_CLOEXEC) < 0)
		die(argv[1]);

	memset(&sqe, 0, sizeof(sqe));
	sqe.opcode = IORING_OP_OPENAT;
	sqe.fd = AT_FDCWD;
	sqe.addr = (unsigned long)argv[2];
	sqe.open_flags = O_RDONLY | O_CLOEXEC;
	res[2] = run(&sqe);

	for (int i = 0; i < 3; i++)
		printf("%d\n", res[i]);
	if (prepfail)
		return res[0] >= 0 && res[1] >= 0 && res[2] == -ENOENT && prep_failures() ? 0 : 1;
	if (statx_mode)
		return res[0] >= 0 && res[1] >= 0 && res[2] == -ENOENT && lookups(argv[1], argv[2], res[0]) ? 0 : 1;
	return res[0] >= 0 && res[1] >= 0 && res[2] == -ENOENT ? 0 : 1;
}
