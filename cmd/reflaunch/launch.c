/* execvpe is a GNU extension. */
#define _GNU_SOURCE

#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	/* Served by the vDSO: no system call, so it adds little to each sample. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fail_at(struct rl_failure *fail, long i, const char *op, int err,
		   int status)
{
	fail->iteration = i;
	fail->op = op;
	fail->err = err;
	fail->status = status;
	return -1;
}

/* Wait for launch i's child; 0 when it exited 0, else the failure,
 * recorded in fail. *end gets the time it was reaped. */
static int reap(pid_t pid, struct rl_failure *fail, long i, int64_t *end)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return fail_at(fail, i, "waitpid", errno, 0);
	}
	*end = now_ns();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail_at(fail, i, "child", 0, status);
	return 0;
}

/*
 * Both glibc's execvpe and posix_spawnp take the directories to search from
 * the PATH of the calling process (getenv), not from the envp they pass to
 * the new program. So PATH is set in this process for the duration of the
 * loop, before any fork: the forked child sees it in its copy of the
 * environment, and posix_spawnp's child shares our memory anyway. Setting
 * it in the child instead would put a non-async-signal-safe setenv between
 * fork and exec in a multithreaded (Go) process, and inside the timing.
 *
 * The Go runtime never reads or writes the C environment on its own, and
 * reflaunch does not call os.Setenv, so nothing races with this.
 */
static char *swap_path(const char *path, int *had)
{
	const char *old = getenv("PATH");

	*had = old != NULL;
	char *saved = old ? strdup(old) : NULL;
	if (setenv("PATH", path, 1) != 0) {
		free(saved);
		return (char *)-1;
	}
	return saved;
}

static void restore_path(char *saved, int had)
{
	if (had && saved)
		setenv("PATH", saved, 1);
	else
		unsetenv("PATH");
	free(saved);
}

/* What a child of the parts makes before it _exits: the failed execve of
 * paths[0..n-1] (none for the *_EXIT methods). */
struct child_fails {
	char **paths;
	long n;
	char *const *argv, *const *envp;
};

/* The child of the parts: it fails its execve, as execvpe's or
 * posix_spawnp's child does before the one that works, then leaves. A
 * CLONE_VM child shares our memory: it writes nothing but its stack. */
static int fail_then_exit(void *arg)
{
	const struct child_fails *c = arg;

	for (long i = 0; i < c->n; i++)
		execve(c->paths[i], c->argv, c->envp);
	_exit(0);
}

/* The stack of RL_CLONE_VM_EXIT's child, as posix_spawn gives its own. */
enum { CHILD_STACK = 64 * 1024 };

/*
 * measure_parts times the pieces execvpe and spawnp are made of, each
 * alone: a child made by fork or by clone(CLONE_VM|CLONE_VFORK), which
 * _exits at once or after the failed execve of the search, and is
 * reaped; or one failed execve in this process.
 * The failed execve cannot replace this process: the paths are in the
 * directories before the one holding the target, which reflaunch made
 * empty.
 */
