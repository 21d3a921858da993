/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The programs of execve and execveat.
 */
#ifndef ONCE_EXEC_BPF_H
#define ONCE_EXEC_BPF_H

#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"
#include "task.bpf.h"
#include "path.bpf.h"
#include "image_files.bpf.h"
#include "stack.bpf.h"

struct argv_ctx {
	struct exec_buf *eb;
	const char *const *argv;
	__u32 base; /* where argv starts in eb->data: after the filename */
	__u32 off;
	__u32 argc;
	__u16 status;
	bool done;
	__u64 fault; /* the address whose read failed */
};

/* One argument of read_argv. */
static long argv_step(__u64 i, struct argv_ctx *c)
{
	struct exec_buf *eb = c->eb;
	const char *arg = NULL;
	long n;

	if (bpf_probe_read_user(&arg, sizeof(arg), &c->argv[i])) {
		c->status |= ST_ARGV_UNREADABLE;
		c->fault = (__u64)&c->argv[i];
		goto done;
	}
	if (!arg)
		goto done;
	if (c->off >= ONCE_ARGS_MAX) {
		c->status |= ST_ARGV_TRUNCATED;
		goto done;
	}
	/* Masked once, used for both: the verifier must see the bound on
	 * the very register that computes the size. */
	__u32 at = c->off;
	barrier_var(at);
	at &= ONCE_ARGS_MAX - 1;
	n = bpf_probe_read_user_str(&eb->data[(c->base & (ONCE_PATH_MAX - 1)) + at],
				    ONCE_ARGS_MAX - at, arg);
	if (n <= 0) {
		c->status |= ST_ARGV_UNREADABLE;
		c->fault = (__u64)arg;
		goto done;
	}
	c->off += n;
	c->argc++;
	if (c->off >= ONCE_ARGS_MAX) {
		/* Filled up: the last argument may be cut. */
		c->status |= ST_ARGV_TRUNCATED;
		goto done;
	}
	return 0;
done:
	c->done = true;
	return 1;
}

/* One entry past those kept of an argv cut short: counted, not read, so
 * that argc is the entries the exec was given (as strace -v lists them). */
static long argv_count_step(__u64 i, struct argv_ctx *c)
{
	const char *arg = NULL;

	if (bpf_probe_read_user(&arg, sizeof(arg), &c->argv[c->argc]) || !arg)
		return 1;
	c->argc++;
	return 0;
}

/*
 * Read argv (user memory of the current task) into eb->data, right after
 * the filename. A bpf_loop, not a bounded loop: the verifier checks the
 * step once instead of 64 times, in each of the programs that read argv
 * (unrolled, they were a fifth of once's start-up).
 */
__noinline __u64 read_argv(struct exec_buf *eb, __u64 argv_addr)
{
	const char *const *argv = (const char *const *)argv_addr;
	struct argv_ctx c = { .eb = eb, .argv = argv };

	if (!eb)
		return 0;
	c.base = eb->ev.fname_len;
	eb->ev.hdr.status &= ~(ST_ARGV_TRUNCATED | ST_ARGV_UNREADABLE);
	bpf_loop(ONCE_ARGC_MAX, argv_step, &c, 0);
	if (!c.done) {
		/* ONCE_ARGC_MAX kept: cut if there is another one. */
		const char *arg = NULL;
		bpf_probe_read_user(&arg, sizeof(arg), &argv[ONCE_ARGC_MAX]);
		if (arg)
			c.status |= ST_ARGV_TRUNCATED;
	}
	/* Cut: the entries past those kept are counted, up to
	 * ONCE_ARGC_COUNT_MAX (pointers only, 8 bytes each). */
	if ((c.status & ST_ARGV_TRUNCATED) && !(c.status & ST_ARGV_UNREADABLE))
		bpf_loop(ONCE_ARGC_COUNT_MAX, argv_count_step, &c, 0);
	eb->ev.hdr.status |= c.status;
	eb->ev.argc = c.argc;
	eb->ev.args_len = c.off > ONCE_ARGS_MAX ? ONCE_ARGS_MAX : c.off;
	return c.fault;
}

static __always_inline void read_exec_fname(struct exec_buf *eb, const char *fname)
{
	__u16 st = 0;
	long n = read_user_name(eb->data, fname, 0, &st);

	eb->ev.hdr.status &= ~(ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE);
	if (n < 0) {
		eb->ev.hdr.status |= ST_FNAME_UNREADABLE;
		n = 0;
	}
	eb->ev.hdr.status |= st;
	eb->ev.fname_len = n;
}

