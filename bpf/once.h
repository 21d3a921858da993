/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Events once's BPF programs send to user space. This header is the one
 * definition of them: the kernel side fills these structs and bpf2go turns
 * the same BTF into the Go types the collector decodes, so the two sides
 * can't drift apart.
 *
 * Every record in the ring buffer starts with a __u32 kind. Records with
 * strings are variable length: the fixed struct, then the string bytes
 * (not NUL-terminated) whose lengths the struct gives, back to back.
 */
#ifndef ONCE_H
#define ONCE_H

#define ONCE_PATH_MAX 4096 /* PATH_MAX: bound on a filename as passed */
#define ONCE_ARGS_MAX 4096 /* bound on the argv bytes kept per exec */
#define ONCE_ARGC_MAX 64   /* bound on the argv entries kept per exec */
#define ONCE_ARGC_COUNT_MAX (1 << 20) /* bound on the argv entries counted past those kept */
#define ONCE_COMM_LEN 16
#define ONCE_MAX_DEPTH 128 /* path components walked before giving up */
#define ONCE_CGROUP_DEPTH 16 /* cgroup levels cgroup_selected looks up from the root */
#define CGROUP_SELECTED 1 /* cgroup_ids: a cgroup of a selected container */
#define CGROUP_PENDING 2  /* cgroup_ids: made since start, not yet named */

/*
 * The constants both sides share are enums, so that bpf2go generates
 * them for Go: the collector uses the generated ones, and a test holds
 * trace's copies (which detect and report read) to them.
 */

/* Bounds of a stack snapshot. */
enum stack_bounds {
	ONCE_STACK_MAX = 16384, /* bound on the user stack window of a snapshot (--stack-size) */
	ONCE_STACK_FRAMES = 32, /* bound on the frames of the kernel's frame-pointer walk */
};

/*
 * The errnos that make a failed lookup a miss of a search: the name
 * was not in that place (or could not be there). The kernel's
 * probe_errno and the engine's trace.IsMiss read this one list.
 */
enum miss_errno {
	MISS_ENOENT = 2,
	MISS_EACCES = 13,
	MISS_ENOTDIR = 20,
	MISS_ENAMETOOLONG = 36,
	MISS_ELOOP = 40,
};

/*
 * How long the kernel goes on sending the successful opens and lookups
 * of a name whose probe chain a lookup ended (PROBE_HELD in
 * image_files.bpf.h), so that user space sees the name made where it was
 * missing. Twice what once watch holds a found chain (detect.HeldFor),
 * whose clock is when an event is read, later than when it happened.
 */
enum probe_hold {
	PROBE_HELD_MS = 2000,
};

/* What else an open event says (open_event.xstatus). */
enum open_xstatus {
	/* The call made the file (O_CREAT, and the kernel's FMODE_CREATED):
	 * a name made, not found. */
	XST_CREATED = 1 << 0,
	/* EVENT_KEPT_STACK: the image's first open of the file itself, kept
	 * beside its snapshot and counted, not sent (first_calls_kept): its
	 * fields and name are that call's; it has no path. */
	XST_FIRST_CALL = 1 << 1,
	/* Bits 2-4: the file system that makes the opened file's content at
	 * each read, enum generated_fs (0: another). Told by the kernel, not
	 * by once's mount table: a procfs only the caller's mount namespace
	 * has (its own /proc) has a device that table does not know. */
	XST_FS_SHIFT = 2,
	XST_FS_MASK = 7 << 2,
};

/* The file systems whose files' content and attributes are made at each
 * read or stat (trace.GeneratedFS), in open_xstatus's XST_FS bits. */
enum generated_fs {
	GEN_FS_NONE = 0,
	GEN_FS_PROC = 1,
	GEN_FS_SYSFS = 2,
	GEN_FS_CGROUP = 3,
	GEN_FS_CGROUP2 = 4,
	GEN_FS_DEBUGFS = 5,
	GEN_FS_TRACEFS = 6,
	GEN_FS_SECURITYFS = 7,
};

/* File types, an inode's i_mode & FILE_TYPE_MASK (include/uapi/linux/stat.h). */
enum file_type {
	FILE_TYPE_MASK = 0170000,
	FILE_SOCK = 0140000,
	FILE_LNK = 0120000,
	FILE_REG = 0100000,
	FILE_BLK = 0060000,
	FILE_DIR = 0040000,
	FILE_CHR = 0020000,
	FILE_FIFO = 0010000,
};