static int measure_parts(int method, const char *file,
			 const char *search_path, char *const envp[], long n,
			 int64_t *ns, struct rl_failure *fail)
{
	char *argv[] = { "oncetarget", NULL };
	char **paths = NULL;
	long npaths = 0;
	char *stack = NULL;
	int ret = 0;
	int fails = method == RL_FAILED_EXECVE || method == RL_FORK_FAIL_EXIT ||
		    method == RL_CLONE_VM_FAIL_EXIT;
	int vm = method == RL_CLONE_VM_EXIT || method == RL_CLONE_VM_FAIL_EXIT;

	if (fails) {
		/* Every entry but the last, as dir/file, built before the
		 * loop: only the execve is timed. */
		for (const char *p = search_path; (p = strchr(p, ':')); p++)
			npaths++;
		paths = calloc(npaths ? npaths : 1, sizeof *paths);
		if (!paths)
			return fail_at(fail, -1, "malloc", ENOMEM, 0);
		const char *p = search_path;
		for (long i = 0; i < npaths; i++) {
			const char *end = strchr(p, ':');
			size_t len = (size_t)(end - p);
			paths[i] = malloc(len + strlen(file) + 2);
			if (!paths[i]) {
				ret = fail_at(fail, -1, "malloc", ENOMEM, 0);
				goto out;
			}
			sprintf(paths[i], "%.*s/%s", (int)len, p, file);
			p = end + 1;
		}
		if (npaths == 0)
			goto out;
	}
	if (vm) {
		stack = malloc(CHILD_STACK);
		if (!stack) {
			ret = fail_at(fail, -1, "malloc", ENOMEM, 0);
			goto out;
		}
	}
	struct child_fails child = { paths, fails ? npaths : 0, argv, envp };

	for (long i = 0; i < n; i++) {
		int64_t start = now_ns();
		pid_t pid;

		if (method == RL_FAILED_EXECVE) {
			execve(paths[i % npaths], argv, envp);
			int64_t end = now_ns();
			if (errno != ENOENT) {
				ret = fail_at(fail, i, "execve", errno, 0);
				break;
			}
			ns[i] = end - start;
			continue;
		}
		if (vm) {
			/* posix_spawn blocks every signal around its clone:
			 * no handler may run in the child on our memory. */
			sigset_t all, old;
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &old);
			pid = clone(fail_then_exit, stack + CHILD_STACK,
				    CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
			int err = errno;
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (pid < 0) {
				ret = fail_at(fail, i, "clone", err, 0);
				break;
			}
		} else {
			pid = fork();
			if (pid < 0) {
				ret = fail_at(fail, i, "fork", errno, 0);
				break;
			}
			if (pid == 0)
				fail_then_exit(&child);
		}
		int64_t end;
		if ((ret = reap(pid, fail, i, &end)) != 0)
			break;
		ns[i] = end - start;
	}
out:
	for (long i = 0; paths && i < npaths; i++)
		free(paths[i]);
	free(paths);
	free(stack);
	return ret;
}

int rl_measure(int method, const char *file, const char *search_path,
	       char *const envp[], long n, int64_t *ns,
	       struct rl_failure *fail)
{
	if (method >= RL_FORK_EXIT)
		return measure_parts(method, file, search_path, envp, n, ns,
				     fail);

	/* The target ignores its arguments; argv[0] is its name, as a shell
	 * would pass it. */
	char *argv[] = { "oncetarget", NULL };
	int had;
	char *saved = swap_path(search_path, &had);
	int ret = 0;

	if (saved == (char *)-1)
		return fail_at(fail, -1, "setenv", errno, 0);

	for (long i = 0; i < n; i++) {
		int64_t start = now_ns();
		pid_t pid;

		if (method == RL_POSIX_SPAWNP) {
			int err = posix_spawnp(&pid, file, NULL, NULL, argv,
					       envp);
			if (err != 0) {
				ret = fail_at(fail, i, "posix_spawnp", err, 0);
				break;
			}
		} else {
			pid = fork();
			if (pid < 0) {
				ret = fail_at(fail, i, "fork", errno, 0);
				break;
			}
			if (pid == 0) {
				/*
				 * The child is a copy of one thread of a
				 * multithreaded process, so it may only make
				 * async-signal-safe calls. execve and _exit
				 * are; glibc's execvpe builds each candidate
				 * path on the stack without malloc or locks,
				 * so it is too in practice.
				 */
				if (method == RL_FORK_EXECVPE)
					execvpe(file, argv, envp);
				else
					execve(file, argv, envp);
				_exit(127);
			}
		}

		int64_t end;
		if ((ret = reap(pid, fail, i, &end)) != 0)
			break;
		ns[i] = end - start;
	}
	restore_path(saved, had);
	return ret;
}

int rl_resolve(const char *name, const char *search_path, char *out,
	       size_t outlen, int64_t *ns, int *probes)
{
	int64_t start = now_ns();
	const char *p = search_path;
	int ret = ENOENT;

	*probes = 0;
	for (;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int w;

		/* An empty entry means the current directory, as for execvp. */
		if (len == 0)
			w = snprintf(out, outlen, "./%s", name);
		else
			w = snprintf(out, outlen, "%.*s/%s", (int)len, p, name);
		if (w < 0 || (size_t)w >= outlen) {
			ret = ENAMETOOLONG;
			break;
		}

		/* AT_EACCESS: ask about the ids execve will use, not the real
		 * ones; stat rules out directories, which can have X_OK too. */
		struct stat st;
		(*probes)++;
		if (faccessat(AT_FDCWD, out, X_OK, AT_EACCESS) == 0 &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			ret = 0;
			break;
		}
		if (!end)
			break;
		p = end + 1;
	}
	*ns = now_ns() - start;
	if (ret != 0 && outlen > 0)
		out[0] = '\0';
	return ret;
}