#define AT_EMPTY_PATH 0x1000
#define ST_EXEC_PATH (ST_PATH_IS_BASE | ST_PATH_TRUNCATED | ST_PATH_UNRESOLVED | ST_PATH_INTERNAL)

/*
 * Append, after argv, where the exec looks its filename up, as send_open
 * keeps it for a failed open: a relative name's directory (the dirfd's,
 * or the cwd's; ST_PATH_IS_BASE), or an AT_EMPTY_PATH exec's own file
 * (fexecve). Without it the attempts of a search through descriptors of
 * its directories are one name, tried over and over. Walked at the
 * entry, where the descriptors are still the caller's (a successful exec
 * closes the O_CLOEXEC ones), and again at a failed exec's exit when the
 * strings are sent there.
 */
__noinline int exec_path(struct scratch *s, struct exec_buf *eb, __s32 dirfd, __u32 at_flags)
{
	__u32 flen, start = 0, at;
	struct dentry *d = NULL;
	struct vfsmount *m = NULL;
	__u16 st;
	bool self;

	if (!s || !eb)
		return 0;
	flen = eb->ev.fname_len;
	eb->ev.hdr.status &= ~ST_EXEC_PATH;
	eb->ev.path_len = 0;
	if (eb->ev.hdr.status & ST_FNAME_UNREADABLE)
		return 0;
	self = flen == 0 && (at_flags & AT_EMPTY_PATH);
	if (!self && (flen == 0 || eb->data[0] == '/'))
		return 0;
	if (dirfd == AT_FDCWD) {
		struct fs_struct *fs = current_task()->fs;
		d = BPF_CORE_READ(fs, pwd.dentry);
		m = BPF_CORE_READ(fs, pwd.mnt);
	} else {
		struct file *f = current_fd_file(dirfd);
		if (!f)
			return 0;
		d = BPF_CORE_READ(f, f_path.dentry);
		m = BPF_CORE_READ(f, f_path.mnt);
	}
	if (!d || !m)
		return 0;
	st = walk_path(d, m, &start);
	if (!self)
		st |= ST_PATH_IS_BASE;
	eb->ev.hdr.status |= st;
	/* flen < ONCE_PATH_MAX, args_len <= ONCE_ARGS_MAX: the mask keeps
	 * every sum, and bounds it for the verifier. */
	at = (flen + eb->ev.args_len) & (ONCE_PATH_MAX + ONCE_ARGS_MAX - 1);
	eb->ev.path_len = copy_path(&eb->data[at], &s->path, start);
	return 0;
}

#define ST_EXEC_STRINGS (ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE | ST_ARGV_TRUNCATED | ST_ARGV_UNREADABLE)

/* The size of eb sent: flen, plen < ONCE_PATH_MAX and alen <= ONCE_ARGS_MAX. The
 * mask bounds the size for the verifier and keeps every value it can take
 * (it must be a power of two less one: a mask with a hole in it cuts the
 * size of a filename and argv of 4 KiB or more). */
static __always_inline __u64 exec_size(struct exec_buf *eb)
{
	__u32 flen = eb->ev.fname_len & (ONCE_PATH_MAX - 1);
	__u32 alen = eb->ev.args_len & (ONCE_ARGS_MAX * 2 - 1);
	__u32 plen = eb->ev.path_len & (ONCE_PATH_MAX - 1);

	if (alen > ONCE_ARGS_MAX)
		alen = ONCE_ARGS_MAX;
	return sizeof(struct exec_event) +
	       ((flen + alen + plen) & (2 * ONCE_PATH_MAX + 2 * ONCE_ARGS_MAX - 1));
}

/* Send the strings in eb (see EVENT_EXEC_ARGS), with the stack snapshot
 * in the CPU's stack_buf if stacked is STACK_CAPTURED: an enum SNAP_*. */
static __always_inline int send_exec_args(struct exec_buf *eb, __u32 old_tid, int stacked)
{
	__u64 id = bpf_get_current_pid_tgid();

	eb->ev.hdr.kind = EVENT_EXEC_ARGS;
	eb->ev.task = (struct task_info){ .pid = id >> 32, .tid = (__u32)id };
	eb->ev.old_tid = old_tid;
	eb->ev.enter_ns = 0;
	/* With several rings, the time user space merges them by: sent
	 * after any record of the task before, and before the exit's. */
	eb->ev.exit_ns = nrings > 1 ? bpf_ktime_get_ns() : 0;
	eb->ev.ret = 0;
	return emit_snap(&eb->ev, exec_size(eb), &eb->ev.hdr.status, stacked);
}