enum event_kind {
	EVENT_OPEN = 1, /* struct open_event + fname + path */
	EVENT_EXEC = 2, /* struct exec_event + filename + argv (NUL separated) + path */
	EVENT_FORK = 3, /* struct proc_event */
	EVENT_EXIT = 4, /* struct proc_event */
	EVENT_IMAGE = 5, /* struct proc_event + exe path: a successful exec */
	EVENT_UNSENT = 6, /* struct proc_event: a thread's opens not sent, at its exit or exec */
	/* struct exec_event + filename + argv + path, sent at an exec's entry
	 * (only hdr, task.pid, task.tid, old_tid, argc and the lengths are set):
	 * the strings of the EVENT_EXEC with the same old_tid that follows,
	 * which carries ST_ARGS_SENT. A later one for the same exec (the
	 * kernel's copies, after the entry's read faulted) replaces it. */
	EVENT_EXEC_ARGS = 7,
	/* struct uring_submit_event + fname: an io_uring open request as
	 * submitted (after its prep). */
	EVENT_URING_SUBMIT = 8,
	/* struct uring_complete_event + path: its completion. User space
	 * joins the two by req into one open. */
	EVENT_URING_COMPLETE = 9,
	/* struct open_event (hdr, task, dev, ino, gen; enter_ns and exit_ns
	 * the first open's), then, with ST_STACK, a stack snapshot: the
	 * snapshot of an image's first open of a file, kept in the kernel
	 * (ST_STACK_KEPT on that open) and sent after the open that repeated
	 * it. Without ST_STACK it was overwritten before the repeat came.
	 * With XST_FIRST_CALL it is that first open's call too, which was
	 * kept with the snapshot instead of sent (first_calls_kept): its
	 * fields and name then follow, without a path. */
	EVENT_KEPT_STACK = 10,
	/* struct open_repeat_event: a successful open whose name (the same
	 * bytes), path (the same walk), task, flags and file are those of
	 * the thread's open sent in full whose exit_ns is ref_ns, the
	 * thread's last one sent, from the same CPU (the same ring). Only
	 * where every open is sent (open_send_max 0) and without stacks.
	 * User space takes the rest from that open; without it, the record
	 * is a decode error. */
	EVENT_OPEN_REPEAT = 11,
};

enum syscall_kind {
	SYS_OPEN = 1,
	SYS_OPENAT = 2,
	SYS_OPENAT2 = 3,
	SYS_CREAT = 4,
	SYS_EXECVE = 5,
	SYS_EXECVEAT = 6,
	SYS_IORING_OPENAT = 7,	/* io_uring requests, not syscalls */
	SYS_IORING_OPENAT2 = 8,
	/* Lookups: a name looked up without opening it (stat.bpf.h). Sent as
	 * an EVENT_OPEN whose syscall is one of these: fd is 0 on success. */
	SYS_NEWFSTATAT = 9,
	SYS_STATX = 10,
	SYS_NEWSTAT = 11,
	SYS_NEWLSTAT = 12,
	SYS_ACCESS = 13,
	SYS_FACCESSAT = 14,
	SYS_FACCESSAT2 = 15,
	/* A directory made (mkdir, mkdirat): no lookup, sent only when it
	 * may end a pending probe, whose miss was then a check before making
	 * it (git init's of .git/branches). Sent as an EVENT_OPEN of this
	 * syscall, ret 0; user space makes it an EventMade. */
	SYS_MKDIR = 16,
	SYS_MKDIRAT = 17,
	/* An io_uring IORING_OP_STATX request: a lookup, in two halves as
	 * an io_uring open (struct uring_submit_event: flags are its AT_*
	 * flags, mode its mask; struct uring_complete_event: the identity
	 * read back from its buffer, the directory it was tried in). */
	SYS_IORING_STATX = 18,
	/* In a thread's slot: a call a lookup program saw and left alone
	 * (fstat through fstatat), whose exit has nothing to do. */
	SYS_SKIPPED = 255,
};

