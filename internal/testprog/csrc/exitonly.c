/*
 * exitonly: a program with no C library and no language runtime that does
 * nothing but exit(0). As an exec target it makes no open or exec calls of
 * its own after the execve, so a trace of it contains exactly what the
 * caller did.
 *
 * Build: gcc -nostdlib -static -O2 -o exitonly exitonly.c
 */

__attribute__((noreturn, used)) void _start(void)
{
#if defined(__x86_64__)
	/* exit_group(0): like libc's _exit, ends every thread of the process. */
	__asm__ volatile("syscall" : : "a"(231), "D"(0) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long nr __asm__("x8") = 94; /* exit_group */
	register long code __asm__("x0") = 0;

	__asm__ volatile("svc #0" : : "r"(nr), "r"(code) : "memory");
#else
#error "exitonly: unsupported architecture (x86_64 and aarch64 only)"
#endif
	/* The syscall does not return; keep the compiler from falling off. */
	for (;;)
		;
}