static __always_inline int exec_enter(void *ctx, __u8 sys, long dirfd, const char *fname,
				      const char *const *argv, __u32 at_flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct exec_pending p = {}, *last;
	struct scratch *s;
	struct exec_buf *eb;
	int sent;

	p.fname_ptr = (__u64)fname;
	p.argv_ptr = (__u64)argv;
	p.old_tid = tid;
	p.dirfd = (__s32)dirfd;
	p.at_flags = at_flags;
	p.syscall = sys;
	p.in_flight = 1;
	if (!traced(tgid)) {
		/* Refused by its comm alone: a successful exec gives the task
		 * the comm of the file it runs (`cat` for --comm cat, exec'd
		 * by a shell's child), as execsnoop -n judges an exec.
		 * Remembered, nothing read or sent: handle_exec decides by
		 * the new comm, a failure is dropped at the exit. */
		if ((filter_comm || filter_no_comm) && followed(tgid) && passes_but_comm()) {
			p.by_new_comm = 1;
			p.enter_ns = bpf_ktime_get_ns();
			bpf_map_update_elem(&pending_execs, &tid, &p, BPF_ANY);
		}
		return 0;
	}
	flush_miss_repeats();
	s = get_scratch();
	if (!s)
		return 0;
	eb = &s->exec;
	eb->ev.hdr.status = 0;
	eb->ev.hdr.syscall = sys;
	read_exec_fname(eb, fname);
	/*
	 * A forked child's argv strings often sit in pages it has not touched
	 * (a string literal in the program's text), which a read here can't
	 * fault in; and a failed probe of a PATH search never copies them, so
	 * they stay out for the next probe too. Each read of them costs a
	 * page fault taken and fixed up: an argv the
	 * thread's last exec could not read is not read again. Its strings
	 * come from the kernel's copies once an exec succeeds (handle_exec).
	 */
	last = bpf_map_lookup_elem(&pending_execs, &tid);
	if (last && last->bad_argv == (__u64)argv) {
		eb->ev.hdr.status |= ST_ARGV_UNREADABLE;
		eb->ev.argc = 0;
		eb->ev.args_len = 0;
		p.bad_addr = last->bad_addr;
	} else {
		p.bad_addr = read_argv(eb, (__u64)argv);
	}
	if (eb->ev.hdr.status & ST_ARGV_UNREADABLE)
		p.bad_argv = (__u64)argv;
	exec_path(s, eb, p.dirfd, at_flags);
	p.fname_len = eb->ev.fname_len;
	p.argc = eb->ev.argc;
	p.status = eb->ev.hdr.status;
	/* A faulted read is done again where it can be: at a failed exec's
	 * exit, in the old address space; after a successful one, from the
	 * kernel's copies (handle_exec). So is a send the ring had no room
	 * for (counted). */
	if (p.status & (ST_FNAME_UNREADABLE | ST_ARGV_UNREADABLE))
		p.status |= ST_FNAME_REREAD;
	/* The caller's stack, here at the entry: once an exec succeeds the
	 * caller's image is gone. It goes with the strings, which user space
	 * joins to the exit's record by old_tid. */
	sent = send_exec_args(eb, tid, stack_capture(ctx, NULL));
	if (sent != SNAP_NOT_SENT)
		p.status |= ST_ARGS_SENT;
	p.stack_sent = sent == SNAP_SENT_STACK;
	/* The call's time starts here, after what once did at its entry
	 * (the strings read, the stack copied, the record sent): an exec's
	 * latency, a failed probe's waste, is the kernel's alone. */
	p.enter_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&pending_execs, &tid, &p, BPF_ANY))
		count(CNT_ENTER_MAP_FULL);
	return 0;
}