/* status bits: what was cut or could not be read in this event. */
enum event_status {
	ST_FNAME_TRUNCATED = 1 << 0,
	ST_FNAME_UNREADABLE = 1 << 1,
	ST_PATH_TRUNCATED = 1 << 2,
	ST_PATH_UNRESOLVED = 1 << 3,
	ST_ARGV_TRUNCATED = 1 << 4,
	ST_ARGV_UNREADABLE = 1 << 5,
	ST_FNAME_REREAD = 1 << 6, /* the entry read faulted; read again later */
	ST_PATH_IS_BASE = 1 << 7, /* path is the dir a relative fname (open, exec) was tried in */
	ST_TALLY_NEXT = 1 << 8,	  /* the last open of its open_key sent: later ones are tallied */
	ST_UNTIMED = 1 << 9,	  /* no entry time: enter_ns is exit_ns (see open_enter) */
	ST_COMPAT = 1 << 10,	  /* image: a 32-bit program, whose syscalls no syscall tracepoint sees */
	ST_SEEN_BEFORE = 1 << 11, /* open: the image opened this file before, in an open not sent */
	ST_ARGS_SENT = 1 << 12,	  /* exec: filename and argv are in the EVENT_EXEC_ARGS before it */
	ST_STACK = 1 << 13,	  /* open, exec args: a stack snapshot follows the strings (struct stack_tail) */
	/* path: the file is on a kernel-internal mount no root reaches (a
	 * pipe, socket, memfd, anon inode): path is the name the kernel
	 * gives it (d_dname), "pipe:[INO]", "/memfd:NAME (deleted)"... */
	ST_PATH_INTERNAL = 1 << 14,
	/* open: sent without its stack snapshot, which the kernel keeps: an
	 * EVENT_KEPT_STACK brings it if the image opens the file again */
	ST_STACK_KEPT = 1 << 15,
};

/* Indexes of the per-CPU loss counters. */
enum counter {
	CNT_RINGBUF_FULL = 0,
	CNT_ENTER_MAP_FULL,
	CNT_MISSED_ENTER,
	CNT_FNAME_TRUNCATED,
	CNT_FNAME_UNREADABLE,
	CNT_PATH_TRUNCATED,
	CNT_PATH_UNRESOLVED,
	CNT_ARGV_TRUNCATED,
	CNT_ARGV_UNREADABLE,
	CNT_TRACKED_FULL,
	CNT_EVENTS_SENT,
	CNT_TALLIES_LATE, /* thread-counted repeats whose open_key was gone when added */
	CNT_OPENS_UNTIMED, /* opens sent without their latency (ST_UNTIMED) */
	CNT_COMPAT_IMAGES, /* traced images of 32-bit programs (ST_COMPAT) */
	CNT_OPENS_UNSENT,  /* first opens counted, not sent (first_opens_unsent) */
	CNT_FILES_UNTRACKED, /* of those, files the image's table had no room for */
	CNT_URING_SETUPS,  /* io_uring rings set up by traced processes */
	CNT_STACKS_DROPPED, /* opens and execs sent without their stack snapshot (stack_size) */
	CNT_PATH_INTERNAL, /* paths named as the kernel names internal files (ST_PATH_INTERNAL) */
	CNT_STACKS_KEPT,   /* first opens whose snapshot was kept, not sent (ST_STACK_KEPT) */
	CNT_LOOKUPS_UNSENT, /* successful lookups (stat, access) counted, not sent */
	CNT_COUNTS_LOST, /* calls counted in the kernel whose count the ring had no room for at the thread's exit or exec */
	CNT_REPORTS_DEFERRED, /* reports of those counts the ring had no room for, the counts kept for the thread's next record */
	CNT_SECCOMP_REFUSED, /* exits with no entry in a thread under a seccomp filter: calls it answered before the entry tracepoint */
	CNT_PTRACE_SKIPPED, /* exits with no entry in a ptraced thread: calls stopped at the tracer's entry stop and never run */
	CNT_MAX,
};

/* Values of the tracked map: why a process is followed. */
enum track_kind {
	TRACK_TREE = 1,    /* trace it and the processes it forks */
	TRACK_SPAWNER = 2, /* don't trace it, but trace the processes it forks */
	TRACK_ONLY = 3,    /* trace it, not the processes it forks */
};

/* What every event says about the task that caused it. */
struct task_info {
	__u64 start_ns;	/* group leader's start time: tells a reused pid apart */
	__u64 exec_id;	/* self_exec_id: which exec image of the process */
	__u64 cgroup_id;
	__u32 pid;	/* tgid */
	__u32 tid;
	__u32 ppid;
	__u32 uid;
	__u8 comm[ONCE_COMM_LEN];
};

