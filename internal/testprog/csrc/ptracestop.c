/*
 * ptracestop: a tracer whose tracee's last open never runs. The child
 * (traced with PTRACE_TRACEME) opens FILE N times, then once more; the
 * parent stops it with PTRACE_SYSCALL at the entry of that last openat
 * and, in mode "kill", SIGKILLs it there: the kernel skips a call whose
 * thread has a fatal signal at its entry stop, yet the call's exit
 * tracepoint runs (strace -f, the tracer here, shows "openat(...) = ?").
 * In mode "emu" it stops the child with PTRACE_SYSEMU instead, which
 * skips every call it stops (a tracer emulating them, as gVisor and UML
 * do), answers that openat with -ENOENT and lets the child run on, still
 * traced, to its exit. Either way the
 * kernel ran N opens of FILE, and the child's last one was no call.
 * Exits 0 when the child ended as the mode says.
 *
 * Usage: ptracestop kill|emu FILE N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "kill") && strcmp(argv[1], "emu"))) {
		fprintf(stderr, "usage: ptracestop kill|emu FILE N\n");
		return 2;
	}
	int emu = !strcmp(argv[1], "emu");
	long n = atol(argv[3]);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(3);
		raise(SIGSTOP);
		for (long i = 0; i <= n; i++) {
			int fd = open(argv[2], O_RDONLY);
			if (fd >= 0)
				close(fd);
		}
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
		return 1;
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	long entries = 0; /* openat entries seen */
	int entering = 1; /* PTRACE_SYSCALL stops alternate entry, exit */
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, 0) < 0)
			return 1;
		if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
			return 1;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80))
			continue;
		struct user_regs_struct regs;
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
			return 1;
		int was_entry = entering;
		entering = !entering;
		if (regs.orig_rax != SYS_openat)
			continue;
		if (was_entry)
			entries++;
		else if (entries == n)
			break; /* at the exit of the Nth openat: the next is the last */
	}
	if (!emu) {
		/* Stop at the next entry, the last openat's, and kill there. */
		for (;;) {
			if (ptrace(PTRACE_SYSCALL, pid, 0, 0) < 0 || waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
				return 1;
			struct user_regs_struct regs;
			if (WSTOPSIG(st) == (SIGTRAP | 0x80) && ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 &&
			    regs.orig_rax == SYS_openat)
				break;
		}
		kill(pid, SIGKILL);
		if (waitpid(pid, &st, 0) < 0)
			return 1;
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 1;
	}
	/* Past the close after it (its entry stop, then its exit stop),
	 * PTRACE_SYSEMU: the next stop is the last openat's entry, which the
	 * kernel then skips; answer it and let the child go. */
	for (int stops = 0; stops < 2;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, 0) < 0 || waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
			return 1;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80))
			stops++;
	}
	struct user_regs_struct regs;
	if (ptrace(PTRACE_SYSEMU, pid, 0, 0) < 0 || waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0 || regs.orig_rax != SYS_openat)
		return 1;
	regs.rax = -ENOENT;
	if (ptrace(PTRACE_SETREGS, pid, 0, &regs) < 0)
		return 1;
	/* Still its tracer (as an emulator stays), without stops. */
	if (ptrace(PTRACE_CONT, pid, 0, 0) < 0)
		return 1;
	for (;;) {
		if (waitpid(pid, &st, 0) < 0)
			return 1;
		if (!WIFSTOPPED(st))
			break;
		if (ptrace(PTRACE_CONT, pid, 0, WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)) < 0)
			return 1;
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