static __always_inline int exec_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct exec_pending *p;
	struct exec_buf *eb;
	struct scratch *s;
	__u64 now;
	__u16 st;

	p = bpf_map_lookup_elem(&pending_execs, &tid);
	if (!p || !p->in_flight) {
		/* A successful exec changed comm: the entry was judged by the
		 * old one, and may well have been filtered out. */
		if ((ret < 0 || !(filter_comm || filter_no_comm)) && traced(tgid))
			count(missed_entry_counter());
		return 0;
	}
	if (p->by_new_comm) {
		/* Failed (handle_exec keeps one that passes by its new comm
		 * and clears the mark): the caller's, whose comm the filter
		 * refused. */
		bpf_map_delete_elem(&pending_execs, &tid);
		return 0;
	}
	p->in_flight = 0;
	/* The call's end, before what once does at its exit. */
	now = bpf_ktime_get_ns();
	s = get_scratch();
	if (!s)
		goto out;
	st = p->status;
	eb = &s->exec;
	eb->ev.hdr.kind = EVENT_EXEC;
	eb->ev.hdr.syscall = p->syscall;
	eb->ev.enter_ns = p->enter_ns;
	eb->ev.old_tid = p->old_tid;
	eb->ev.dirfd = p->dirfd;
	eb->ev.at_flags = p->at_flags;
	eb->ev.argc = p->argc;
	eb->ev.fname_len = 0;
	eb->ev.args_len = 0;
	eb->ev.path_len = 0;
	/*
	 * After a failed exec the old address space is intact, and the exec
	 * has faulted in the filename (and argv, if it got that far): what
	 * the entry could not read or send is read again and sent here, the
	 * strings behind this event. A PATH probe's failure (ENOENT, EACCES,
	 * ENOTDIR, ELOOP) comes before argv is copied: an argv the entry
	 * could not read is read again only if the page that faulted is one
	 * the filename's copy touched.
	 */
	if (ret < 0) {
		bool argv_again = (st & ST_ARGV_UNREADABLE) &&
				  (!probe_errno(ret) ||
				   (p->bad_addr >> 12 >= p->fname_ptr >> 12 &&
				    p->bad_addr >> 12 <= (p->fname_ptr + p->fname_len) >> 12));

		if ((st & ST_FNAME_UNREADABLE) || !(st & ST_ARGS_SENT) || argv_again) {
			eb->ev.hdr.status = st & ~ST_ARGS_SENT;
			read_exec_fname(eb, (const char *)p->fname_ptr);
			if ((st & ST_ARGV_UNREADABLE) && !argv_again) {
				eb->ev.argc = 0;
			} else {
				p->bad_addr = read_argv(eb, p->argv_ptr);
				p->bad_argv = (eb->ev.hdr.status & ST_ARGV_UNREADABLE) ? p->argv_ptr : 0;
			}
			exec_path(s, eb, p->dirfd, p->at_flags);
		} else {
			eb->ev.hdr.status = st;
		}
	} else if (!(st & ST_ARGS_SENT)) {
		eb->ev.hdr.status = st | ST_FNAME_UNREADABLE | ST_ARGV_UNREADABLE;
	} else {
		eb->ev.hdr.status = st;
	}
	fill_current(&eb->ev.task);
	eb->ev.exit_ns = now;
	eb->ev.ret = (__s32)ret;
	count_status(eb->ev.hdr.status);
	/* Sent without the snapshot its entry could not take or send. */
	if (emit(eb, exec_size(eb)) && stack_size && !p->stack_sent)
		count(CNT_STACKS_DROPPED);
out:
	/* Kept after a failure to remember an argv it could not read. */
	if (ret >= 0 || !p->bad_argv)
		bpf_map_delete_elem(&pending_execs, &tid);
	return 0;
}

/* The entries of execve and execveat, attached to both (told apart by the
 * syscall number): one program is verified once, where two that differed
 * only in where their arguments sit were verified each in full. */
SEC("tracepoint/syscalls/sys_enter_execve")
int enter_exec(struct syscall_enter_ctx *ctx)
{
	unsigned long a0 = ctx->args[0], a1 = ctx->args[1], a2 = ctx->args[2], a4 = 0;
	unsigned long fname = a0, argv = a1;
	long dirfd = AT_FDCWD;
	__u8 sys = SYS_EXECVE;

	/* Loaded before the choice: a context read at an offset chosen at
	 * run time is refused. */
	barrier_var(a0);
	barrier_var(a1);
	barrier_var(a2);
	if (ctx->nr == nr_execveat) {
		/* Its flags lie past execve's record, and attaching to execve
		 * refuses a program that reads its context that far. */
		bpf_probe_read_kernel(&a4, sizeof(a4), (void *)ctx + offsetof(struct syscall_enter_ctx, args[4]));
		sys = SYS_EXECVEAT;
		dirfd = (int)a0;
		fname = a1;
		argv = a2;
	}
	return exec_enter(ctx, sys, dirfd, (const char *)fname, (const char *const *)argv, (__u32)a4);
}

/* The exits of execve and execveat, attached to both. */
SEC("tracepoint/syscalls/sys_exit_execve")
int exit_exec(struct syscall_exit_ctx *ctx)
{
	return exec_exit(ctx->ret);
}

#endif /* ONCE_EXEC_BPF_H */