struct event_header {
	enum event_kind kind; /* 4 bytes */
	__u16 status;
	__u8 syscall;
	__u8 pad;
};

struct open_event {
	struct event_header hdr;
	struct task_info task;
	__u64 enter_ns;
	__u64 exit_ns;
	__u64 flags;
	__u64 mode;
	__u64 resolve; /* openat2 only */
	__u64 ino;
	__u32 dev; /* kernel dev_t encoding (MAJOR << 20 | MINOR) */
	__s32 dirfd;
	__s32 ret; /* fd or -errno */
	__u16 fname_len;
	__u16 path_len;
	/* The thread's opens in this image before this one that were not
	 * sent (first_opens_unsent), not counted in an event before. */
	__u32 unsent;
	__u32 gen; /* the inode's i_generation (see file_id in path.bpf.h) */
	__u16 ftype; /* the inode's file type, i_mode & FILE_TYPE_MASK (0 when no file) */
	__u16 xstatus; /* enum open_xstatus */
	/* The thread's successful lookups in this image before this event
	 * that were not sent, not counted in an event before. */
	__u32 lookups_unsent;
	/* Repeats of the thread's last failed open sent (the same name,
	 * from the same place, with the same call, flags and errno) that
	 * the kernel counted instead of sending, before this event: of
	 * them, miss_timed were timed, in miss_ns. miss_sys is their call
	 * (enum syscall_kind). */
	__u32 miss_repeats;
	__u32 miss_timed;
	__u8 miss_sys;
	/* The same for the thread's last failed lookup sent: a thread has
	 * a run of each (struct miss_run), so that a loop that stats one
	 * missing name and opens another counts both. */
	__u8 lookup_miss_sys;
	__u8 pad2[2];
	__u64 miss_ns;
	__u32 lookup_miss_repeats;
	__u32 lookup_miss_timed;
	__u64 lookup_miss_ns;
};

/*
 * EVENT_OPEN_REPEAT: an open that repeats the thread's last one sent in
 * full (an open_event, whose exit_ns is ref_ns) in everything but what is
 * here: the same name and path (bpf/repeat.bpf.h), the same task fields,
 * flags, mode, resolve and file, and nothing counted since. A quarter of
 * an open_event's bytes: a burst the reader falls behind on fits the ring
 * four times as long.
 */
struct open_repeat_event {
	struct event_header hdr; /* its own status and syscall */
	__u32 pid;
	__u32 tid;
	__s32 dirfd;
	__s32 ret;
	__u64 enter_ns;
	__u64 exit_ns;
	__u64 ref_ns;
};

struct exec_event {
	struct event_header hdr;
	struct task_info task;
	__u64 enter_ns;
	__u64 exit_ns;
	__u32 old_tid; /* the tid that called exec (differs for a non-leader thread) */
	__s32 dirfd;
	__s32 ret;
	__u32 at_flags;
	__u32 argc; /* argv entries seen, may exceed those kept */
	__u16 fname_len;
	__u16 args_len;
	/* After argv: where the filename was looked up, as an open's path
	 * is kept: the directory a relative one was tried in (the dirfd's
	 * or the cwd's, ST_PATH_IS_BASE), or the file an AT_EMPTY_PATH exec
	 * ran (its descriptor's, or after a successful exec whose entry
	 * could not read the name, the exec'd file's). 0: the filename is
	 * absolute, or unreadable. */
	__u16 path_len;
	__u16 pad;
	__u32 pad2;
};

struct proc_event {
	struct event_header hdr;
	struct task_info task;
	__u64 ts_ns;
	__u64 exe_ino;
	__u64 parent_start_ns; /* fork: the parent's start time */
	__u32 exe_dev;
	__u32 parent_pid; /* fork: the parent; image: the old tid; exit: the group's other threads not released */
	__s32 exit_code;
	__u16 path_len;
	__u8 miss_sys; /* EVENT_UNSENT: the call of miss_repeats */
	__u8 lookup_miss_sys; /* EVENT_UNSENT: the call of lookup_miss_repeats */
	__u32 unsent; /* EVENT_UNSENT: the thread's opens of task's image not sent */
	__u32 lookups_unsent; /* EVENT_UNSENT: its successful lookups not sent */
	/* EVENT_UNSENT: the repeats of its last failed open sent, counted
	 * (as in open_event) */
	__u32 miss_repeats;
	__u32 miss_timed;
	__u64 miss_ns;
	/* EVENT_UNSENT: those of its last failed lookup sent */
	__u32 lookup_miss_repeats;
	__u32 lookup_miss_timed;
	__u64 lookup_miss_ns;
};

