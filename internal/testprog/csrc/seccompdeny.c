/*
 * seccompdeny: calls that a seccomp filter answers before the kernel runs
 * them. It installs a filter that answers openat2 with ENOSYS and
 * faccessat2 with EPERM (as container runtimes older than those calls
 * did), then makes each of them N times (argv[2], default 3) on FILE
 * (argv[1]), and one plain openat of FILE each time, which the filter
 * lets by. strace -f shows every call; the kernel's syscall entry
 * tracepoints see only the openats.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seccompdeny FILE [N]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 3;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_faccessat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct {
			unsigned long long flags, mode, resolve;
		} how = {O_RDONLY, 0, 0};
		if (syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof how) != -1 || errno != ENOSYS)
			return 3;
		if (syscall(SYS_faccessat2, AT_FDCWD, argv[1], R_OK, 0) != -1 || errno != EPERM)
			return 3;
		int fd = syscall(SYS_openat, AT_FDCWD, argv[1], O_RDONLY, 0);
		if (fd < 0)
			return 4;
		close(fd);
	}
	return 0;
}
