/*
 * The measured loops of reflaunch, in C so that what is timed is glibc's own
 * fork, execvpe, posix_spawnp and execve, with no cgo transition or Go
 * runtime work inside an iteration. Go makes one call per strategy.
 */
#ifndef REFLAUNCH_LAUNCH_H
#define REFLAUNCH_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

/* How each iteration starts the target. */
enum rl_method {
	RL_FORK_EXECVPE = 1, /* fork, then execvpe(name): glibc's PATH search */
	RL_POSIX_SPAWNP = 2, /* posix_spawnp(name): glibc's PATH search */
	RL_FORK_EXECVE  = 3, /* fork, then execve(path): no search */
	/* The parts the strategies are made of, timed alone: */
	RL_FORK_EXIT     = 4, /* fork, the child _exits at once */
	RL_CLONE_VM_EXIT = 5, /* clone(CLONE_VM|CLONE_VFORK) as posix_spawn
				 makes its child, which _exits at once */
	RL_FAILED_EXECVE = 6, /* one execve that fails with ENOENT, in this
				 process: file in each search_path entry but
				 the last, in turn */
	RL_FORK_FAIL_EXIT     = 7, /* RL_FORK_EXIT, the child first failing
				      the execve of each such path */
	RL_CLONE_VM_FAIL_EXIT = 8, /* the same for RL_CLONE_VM_EXIT */
};

/* Why a measurement stopped early. op is a static string, or NULL. */
struct rl_failure {
	long iteration; /* 0-based iteration that failed */
	const char *op; /* "fork", "clone", "posix_spawnp", "waitpid", "child",
			   "setenv", "execve", "malloc" */
	int err;        /* errno value for a failed call, else 0 */
	int status;     /* wait status of the child when op is "child" */
};

/*
 * rl_measure runs n iterations of method and stores the duration of each,
 * in nanoseconds from before the fork or spawn until waitpid has reaped the
 * child, in ns[0..n-1]. file is the name to search for (RL_FORK_EXECVPE,
 * RL_POSIX_SPAWNP, RL_FAILED_EXECVE) or the path to execute
 * (RL_FORK_EXECVE); the *_EXIT methods start no program. search_path is
 * the PATH that the search uses; envp is the target's environment. The
 * child must exit 0. Returns 0, or -1 with *fail filled in.
 */
int rl_measure(int method, const char *file, const char *search_path,
	       char *const envp[], long n, int64_t *ns,
	       struct rl_failure *fail);

/*
 * rl_resolve looks name up in search_path once, as a launcher that caches
 * its PATH lookup would: the first entry where dir/name is a regular file
 * executable by the effective ids. It writes the path to out and the time
 * the lookup took to *ns, and counts the entries it probed in *probes.
 * Returns 0, ENOENT if no entry has it, or ENAMETOOLONG.
 */
int rl_resolve(const char *name, const char *search_path, char *out,
	       size_t outlen, int64_t *ns, int *probes);

#endif