/*
 * An io_uring open (IORING_OP_OPENAT, IORING_OP_OPENAT2) comes in two
 * halves, each sent where the kernel has what it says: the request at its
 * submission (the name is the kernel's copy, freed before completion),
 * its result at its completion, possibly in another thread of the process
 * (an io-wq worker). One request posts one completion, however many times
 * it was tried (a non-blocking attempt that would block is retried in a
 * worker, with no completion of its own). User space joins the halves by
 * req, the request's address, unique while it is in flight.
 */
struct uring_submit_event {
	struct event_header hdr; /* syscall: SYS_IORING_OPENAT, SYS_IORING_OPENAT2 or SYS_IORING_STATX */
	struct task_info task;	 /* the submitter (or the ring's SQPOLL thread) */
	__u64 req;
	__u64 enter_ns;
	__u64 flags; /* the kernel's copy: O_LARGEFILE added on 64-bit */
	__u64 mode;
	__u64 resolve;
	__s32 dirfd;
	__u32 file_slot; /* 0; a fixed-file slot + 1; or ~0: one the kernel picks */
	__u16 fname_len;
	__u16 pad;
	/* 1: sent by io_uring_req_failed, for a request that failed in its
	 * prep: read from the SQE, nothing looked up, no directory tried
	 * (its completion's, read from a request never prepared, is not
	 * its own). */
	__u32 prep_failed;
};

struct uring_complete_event {
	struct event_header hdr; /* status: ST_PATH_*, ST_SEEN_BEFORE */
	__u64 req;
	__u64 exit_ns;
	__u64 ino;
	__u32 dev;
	__u32 gen;
	__u32 pid; /* tgid of the task that completed it */
	__s32 ret; /* the CQE's res: fd, 0 or the slot for a fixed file, or -errno */
	__u16 path_len; /* the file's path, or (ST_PATH_IS_BASE) the dir a failure (or a statx) was tried in */
	__u16 ftype; /* the inode's file type, i_mode & FILE_TYPE_MASK */
	__u32 pad2;
};

/*
 * A user stack snapshot (stack_size > 0): the caller's registers at the
 * syscall, the kernel's frame-pointer walk and the top of the user stack.
 * It follows the strings of an EVENT_OPEN or EVENT_EXEC_ARGS whose status
 * has ST_STACK: this struct, then nr_fp __u64 return addresses
 * (bpf_get_stack with BPF_F_USER_STACK, innermost first), then window_len
 * bytes of user memory from sp upward. Not aligned: read it as bytes.
 */
enum stack_flags {
	STK_WINDOW_CUT = 1 << 0,   /* the window stopped at stack_size while the stack went on */
	STK_WINDOW_FAULT = 1 << 1, /* the window stopped at a page it could not read */
};

struct stack_tail {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 bx;
	__u64 r12;
	__u64 r13;
	__u64 r14;
	__u64 r15;
	__u32 window_len;
	__u16 nr_fp;
	__u16 flags; /* enum stack_flags */
};

/*
 * One kind of successful open by one exec image: the image (pid, leader
 * start, exec id), the file (dev, ino, gen) and how it was opened (syscall,
 * flags). When a thread opens a file again the way it did lately, the
 * kernel counts it in the key's open_tally; past open_send_max counted
 * opens it stops sending events for the key and only counts: a loop that
 * opens one file a million times costs a map update per open, not an
 * event. User space reads the tallies back by key.
 */
struct open_key {
	__u64 start_ns;
	__u64 exec_id;
	__u64 ino;
	__u64 flags;
	__u32 pid;
	__u32 dev;     /* kernel encoding, as in open_event */
	__u32 syscall; /* enum syscall_kind */
	/* The inode's generation: a file made later with the same inode
	 * number is another key. A lookup's is its file type (a stat's
	 * buffer has no generation: see lookup_sig in stat.bpf.h). No
	 * padding: keys are compared as bytes. */
	__u32 gen;
};

struct open_tally {
	__u64 opens;	/* repeats of the key counted; past open_send_max, not sent */
	__u64 timed;	/* of those not sent, how many were timed (a sample) */
	__u64 timed_ns; /* their summed latency */
};

#endif /* ONCE_H */
