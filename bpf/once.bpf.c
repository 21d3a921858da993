//go:build ignore

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * once: every open and exec of the traced processes, with the file's
 * identity and absolute path resolved in the kernel.
 *
 * Syscall entries store only what the exit needs (pointers and flags) in a
 * per-thread map; the exit reads the strings, resolves the file and sends one
 * complete event. Strings are read at exit for opens because the kernel has
 * just copied the name (getname), so the page is resident: a name whose page
 * was not yet faulted in at entry is still read. Execs are read at entry
 * (a successful exec replaces the address space before the exit) and, where
 * that read faulted, again from the kernel's copy at sched_process_exec or
 * from the intact old memory at a failed exit.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "once.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AT_FDCWD -100
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define O_PATH 010000000

/* Set by the loader before the programs are loaded. Being read-only data,
 * the verifier knows their values and removes the checks they turn off. */
const volatile __u32 filter_tracked = 0; /* 1: only processes in `tracked` */
const volatile __u32 self_tgid = 0;	   /* never trace the collector itself */
const volatile __u32 filter_comm = 0;	   /* 1: only comms in comm_include */
const volatile __u32 filter_no_comm = 0; /* 1: never comms in comm_exclude */
const volatile __u32 filter_uid = 0;	   /* 1: only real uids in uid_include */
const volatile __u32 filter_cgroup = 0;  /* 1: only tasks under cgroup_include[0] */
/* Wake the reader only once this much is waiting (0: on every event). The
 * reader also polls on a short deadline, so a quiet ring is still read;
 * a busy one saves an interrupt and a context switch per event. */
const volatile __u64 wakeup_bytes = 0;
/* Repeated opens of one open_key sent before the rest are only tallied
 * (0: send every open). A thread's first open of a file is always sent. */
const volatile __u32 open_send_max = 0;
/* 1: a successful open of a file its image has not opened before is
 * counted, not sent (see image_files); only repeats, failures and the
 * opens that end a failed probe are. For a consumer that wants findings,
 * not every event: a first open's path is what costs most to send. */
const volatile __u32 first_opens_unsent = 0;
/* 1: the kernel has bpf_rdonly_cast (6.2+), so kernel structs reached
 * from a plain address are read with BTF loads instead of helper calls. */
const volatile __u32 btf_casts = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
	__type(value, struct event_header);
} events SEC(".maps");

/* tgid -> enum track_kind. Filled by user space for the root and by
 * handle_fork for every descendant, so a child is followed from the instant
 * it exists, before it can make a single syscall. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, enum track_kind);
} tracked SEC(".maps");

/*
 * One bit per tgid: whether it is followed (TRACK_TREE or TRACK_ONLY in
 * tracked). Every open and exec of every process on the machine asks;
 * most, under once run, are not followed. A bit is one load from an array
 * (the verifier inlines the lookup), where the hash lookup cost ~500 ns on
 * a child's first exec (the element cold on the CPU that forked it), and
 * caching the answer in the thread's pending_opens slot made a 416-byte
 * slot for every thread that opened a file, followed or not: now only a
 * followed thread has one.
 * User space sets bits only before the programs are attached; after that
 * only handle_fork and handle_exit change them, atomically. 2^22 bits:
 * PID_MAX_LIMIT on 64-bit.
 */
#define TRACKED_BITS_WORDS (1 << 16)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TRACKED_BITS_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} tracked_bits SEC(".maps");

static __always_inline bool tracked_bit(__u32 tgid)
{
	__u32 w = tgid >> 6;
	__u64 *v = bpf_map_lookup_elem(&tracked_bits, &w);

	return v && ((*v >> (tgid & 63)) & 1);
}

static __always_inline void set_tracked_bit(__u32 tgid, bool on)
{
	__u32 w = tgid >> 6;
	__u64 *v = bpf_map_lookup_elem(&tracked_bits, &w);
	__u64 m = 1ULL << (tgid & 63);

	if (!v)
		return;
	if (on)
		__sync_fetch_and_or(v, m);
	else
		__sync_fetch_and_and(v, ~m);
}

/* The attribute filters, filled by user space before the programs are
 * attached. Comms are keyed by the 16 bytes bpf_get_current_comm writes
 * (NUL padded); the loader sizes these maps to what it puts in them. */
struct comm_key {
	__u8 comm[ONCE_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct comm_key);
	__type(value, __u8);
} comm_include SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct comm_key);
	__type(value, __u8);
} comm_exclude SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} uid_include SEC(".maps");

/* Slot 0: the cgroup v2 directory whose subtree is traced. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_include SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, enum counter);
	__type(value, __u64);
} counters SEC(".maps");

/* open_key -> open_tally. LRU: the keys of images that ended, which user
 * space does not delete (it only knows the keys it was told are tallied),
 * make room for new ones; a tallied key evicted while its image lives is
 * noticed by user space when it reads the tallies back. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct open_key);
	__type(value, struct open_tally);
} open_tallies SEC(".maps");

#define RECENT_OPENS 4 /* a power of two */
/* Of the opens tallied for a key, the first and every TALLY_TIME_EVERY-th
 * are timed: on this kind of machine each clock read costs ~50 ns, a
 * quarter of a tallied open. User space scales the timed sum up to all. */
#define TALLY_TIME_EVERY 8 /* a power of two */

struct local_tally {
	struct open_key key;
	__u64 ns;	/* of the timed ones */
	__u32 opens;
	__u32 timed;
	__u8 on;	/* key is a kind past its sent opens */
};

struct pending_open {
	__u64 enter_ns;
	__u64 fname;
	__u64 how;
	__u64 flags;
	__u64 mode;
	__s32 dirfd;
	enum syscall_kind syscall; /* 0: no open in flight */
	/* The thread's last few successful opens: only a repeat of one of
	 * them goes to open_tallies. Most files are opened once (a copy, a
	 * build), and a map insert for each would cost more than the event. */
	__u64 recent[RECENT_OPENS]; /* open_sig of each */
	__u32 recent_next;
	/* The entry was a predicted one (see open_enter). */
	__u8 predicted;
	__u8 local_skip;
	/* Repeats of each recent kind past the opens sent for it, counted
	 * here and added to open_tallies every LOCAL_FLUSH of them and when
	 * the kind leaves recent[], the thread execs or it exits: a hash
	 * lookup and atomic adds on a line every CPU shares cost more than
	 * the rest of a tallied open. local[i] is recent[i]'s. */
	struct local_tally local[RECENT_OPENS];
	/* The arguments of the last open counted in local[]: an entry with
	 * the same ones is predicted to be another such repeat. */
	__u64 local_fname;
	__u64 local_how;
	__u64 local_flags;
	__s32 local_dirfd;
	__u8 local_sys;
	__u8 armed;	/* local_* hold the arguments of a counted repeat */
	__u8 local_any; /* some local[] is on */
	/* Opens of the current image counted, not sent (first_opens_unsent),
	 * since the thread's last event that reported them. */
	__u32 unsent;
};

/* The open in flight on each thread. Task storage rather than a hash keyed
 * by tid: the slot hangs off the task itself, so the lookup is a pointer
 * chase instead of a hashed, locked bucket, and it is freed with the task. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending_open);
} pending_opens SEC(".maps");

/*
 * An exec in flight on a thread: what its exit needs from the entry. The
 * strings were sent at the entry (EVENT_EXEC_ARGS), straight from the
 * per-CPU scratch: an entry that kept them here for the exit, in a hash
 * allocating and copying their 12 KiB bound, cost 4.3 us of BPF time per
 * execve (most of what once run added to a PATH search of 7 entries), and
 * task storage costs 2 us to create, once per process.
 *
 * After a failed exec whose argv could not be read, the slot stays (not
 * in flight) to remember that argv: see exec_enter.
 */
struct exec_pending {
	__u64 fname_ptr; /* to read again if the entry read faulted */
	__u64 argv_ptr;
	__u64 bad_argv;	 /* an argv this thread's last exec could not read */
	__u64 bad_addr;	 /* the address in it whose read faulted */
	__u64 enter_ns;
	__u32 old_tid;
	__s32 dirfd;
	__u32 at_flags;
	__u32 argc;
	__u16 status;
	__u16 fname_len;
	__u8 syscall;
	__u8 in_flight;
	__u8 pad[2];
};

/* Preallocated, so an insert takes an element off a free list. LRU: a slot
 * left to remember an unreadable argv never keeps a new exec out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct exec_pending);
} pending_execs SEC(".maps");

/* Per-CPU scratch space: events are assembled here, then copied into the
 * ring buffer at their real (variable) size. */
struct open_buf {
	struct open_event ev;
	__u8 data[2 * ONCE_PATH_MAX];
};

/* An exec event with its strings packed behind it: filename at data[0],
 * argv at data[fname_len]. The slack past the last use is for the
 * verifier, which bounds an argument's offset and its size apart. */
struct exec_buf {
	struct exec_event ev;
	__u8 data[ONCE_PATH_MAX + 2 * ONCE_ARGS_MAX];
};

struct proc_buf {
	struct proc_event ev;
	__u8 data[2 * ONCE_PATH_MAX];
};

/* Paths are built backwards from the end of buf, leaf first. */
struct path_scratch {
	__u8 buf[ONCE_PATH_MAX + 256];
};

struct scratch {
	union {
		struct open_buf open;
		struct exec_buf exec;
		struct proc_buf proc;
	};
	struct path_scratch path;
	/* The open being sent: its name (user address) and file (kernel
	 * address, 0 for a failure); see send_open. */
	__u64 open_fname;
	__u64 open_file;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	/* Atomic even per CPU: a preemptible kernel can run this program
	 * for another task on the same CPU in between. */
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline void count_status(__u16 st)
{
	if (st & ST_FNAME_TRUNCATED)
		count(CNT_FNAME_TRUNCATED);
	if (st & ST_FNAME_UNREADABLE)
		count(CNT_FNAME_UNREADABLE);
	if (st & ST_PATH_TRUNCATED)
		count(CNT_PATH_TRUNCATED);
	if (st & ST_PATH_UNRESOLVED)
		count(CNT_PATH_UNRESOLVED);
	if (st & ST_ARGV_TRUNCATED)
		count(CNT_ARGV_TRUNCATED);
	if (st & ST_ARGV_UNREADABLE)
		count(CNT_ARGV_UNREADABLE);
}

static __always_inline bool emit(void *data, __u64 size)
{
	__u64 flags = 0;

	/* Below the threshold: no wakeup. Above it: the default, which
	 * wakes the reader only if it is waiting (it has consumed
	 * everything); forcing it would interrupt a reader that is already
	 * busy with the backlog, once per event. */
	if (wakeup_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < wakeup_bytes)
		flags = BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, data, size, flags)) {
		count(CNT_RINGBUF_FULL);
		return false;
	}
	count(CNT_EVENTS_SENT);
	return true;
}

/* Whether tgid is in the traced set, by pid alone: not once itself and,
 * with filter_tracked, followed (the processes they fork are followed in
 * handle_fork whatever their other attributes). */
static __always_inline bool followed(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	if (!filter_tracked)
		return true;
	return tracked_bit(tgid);
}

/* Whether the current task passes the attribute filters: cgroup, real uid,
 * comm. Each costs a helper call and at most one map lookup when on, and
 * nothing when off. Every program runs in the context of the task its
 * event is about, except handle_fork: there current is the parent, whose
 * comm, credentials and (barring CLONE_INTO_CGROUP) cgroup the child has. */
static __always_inline bool current_passes(void)
{
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_include, 0) != 1)
		return false;
	if (filter_uid) {
		__u32 uid = (__u32)bpf_get_current_uid_gid();
		if (!bpf_map_lookup_elem(&uid_include, &uid))
			return false;
	}
	if (filter_comm || filter_no_comm) {
		struct comm_key key = {};
		bpf_get_current_comm(key.comm, sizeof(key.comm));
		if (filter_comm && !bpf_map_lookup_elem(&comm_include, &key))
			return false;
		if (filter_no_comm && bpf_map_lookup_elem(&comm_exclude, &key))
			return false;
	}
	return true;
}

/* Whether events of the current task, of process tgid, reach user space.
 * Syscalls decide at entry: an exit, whatever the task's comm by then,
 * completes the event its entry started. */
static __always_inline bool traced(__u32 tgid)
{
	return followed(tgid) && current_passes();
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch_map, &zero);
}

/* Linux 6.2+. Weak: on an older kernel the loader leaves btf_casts 0, the
 * verifier drops every branch that calls it, and the fields are read with
 * BPF_CORE_READ instead. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* addr as a read-only BTF pointer to a kernel type: its fields are then
 * read with plain loads (the JIT guards them with an exception table
 * entry; a fault reads zero), several times cheaper than one
 * bpf_probe_read_kernel call each. Only where btf_casts is set. */
#define btf_cast(addr, type) \
	((type *)bpf_rdonly_cast((void *)(addr), bpf_core_type_id_kernel(type)))

/*
 * t (a tp_btf argument or bpf_get_current_task_btf, both trusted) as a
 * pointer to walk. Since 6.2 the verifier decides the trust of every
 * pointer loaded through a trusted one by looking up "<type>__safe_*"
 * names in the kernel's BTF, a linear search of some 100,000 types, up to
 * three per load and per path explored: that was most of once's
 * verification time (exit_open 15 ms, handle_exit 2 ms for 135
 * instructions; perf: btf_find_by_name_kind). Through an untrusted copy
 * the loads read the same fields and skip the search. Before 6.2 there
 * is no such check and t is walked as is. Not for helpers that want a
 * trusted task (bpf_task_storage_get).
 */
static __always_inline struct task_struct *walkable(struct task_struct *t)
{
	if (btf_casts)
		return btf_cast(t, struct task_struct);
	return t;
}

static __always_inline struct task_struct *current_task(void)
{
	return walkable(bpf_get_current_task_btf());
}

/* t: see walkable. Its fields are plain loads, not a helper call each. */
static __always_inline void fill_task(struct task_info *ti, struct task_struct *t)
{
	t = walkable(t);
	ti->pid = t->tgid;
	ti->tid = t->pid;
	ti->ppid = t->real_parent->tgid;
	ti->start_ns = t->group_leader->start_time;
	ti->exec_id = t->self_exec_id;
	bpf_probe_read_kernel_str(ti->comm, sizeof(ti->comm), t->comm);
}

static __always_inline void fill_current(struct task_info *ti)
{
	fill_task(ti, bpf_get_current_task_btf());
	ti->uid = (__u32)bpf_get_current_uid_gid();
	ti->cgroup_id = bpf_get_current_cgroup_id();
}

/* The file behind fd in the current task's table, or NULL (an address:
 * read its fields with the file_* helpers below). */
static __always_inline struct file *current_fd_file(long fd)
{
	struct task_struct *task = current_task();
	struct fdtable *fdt = task->files->fdt;
	struct file *f = NULL;

	if (fd < 0 || fd >= fdt->max_fds)
		return NULL;
	if (btf_casts) {
		/* The slot read as the first word of a list_head: a load,
		 * where the helper call costs ~20 ns on every open. */
		struct list_head *slot = btf_cast((__u64)fdt->fd + fd * sizeof(f), struct list_head);
		return (struct file *)slot->next;
	}
	bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]);
	return f;
}

/* The file's identity: the hot path of a tallied open reads nothing else. */
static __always_inline void file_id(struct file *f, __u64 *ino, __u32 *dev)
{
	if (btf_casts) {
		struct file *bf = btf_cast(f, struct file);
		*ino = bf->f_inode->i_ino;
		*dev = bf->f_inode->i_sb->s_dev;
	} else {
		*ino = BPF_CORE_READ(f, f_inode, i_ino);
		*dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	}
}

/* The fields walk_step reads, each way. */
static __always_inline __u64 dentry_parent(__u64 d)
{
	if (btf_casts)
		return (__u64)btf_cast(d, struct dentry)->d_parent;
	return (__u64)BPF_CORE_READ((struct dentry *)d, d_parent);
}

static __always_inline __u32 dentry_name(__u64 d, const unsigned char **name)
{
	if (btf_casts) {
		struct dentry *bd = btf_cast(d, struct dentry);
		*name = bd->d_name.name;
		return bd->d_name.len;
	}
	*name = BPF_CORE_READ((struct dentry *)d, d_name.name);
	return BPF_CORE_READ((struct dentry *)d, d_name.len);
}

static __always_inline __u64 vfsmount_root(__u64 m)
{
	if (btf_casts)
		return (__u64)btf_cast(m, struct vfsmount)->mnt_root;
	return (__u64)BPF_CORE_READ((struct vfsmount *)m, mnt_root);
}

static __always_inline __u64 mount_parent(__u64 mnt)
{
	if (btf_casts)
		return (__u64)btf_cast(mnt, struct mount)->mnt_parent;
	return (__u64)BPF_CORE_READ((struct mount *)mnt, mnt_parent);
}

static __always_inline __u64 mount_mountpoint(__u64 mnt)
{
	if (btf_casts)
		return (__u64)btf_cast(mnt, struct mount)->mnt_mountpoint;
	return (__u64)BPF_CORE_READ((struct mount *)mnt, mnt_mountpoint);
}

/* Addresses, not pointers: each step reads through them anew, so the
 * verifier sees one type per slot whatever the iteration. */
struct walk_ctx {
	__u64 dentry;
	__u64 vfsmnt;
	__u64 root_dentry;
	__u64 root_mnt;
	__u32 off;
	__u16 status;
	bool done;
};

/* One step of walk_path: prepend one component, or cross one mount. */
static long walk_step(__u64 i, struct walk_ctx *c)
{
	struct scratch *s;
	__u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
	__u64 mnt = c->vfsmnt - mnt_off;
	const unsigned char *name;

	if (c->dentry == c->root_dentry && c->vfsmnt == c->root_mnt)
		goto done;
	__u64 mnt_root = vfsmount_root(c->vfsmnt);
	__u64 parent = dentry_parent(c->dentry);
	if (c->dentry == mnt_root || c->dentry == parent) {
		__u64 up = mount_parent(mnt);
		/* The namespace's root mount, or a dentry of an internal mount
		 * that no root reaches (pipes, memfd). */
		if (c->dentry != mnt_root || up == mnt)
			goto done;
		c->dentry = mount_mountpoint(mnt);
		c->vfsmnt = up + mnt_off;
		return 0;
	}
	__u32 len = dentry_name(c->dentry, &name);
	__u32 off = c->off;
	if (len > 255 || len + 1 >= off) {
		c->status |= ST_PATH_TRUNCATED;
		goto done;
	}
	s = get_scratch();
	if (!s)
		goto done;
	off -= len;
	/* Masked on a copy the compiler can't see through: it knows len <=
	 * 255 and would drop the mask the verifier needs. */
	__u32 sz = len;
	barrier_var(sz);
	sz &= 0xff;
	bpf_probe_read_kernel(&s->path.buf[off & (ONCE_PATH_MAX - 1)], sz, name);
	off -= 1;
	s->path.buf[off & (ONCE_PATH_MAX - 1)] = '/';
	c->off = off;
	c->dentry = parent;
	return 0;
done:
	c->done = true;
	return 1;
}

/*
 * Write the absolute path of (dentry, vfsmnt) into the scratch path buffer,
 * ending at ONCE_PATH_MAX, crossing mount points, stopping at the current
 * task's root (so a chrooted process sees its own paths). Returns where
 * the path begins << 16 | its status bits. No helper does this from a
 * tracepoint (bpf_d_path is for LSM and fentry); bpf_loop keeps the
 * verifier from walking every depth. Called only from the global
 * functions below, so the walk is verified once per program for each,
 * not once per caller and path to it.
 */
static __always_inline int build_path_from(__u64 dentry, __u64 vfsmnt)
{
	struct scratch *s = get_scratch();
	struct fs_struct *fs = current_task()->fs;
	struct walk_ctx c = {
		.dentry = dentry,
		.vfsmnt = vfsmnt,
		.root_dentry = (__u64)fs->root.dentry,
		.root_mnt = (__u64)fs->root.mnt,
		.off = ONCE_PATH_MAX,
	};

	if (!s)
		return (ONCE_PATH_MAX - 1) << 16 | ST_PATH_UNRESOLVED;
	bpf_loop(ONCE_MAX_DEPTH, walk_step, &c, 0);
	if (!c.done)
		c.status |= ST_PATH_TRUNCATED;
	if (c.off >= ONCE_PATH_MAX) {
		c.off = ONCE_PATH_MAX - 1;
		s->path.buf[ONCE_PATH_MAX - 1] = '/';
	}
	return c.off << 16 | c.status;
}

__noinline int build_path(__u64 dentry, __u64 vfsmnt)
{
	return build_path_from(dentry, vfsmnt);
}

/* build_path of an open file: its dentry and mount are loaded here, where
 * with btf_casts they are two loads instead of two helper calls (a global
 * function's arguments can't be pointers). */
__noinline int build_file_path(__u64 file)
{
	if (btf_casts) {
		struct file *bf = btf_cast(file, struct file);
		return build_path_from((__u64)bf->f_path.dentry, (__u64)bf->f_path.mnt);
	}
	return build_path_from((__u64)BPF_CORE_READ((struct file *)file, f_path.dentry),
			       (__u64)BPF_CORE_READ((struct file *)file, f_path.mnt));
}

/* Split what build_path returns: where the path starts, and its status. */
static __always_inline __u16 walked(__u32 r, __u32 *start)
{
	*start = r >> 16;
	return r & 0xffff;
}

static __always_inline __u16 walk_file_path(__u64 file, __u32 *start)
{
	return walked(build_file_path(file), start);
}

static __always_inline __u16 walk_path(struct dentry *dentry, struct vfsmount *vfsmnt, __u32 *start)
{
	return walked(build_path((__u64)dentry, (__u64)vfsmnt), start);
}

/* Copy the path built in ps (from start) to dst; returns its length. */
static __always_inline __u32 copy_path(__u8 *dst, struct path_scratch *ps, __u32 start)
{
	__u32 len = ONCE_PATH_MAX - start;

	len &= ONCE_PATH_MAX - 1;
	bpf_probe_read_kernel(dst, len, &ps->buf[start & (ONCE_PATH_MAX - 1)]);
	return len;
}

/*
 * Read a user string of at most ONCE_PATH_MAX bytes into dst (which has room
 * for ONCE_PATH_MAX). Returns the length without the NUL, or -1 if unreadable;
 * *status gets ST_FNAME_TRUNCATED when the string was longer than the bound.
 */
static __always_inline long read_user_name(__u8 *dst, const char *src, __u16 *status)
{
	long n = bpf_probe_read_user_str(dst, ONCE_PATH_MAX, src);
	char next = 0;

	if (n <= 0)
		return -1;
	if (n == ONCE_PATH_MAX) {
		/* Exactly full: longer only if the byte after the kept ones
		 * isn't the terminator. */
		bpf_probe_read_user(&next, 1, src + ONCE_PATH_MAX - 1);
		if (next)
			*status |= ST_FNAME_TRUNCATED;
	}
	return n - 1;
}

/* ---- the files each image has opened (first_opens_unsent) ---- */

/*
 * Which files an image has opened, so that only the opens a finding needs
 * are sent: a repeat (whose event then carries the path) and not the first
 * open of each file, which is counted. One open-addressing table per
 * process, in its group leader's task storage, shared by its threads and
 * deleted at exec: a new image starts with no files. A small table first,
 * for the many processes that open a few files; a big one for a file
 * whose first SEEN_SMALL_PROBES slots in the small one are taken.
 *
 * A slot holds a file's signature (file_sig), never 0, and is never
 * emptied while its image lives. Which table a file goes to and whether
 * it is there depend on nothing but the slots: two threads opening a new
 * file at once walk the same slots, and the compare-and-swap on the first
 * empty one makes exactly one of them its first open. (A count of files
 * deciding it let two threads both add one file, one to each table, at
 * the moment the small one filled: a repeat lost.) A file whose first
 * SEEN_BIG_PROBES slots in the big one are taken too is not told apart:
 * its opens are counted (CNT_FILES_UNTRACKED), its repeats not found. The
 * big table holds some 5,000 files before that happens.
 */
#define SEEN_SMALL 256
#define SEEN_SMALL_PROBES 8
#define SEEN_BIG 8000 /* 64,000 bytes: task storage's bound is 64 KiB */
#define SEEN_BIG_PROBES 32
#define PROBE_BASES 16

/* A basename that failed to open (a probe errno): a later successful open
 * of the same basename ends user space's probe chain, and is sent. */
struct probe_base {
	__u64 hash; /* FNV-1a of the basename, read backwards */
	__u64 head; /* its first 8 bytes, zero padded */
	__u64 tail; /* its last 8 bytes, zero padded */
	__u64 len;
	__u64 state; /* 0 free, 1 being written, 2 set (64 bits: atomics) */
};

struct image_files {
	struct probe_base probes[PROBE_BASES];
	__u64 pending;	/* probes[] in use */
	/* The last bytes of the basenames pending, a bit each (never
	 * cleared: a stale one only costs a look at probes[]). A name that
	 * ends in none of them ends no probe: most are told so here. */
	__u64 last[4];
	__u32 overflow; /* 1: a failed basename did not fit probes[]: any open may end one */
	__u32 no_big;	/* 1: making image_files_big failed: the small one is all */
	__u64 slot[SEEN_SMALL];
};

struct image_files_big {
	__u64 slot[SEEN_BIG];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct image_files);
} image_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct image_files_big);
} image_files_big SEC(".maps");

/* A file's signature: exact for an inode number below 2^32 on a device
 * below 2^31 (nearly every file); otherwise a 64-bit mix, with the top
 * bit set so it can't equal an exact one. Never 0. */
static __always_inline __u64 file_sig(__u32 dev, __u64 ino)
{
	__u64 sig;

	if (ino < (1ULL << 32) && dev < (1U << 31))
		sig = (__u64)dev << 32 | ino;
	else
		sig = ((ino ^ ((__u64)dev << 17)) * 0x9e3779b97f4a7c15ULL) | (1ULL << 63);
	return sig ? sig : 1ULL << 63;
}

enum seen_result {
	SEEN_FOUND = 1,	    /* the image opened the file before */
	SEEN_ADDED = 2,	    /* its first open: now in the table */
	SEEN_FULL = 4,	    /* not in the table, which has no room: untracked */
	SEEN_ENDS_PROBE = 8, /* its name may end a pending probe: send it */
};

struct seen_ctx {
	struct image_files *small;
	struct image_files_big *big;
	__u64 sig;
	__u32 start;
	bool solo; /* the process has one thread: no other writes the table */
	int res;   /* SEEN_FOUND, SEEN_ADDED, or 0: every slot looked at taken */
};

/* One slot of a probe sequence: is sig there, or (add) can it go there?
 * Returns 1 to stop the sequence. */
static __always_inline long seen_slot(__u64 *slot, struct seen_ctx *c)
{
	__u64 v = *slot;

	if (v == c->sig) {
		c->res = SEEN_FOUND;
		return 1;
	}
	if (v)
		return 0;
	/* An empty slot ends the sequence: sig is in no later one, nor in
	 * the big table (it went there only past a full sequence here). */
	if (c->solo) {
		*slot = c->sig;
		c->res = SEEN_ADDED;
		return 1;
	}
	v = __sync_val_compare_and_swap(slot, 0, c->sig);
	if (v == 0)
		c->res = SEEN_ADDED;
	else if (v == c->sig) /* another thread of the image, just now */
		c->res = SEEN_FOUND;
	else
		return 0; /* another file took it: go on */
	return 1;
}

static long seen_step_small(__u64 i, struct seen_ctx *c)
{
	if (i >= SEEN_SMALL_PROBES)
		return 1;
	return seen_slot(&c->small->slot[(c->start + i) & (SEEN_SMALL - 1)], c);
}

static long seen_step_big(__u64 i, struct seen_ctx *c)
{
	__u32 idx = c->start + (__u32)i;

	if (i >= SEEN_BIG_PROBES || c->start >= SEEN_BIG)
		return 1;
	if (idx >= SEEN_BIG)
		idx -= SEEN_BIG;
	if (idx >= SEEN_BIG)
		return 1;
	return seen_slot(&c->big->slot[idx], c);
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

/* A walk back through a name in buf, hashing its bytes: at most as many
 * as the loop runs, stopping at a '/' if slash_ends. */
struct base_ctx {
	__u8 *buf; /* ONCE_PATH_MAX bytes of a scratch buffer */
	__u64 hash;
	__u32 end; /* the byte after the last one hashed */
	__u32 len; /* bytes hashed */
	bool slash_ends;
};

static long base_step(__u64 i, struct base_ctx *c)
{
	__u8 ch;

	if (i >= c->end)
		return 1;
	ch = c->buf[(c->end - 1 - (__u32)i) & (ONCE_PATH_MAX - 1)];
	if (ch == '/' && c->slash_ends)
		return 1;
	c->hash = (c->hash ^ ch) * FNV_PRIME;
	c->len++;
	return 0;
}

/* The first and the last 8 bytes of the len bytes at buf[start], zero
 * padded: a cheap test before the hash. */
static __always_inline void base_words(__u8 *buf, __u32 start, __u32 len, __u64 *head, __u64 *tail)
{
	__u32 n = len < 8 ? len : 8;
	__u64 h = 0, t = 0;

	/* All 8 bytes read, those past the basename then masked off: no
	 * branch per byte, whose paths the verifier would walk apart. */
	for (__u32 j = 0; j < 8; j++) {
		h |= (__u64)buf[(start + j) & (ONCE_PATH_MAX - 1)] << (8 * j);
		t |= (__u64)buf[(start + len - n + j) & (ONCE_PATH_MAX - 1)] << (8 * j);
	}
	if (n < 8) {
		h &= (1ULL << (8 * n)) - 1;
		t &= (1ULL << (8 * n)) - 1;
	}
	*head = h;
	*tail = t;
}

/* A look through an image's pending probes (bpf_loop: its step is verified
 * once, where an unrolled loop of 16 had exit_open's verification take
 * 40 ms). */
struct probe_ctx {
	struct image_files *t;
	__u8 *buf; /* the name, in a scratch buffer */
	__u64 hash, head, tail;
	__u32 n;   /* ends_step: the name's length */
	__u32 len; /* add_step, claim_step: the basename's length */
	__u8 end;  /* claim_step: its last byte */
	bool done;
	int cand; /* ends_step: the first pending basename the name may end with */
};

/* May the name end with pending basename i (its length, the '/' before
 * it, its first and last 8 bytes)? The hash is checked after the loop:
 * a bpf_loop inside a bpf_loop step made the step's verification 1,350
 * instructions. */
static long ends_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];
	__u32 len = pb->len, n = c->n;
	__u64 head, tail;

	if (pb->state != 2 || len == 0 || len > 255 || len > n || n >= ONCE_PATH_MAX)
		return 0;
	if (len < n && c->buf[(n - len - 1) & (ONCE_PATH_MAX - 1)] != '/')
		return 0;
	base_words(c->buf, n - len, len, &head, &tail);
	if (head != pb->head || tail != pb->tail)
		return 0;
	c->cand = i & (PROBE_BASES - 1);
	return 1;
}

/* Is the basename pending already as i? */
static long add_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];

	if (pb->state == 2 && pb->hash == c->hash && pb->len == c->len) {
		c->done = true;
		return 1;
	}
	return 0;
}

/* Take slot i for the basename if it is free. */
static long claim_step(__u64 i, struct probe_ctx *c)
{
	struct probe_base *pb = &c->t->probes[i & (PROBE_BASES - 1)];
	__u8 end = c->end;

	if (pb->state || __sync_val_compare_and_swap(&pb->state, 0, 1) != 0)
		return 0;
	pb->hash = c->hash;
	pb->head = c->head;
	pb->tail = c->tail;
	pb->len = c->len;
	__sync_fetch_and_or(&c->t->last[(end >> 6) & 3], 1ULL << (end & 63));
	__sync_fetch_and_add(&c->t->pending, 1);
	__sync_lock_test_and_set(&pb->state, 2);
	c->done = true;
	return 1;
}

/*
 * Whether a successful open of the name at user address fname may end one
 * of t's pending probes (its basename is a pending one's): if so, that one
 * is pending no more. Errs towards yes: an open it says yes to is sent.
 * Reading the name is most of its cost, paid only while probes pend.
 */
static __always_inline bool ends_probe(struct image_files *t, __u64 fname)
{
	struct scratch *s = get_scratch();
	struct probe_ctx c = { .t = t };
	long n;

	if (!s || t->overflow)
		return true;
	n = bpf_probe_read_user_str(s->path.buf, ONCE_PATH_MAX, (const void *)fname);
	if (n <= 1 || n >= ONCE_PATH_MAX)
		return true; /* unreadable, or maybe cut: can't tell */
	n -= 1;
	__u8 end = s->path.buf[(n - 1) & (ONCE_PATH_MAX - 1)];
	if (end == '/')
		return true;
	if (!(t->last[(end >> 6) & 3] & (1ULL << (end & 63))))
		return false;
	c.buf = s->path.buf;
	c.n = n;
	c.cand = -1;
	bpf_loop(PROBE_BASES, ends_step, &c, 0);
	if (c.cand < 0)
		return false;
	/* A candidate: the open is sent. Only if the whole basename is the
	 * one pending (the hash) is it pending no more; with a lookalike,
	 * the one it resembles stays pending, and others are not looked at:
	 * they too stay, at worst sending more. */
	struct probe_base *pb = &t->probes[c.cand & (PROBE_BASES - 1)];
	__u32 len = pb->len;
	struct base_ctx b = { .buf = s->path.buf, .hash = FNV_OFFSET, .end = n };
	if (len > 255)
		return true;
	bpf_loop(len, base_step, &b, 0);
	if (b.hash == pb->hash && __sync_val_compare_and_swap(&pb->state, 2, 0) == 2)
		__sync_fetch_and_add(&t->pending, -1);
	return true;
}

/* The leader's table, made if it has none. A thread of a new process
 * that loses the race to make it gets NULL from the create: then it is
 * there to look up. */
static __always_inline struct image_files *image_files_of(struct task_struct *leader)
{
	struct image_files *t;

	t = bpf_task_storage_get(&image_files, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		t = bpf_task_storage_get(&image_files, leader, 0, 0);
	return t;
}

/*
 * The current image's successful open of the file sig through the name
 * at fname: look it up, adding it if it is new and there is room. Returns
 * enum seen_result bits, or 0 when there is no table (no memory): then the
 * open is sent, as without first_opens_unsent. A global function,
 * verified once.
 */
__noinline int image_seen(__u64 sig, __u64 fname)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct image_files *t;
	struct seen_ctx c = { .sig = sig };
	/* Files made together have consecutive inode numbers, and are often
	 * opened together: eight of them share a group of slots (a cache
	 * line), which groups are spread over the table by a hash. */
	__u64 h = (sig >> 3) * 0x9e3779b97f4a7c15ULL;
	__u32 in_group = sig & 7;
	int res;

	t = image_files_of(leader);
	if (!t)
		return 0;
	if (btf_casts)
		c.solo = current_task()->signal->nr_threads == 1;
	c.small = t;
	c.start = (h >> 59) * 8 + in_group;
	bpf_loop(SEEN_SMALL_PROBES, seen_step_small, &c, 0);
	if (!c.res && !t->no_big) {
		c.big = bpf_task_storage_get(&image_files_big, leader, 0, 0);
		if (!c.big) {
			c.big = bpf_task_storage_get(&image_files_big, leader, 0,
						     BPF_LOCAL_STORAGE_GET_F_CREATE);
			/* Made by another thread just now, or no memory. */
			if (!c.big)
				c.big = bpf_task_storage_get(&image_files_big, leader, 0, 0);
			if (!c.big)
				t->no_big = 1;
		}
		if (c.big) {
			/* Multiply-shift: a group in [0, SEEN_BIG / 8). */
			c.start = (((h >> 32) * (SEEN_BIG / 8)) >> 32) * 8 + in_group;
			bpf_loop(SEEN_BIG_PROBES, seen_step_big, &c, 0);
		}
	}
	res = c.res ? c.res : SEEN_FULL;
	if (res != SEEN_FOUND && (t->pending || t->overflow) && ends_probe(t, fname))
		res |= SEEN_ENDS_PROBE;
	return res;
}

static __always_inline bool probe_errno(long ret)
{
	/* As collector's probeErrno: ENOENT, EACCES, ENOTDIR, ELOOP. */
	return ret == -2 || ret == -13 || ret == -20 || ret == -40;
}

/*
 * A failed open of the name at s->open.data (flen bytes): remember its
 * basename among the image's pending ones, or mark them overflowed. A
 * global function, verified once.
 */
__noinline int probe_add(__u32 flen)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct scratch *s = get_scratch();
	struct image_files *t;
	struct base_ctx c = { .hash = FNV_OFFSET, .slash_ends = true };
	struct probe_ctx pc = {};

	t = image_files_of(leader);
	if (!t || !s)
		return 0; /* no table: every open is sent */
	if (flen == 0 || flen >= ONCE_PATH_MAX)
		return 0; /* no name: user space starts no chain */
	c.buf = s->open.data;
	c.end = flen;
	if (s->open.data[(flen - 1) & (ONCE_PATH_MAX - 1)] == '/') {
		/* "dir/": its basename is not at the end. Rare: give up
		 * telling which opens end a probe. */
		t->overflow = 1;
		return 0;
	}
	bpf_loop(256, base_step, &c, 0);
	if (c.len == 0 || c.len > 255) {
		t->overflow = 1;
		return 0;
	}
	pc.t = t;
	pc.hash = c.hash;
	pc.len = c.len;
	pc.end = s->open.data[(flen - 1) & (ONCE_PATH_MAX - 1)];
	base_words(s->open.data, flen - c.len, c.len, &pc.head, &pc.tail);
	bpf_loop(PROBE_BASES, add_step, &pc, 0);
	if (pc.done)
		return 0; /* pending already */
	bpf_loop(PROBE_BASES, claim_step, &pc, 0);
	if (!pc.done)
		t->overflow = 1;
	return 0;
}

static __always_inline struct proc_buf *proc_event_for(struct task_struct *t, __u32 kind)
{
	struct scratch *s = get_scratch();
	struct proc_buf *pb;

	if (!s)
		return NULL;
	pb = &s->proc;
	pb->ev.hdr.kind = kind;
	pb->ev.hdr.status = 0;
	pb->ev.hdr.syscall = 0;
	fill_task(&pb->ev.task, t);
	pb->ev.task.uid = (__u32)bpf_get_current_uid_gid();
	pb->ev.task.cgroup_id = bpf_get_current_cgroup_id();
	pb->ev.ts_ns = bpf_ktime_get_ns();
	pb->ev.exe_ino = 0;
	pb->ev.exe_dev = 0;
	pb->ev.parent_pid = 0;
	pb->ev.parent_start_ns = 0;
	pb->ev.exit_code = 0;
	pb->ev.path_len = 0;
	pb->ev.unsent = 0;
	return pb;
}

/* Report pp's count of opens counted, not sent, as an EVENT_UNSENT of
 * task t (current): for the image before t's present one if prev_image
 * (at exec, self_exec_id has just been incremented). */
static __always_inline void report_unsent(struct pending_open *pp, struct task_struct *t, bool prev_image)
{
	struct proc_buf *pb = proc_event_for(t, EVENT_UNSENT);

	if (!pb)
		return;
	pb->ev.unsent = pp->unsent;
	if (prev_image)
		pb->ev.task.exec_id--;
	pp->unsent = 0;
	emit(pb, sizeof(struct proc_event));
}

/* The same, at current's exit or exec: the image it leaves. */
static __always_inline void flush_unsent(struct task_struct *t, bool prev_image)
{
	struct pending_open *pp;

	if (!first_opens_unsent)
		return;
	pp = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
	if (pp && pp->unsent)
		report_unsent(pp, t, prev_image);
}

/* Reported at least every this many: a thread that only opens new files
 * (a server, a long copy) has its opens reach the per-comm counts while
 * it runs, not only at its exit. */
#define UNSENT_REPORT 256

/* One more successful open counted, not sent. */
static __always_inline void count_unsent(struct pending_open *pp, bool untracked)
{
	count(CNT_OPENS_UNSENT);
	if (untracked)
		count(CNT_FILES_UNTRACKED);
	if (++pp->unsent >= UNSENT_REPORT)
		report_unsent(pp, bpf_get_current_task_btf(), false);
}

/* ---- open, openat, openat2, creat ---- */

static __always_inline int open_enter(__u8 sys, long dirfd, const char *fname, __u64 flags,
				      __u64 mode, const void *how)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct pending_open *p;

	/* Before the slot: a thread of a process outside the traced tree
	 * never gets one, so every slot is a followed thread's. */
	if (!followed(tgid))
		return 0;
	p = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		count(CNT_ENTER_MAP_FULL);
		return 0;
	}
	if (!current_passes())
		return 0;
	/* The same arguments as the thread's last repeat counted in its
	 * slot: most likely one more (a loop reading one file). Its time is
	 * only wanted for a sample, so the clock, the dearest part of an
	 * entry (~50 ns here), is read for one in TALLY_TIME_EVERY of them.
	 * Should it be something else after all (the same buffer now naming
	 * another file), its exit sends it marked ST_UNTIMED. */
	p->predicted = p->armed && p->local_fname == (__u64)fname &&
		       p->local_how == (__u64)how && p->local_flags == flags &&
		       p->local_dirfd == (__s32)dirfd && p->local_sys == sys;
	if (p->predicted && (++p->local_skip & (TALLY_TIME_EVERY - 1)))
		p->enter_ns = 0;
	else
		p->enter_ns = bpf_ktime_get_ns();
	p->fname = (__u64)fname;
	p->how = (__u64)how;
	p->flags = flags;
	p->mode = mode;
	p->dirfd = (__s32)dirfd;
	p->syscall = sys;
	return 0;
}

struct open_how_user {
	__u64 flags;
	__u64 mode;
	__u64 resolve;
};

/* A signature of the file and how it was opened. Two opens that collide
 * only cost a map lookup: the tally map, keyed by the whole open_key, is
 * what counts. One word, so the check below is four compares and the
 * verifier has few paths to walk. */
static __always_inline __u64 open_sig(struct open_key *k)
{
	return (k->ino * 0x9e3779b97f4a7c15ULL) ^ ((__u64)k->dev << 40) ^ (k->flags << 8) ^ k->syscall;
}

/* The arguments of the open being counted in the slot, what open_enter
 * predicts by. pp->flags is still the entry's (openat2's are in how). */
static __always_inline void remember_local_args(struct pending_open *pp, __u8 sys)
{
	pp->local_fname = pp->fname;
	pp->local_how = pp->how;
	pp->local_flags = pp->flags;
	pp->local_dirfd = pp->dirfd;
	pp->local_sys = sys;
	pp->armed = 1;
}

/* At most this many repeats wait in a thread's slot before they are added
 * to open_tallies: what a live view lags by, per thread and kind. */
#define LOCAL_FLUSH 16

/* Add the repeats counted in local[i] to their kind's tally. A kind gone
 * from the map (evicted, or read for the last time at its image's end: a
 * thread that exits after its process's exit event) loses them, counted
 * in CNT_TALLIES_LATE. */
static __always_inline void flush_local(struct pending_open *pp, __u32 i)
{
	struct local_tally *lt = &pp->local[i & (RECENT_OPENS - 1)];
	struct open_tally *v;

	if (!lt->opens)
		return;
	v = bpf_map_lookup_elem(&open_tallies, &lt->key);
	if (v) {
		__sync_fetch_and_add(&v->opens, lt->opens);
		if (lt->timed) {
			__sync_fetch_and_add(&v->timed_ns, lt->ns);
			__sync_fetch_and_add(&v->timed, lt->timed);
		}
	} else {
		count(CNT_TALLIES_LATE);
	}
	lt->opens = 0;
	lt->timed = 0;
	lt->ns = 0;
}

/* Which of the thread's recent opens k's kind is (its file the same way),
 * or -1: then it takes the place of the oldest, whose local count is
 * added to the map first. */
static __always_inline int recent_index(struct pending_open *pp, struct open_key *k)
{
	__u64 sig = open_sig(k);
	__u32 j;

	if (pp->recent[0] == sig)
		return 0;
	if (pp->recent[1] == sig)
		return 1;
	if (pp->recent[2] == sig)
		return 2;
	if (pp->recent[3] == sig)
		return 3;
	j = pp->recent_next++ & (RECENT_OPENS - 1);
	flush_local(pp, j);
	pp->local[j].on = 0;
	pp->recent[j] = sig;
	return -1;
}

/* The end of the thread's tallying: at its exit, and at an exec, which
 * starts a new image (new keys). */
static __always_inline void end_local(void)
{
	struct pending_open *pp =
		bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);

	if (!pp || !pp->local_any)
		return;
	for (__u32 i = 0; i < RECENT_OPENS; i++) {
		flush_local(pp, i);
		pp->local[i].on = 0;
	}
	pp->local_any = 0;
	/* A new image may pass the same name buffer: nothing to predict. */
	pp->armed = 0;
}


/*
 * Count one more repeated open of its key. Returns true when the open is
 * past the first open_send_max repeats counted for its key: tallied, and
 * not to be sent. *status gets ST_TALLY_NEXT on the last one to be sent,
 * which tells user space to read the key back.
 */
static __always_inline bool tallied(struct open_key *k, __u64 enter_ns, __u16 *status)
{
	struct task_struct *task = current_task();
	struct open_tally *v;
	__u64 n;

	k->pid = task->tgid;
	k->start_ns = task->group_leader->start_time;
	k->exec_id = task->self_exec_id;
	v = bpf_map_lookup_elem(&open_tallies, k);
	if (!v) {
		struct open_tally fresh = { .opens = 1 };
		if (!bpf_map_update_elem(&open_tallies, k, &fresh, BPF_NOEXIST))
			n = 1;
		else if ((v = bpf_map_lookup_elem(&open_tallies, k)))
			n = __sync_fetch_and_add(&v->opens, 1) + 1;
		else
			return false; /* no slot: send it */
	} else {
		n = __sync_fetch_and_add(&v->opens, 1) + 1;
	}
	if (n < open_send_max)
		return false;
	if (n == open_send_max || !v) {
		*status |= ST_TALLY_NEXT;
		return false;
	}
	/* Those not sent are opens - open_send_max: no second count. */
	if (enter_ns && (n == open_send_max + 1 || !(n & (TALLY_TIME_EVERY - 1)))) {
		__sync_fetch_and_add(&v->timed_ns, bpf_ktime_get_ns() - enter_ns);
		__sync_fetch_and_add(&v->timed, 1);
	}
	return true;
}

/*
 * Complete the open event open_exit left in the scratch (its fixed fields,
 * open_fname and open_file) with the name, the path, the task, and send
 * it. A global function: the verifier checks it once, not once more for
 * every path open_exit can take to it.
 */
__noinline int send_open(void)
{
	struct scratch *s = get_scratch();
	struct open_event *ev;
	__u32 start = 0, plen = 0;
	long flen;

	if (!s)
		return 0;
	ev = &s->open.ev;
	fill_current(&ev->task);
	flen = read_user_name(s->open.data, (const char *)s->open_fname, &ev->hdr.status);
	if (flen < 0) {
		ev->hdr.status |= ST_FNAME_UNREADABLE;
		flen = 0;
	}
	flen &= ONCE_PATH_MAX - 1;
	ev->fname_len = flen;
	/* A failed probe, which a later open of its basename may end: that
	 * one must be sent even if it is its file's first. */
	if (first_opens_unsent && probe_errno(ev->ret))
		probe_add(flen);

	if (ev->ret >= 0) {
		if (s->open_file) {
			ev->hdr.status |= walk_file_path(s->open_file, &start);
			plen = copy_path(&s->open.data[flen], &s->path, start);
		} else {
			ev->hdr.status |= ST_PATH_UNRESOLVED;
		}
	} else if (flen > 0 && s->open.data[0] != '/') {
		/* A failed relative open: keep the directory it was tried in. */
		struct dentry *d = NULL;
		struct vfsmount *m = NULL;
		if (ev->dirfd == AT_FDCWD) {
			struct fs_struct *fs = current_task()->fs;
			d = BPF_CORE_READ(fs, pwd.dentry);
			m = BPF_CORE_READ(fs, pwd.mnt);
		} else {
			struct file *df = current_fd_file(ev->dirfd);
			if (df) {
				d = BPF_CORE_READ(df, f_path.dentry);
				m = BPF_CORE_READ(df, f_path.mnt);
			}
		}
		if (d && m) {
			ev->hdr.status |= walk_path(d, m, &start) | ST_PATH_IS_BASE;
			plen = copy_path(&s->open.data[flen], &s->path, start);
		}
	}
	ev->path_len = plen;
	count_status(ev->hdr.status);
	emit(&s->open, sizeof(struct open_event) + ((flen + plen) & (2 * ONCE_PATH_MAX - 1)));
	return 0;
}

static __always_inline int open_exit(long ret)
{
	struct pending_open *pp;
	struct scratch *s;
	struct open_event *ev;
	struct file *f = NULL;
	struct open_key k;
	__u64 enter_ns, flags, mode, resolve = 0;
	__u16 status = 0;
	__u8 sys;
	int i = -1; /* which of the thread's recent opens this one repeats */

	if (!followed(bpf_get_current_pid_tgid() >> 32))
		return 0;
	pp = bpf_task_storage_get(&pending_opens, bpf_get_current_task_btf(), 0, 0);
	if (!pp || !pp->syscall) {
		/* No entry recorded. A thread never seen at an entry began
		 * this call before the programs were attached: outside the
		 * trace, not a loss. One seen before lost this entry. */
		if (pp && current_passes())
			count(CNT_MISSED_ENTER);
		return 0;
	}
	/* The slot is the thread's own: nothing else writes it meanwhile. */
	sys = pp->syscall;
	pp->syscall = 0;
	enter_ns = pp->enter_ns;
	flags = pp->flags;
	mode = pp->mode;

	if (sys == SYS_OPENAT2) {
		struct open_how_user how = {};
		if (!bpf_probe_read_user(&how, sizeof(how), (void *)pp->how)) {
			flags = how.flags;
			mode = how.mode;
			resolve = how.resolve;
		}
	}
	__builtin_memset(&k, 0, sizeof(k));
	if (ret >= 0) {
		f = current_fd_file(ret);
		if (f) {
			file_id(f, &k.ino, &k.dev);
			k.flags = flags;
			k.syscall = sys;
			/* Checked before anything is read or resolved: a
			 * tallied open costs this and no more. Within one
			 * image a thread's pid, start and exec id are fixed
			 * (end_local runs at exec), so the file and the way it
			 * was opened tell the kind. */
			if (open_send_max)
				i = recent_index(pp, &k);
			if (i >= 0) {
				struct local_tally *lt = &pp->local[i & (RECENT_OPENS - 1)];
				if (lt->on && lt->key.ino == k.ino && lt->key.dev == k.dev &&
				    lt->key.flags == k.flags && lt->key.syscall == k.syscall) {
					lt->opens++;
					/* A predicted entry was timed only if it
					 * is the sample; another, one in
					 * TALLY_TIME_EVERY. */
					if (enter_ns && (pp->predicted ||
							 !(lt->opens & (TALLY_TIME_EVERY - 1)))) {
						lt->ns += bpf_ktime_get_ns() - enter_ns;
						lt->timed++;
					}
					/* Predicted: they are these already. */
					if (!pp->predicted)
						remember_local_args(pp, sys);
					if (lt->opens >= LOCAL_FLUSH)
						flush_local(pp, i);
					return 0;
				}
				if (tallied(&k, enter_ns, &status)) {
					/* Past the sent ones: its later repeats
					 * are counted in the slot. Another kind
					 * there (a signature collision) is
					 * added to the map first. */
					flush_local(pp, i);
					lt->key = k;
					lt->on = 1;
					pp->local_any = 1;
					remember_local_args(pp, sys);
					return 0;
				}
			}
		}
	}

	/* Not a repeat counted in the slot: were it predicted to be one,
	 * predict no more until the next is (a buffer that named a repeated
	 * file now naming others, one after the other). */
	if (pp->predicted)
		pp->armed = 0;
	/* Only an open that repeats none of the thread's recent ones may go
	 * unsent: one that does went through tallied(), and user space must
	 * see it to read its kind's tally back (ST_TALLY_NEXT). It looks like
	 * a repeat yet may be its image's first open of the file (recent[]
	 * outlives an exec): then it is sent as one. */
	if (first_opens_unsent && f && (flags & O_PATH)) {
		/* O_PATH opens are no file's use: counted, never told apart
		 * (nor are they by user space). */
		if (i < 0) {
			count_unsent(pp, false);
			return 0;
		}
	} else if (first_opens_unsent && f) {
		int seen = image_seen(file_sig(k.dev, k.ino), pp->fname);
		if (seen & SEEN_FOUND) {
			status |= ST_SEEN_BEFORE;
		} else if (i < 0 && seen && !(seen & SEEN_ENDS_PROBE)) {
			/* A first open that ends no probe: counted. */
			count_unsent(pp, seen & SEEN_FULL);
			return 0;
		}
	}
	s = get_scratch();
	if (!s)
		return 0;
	ev = &s->open.ev;
	ev->hdr.kind = EVENT_OPEN;
	ev->hdr.status = status;
	ev->hdr.syscall = sys;
	ev->exit_ns = bpf_ktime_get_ns();
	ev->enter_ns = enter_ns;
	if (!enter_ns) {
		/* Predicted a counted repeat, it was not: no entry time. */
		ev->enter_ns = ev->exit_ns;
		ev->hdr.status |= ST_UNTIMED;
		count(CNT_OPENS_UNTIMED);
	}
	ev->flags = flags;
	ev->mode = mode;
	ev->resolve = resolve;
	ev->dirfd = pp->dirfd;
	ev->ret = (__s32)ret;
	ev->dev = k.dev;
	ev->ino = k.ino;
	ev->unsent = pp->unsent;
	pp->unsent = 0;
	s->open_fname = pp->fname;
	s->open_file = (__u64)f;
	return send_open();
}

SEC("tracepoint/syscalls/sys_enter_open")
int enter_open(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPEN, AT_FDCWD, (const char *)ctx->args[0], ctx->args[1],
			  ctx->args[2], NULL);
}

SEC("tracepoint/syscalls/sys_enter_openat")
int enter_openat(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPENAT, (int)ctx->args[0], (const char *)ctx->args[1],
			  ctx->args[2], ctx->args[3], NULL);
}

SEC("tracepoint/syscalls/sys_enter_openat2")
int enter_openat2(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_OPENAT2, (int)ctx->args[0], (const char *)ctx->args[1], 0, 0,
			  (const void *)ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_enter_creat")
int enter_creat(struct syscall_enter_ctx *ctx)
{
	return open_enter(SYS_CREAT, AT_FDCWD, (const char *)ctx->args[0],
			  O_CREAT | O_WRONLY | O_TRUNC, ctx->args[1], NULL);
}

/* One program for the exits of open, openat, openat2 and creat, which all
 * look alike (the entry recorded which call it was): the loader attaches
 * it to each, and the verifier checks it once instead of four times. */
SEC("tracepoint/syscalls/sys_exit_openat")
int exit_open(struct syscall_exit_ctx *ctx)
{
	return open_exit(ctx->ret);
}

/* ---- execve, execveat ---- */

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

/*
 * Read argv (user memory of the current task) into eb->data, right after
 * the filename. A bpf_loop, not a bounded loop: the verifier checks the
 * step once instead of 64 times, in each of the programs that read argv
 * (3,100-3,700 instructions processed and 2.3-2.9 ms each, a fifth of
 * once's start-up).
 */
static __always_inline __u64 read_argv(struct exec_buf *eb, const char *const *argv)
{
	struct argv_ctx c = { .eb = eb, .argv = argv, .base = eb->ev.fname_len };

	eb->ev.hdr.status &= ~(ST_ARGV_TRUNCATED | ST_ARGV_UNREADABLE);
	bpf_loop(ONCE_ARGC_MAX, argv_step, &c, 0);
	if (!c.done) {
		/* ONCE_ARGC_MAX kept: cut if there is another one. */
		const char *arg = NULL;
		bpf_probe_read_user(&arg, sizeof(arg), &argv[ONCE_ARGC_MAX]);
		if (arg)
			c.status |= ST_ARGV_TRUNCATED;
	}
	eb->ev.hdr.status |= c.status;
	eb->ev.argc = c.argc;
	eb->ev.args_len = c.off > ONCE_ARGS_MAX ? ONCE_ARGS_MAX : c.off;
	return c.fault;
}

static __always_inline void read_exec_fname(struct exec_buf *eb, const char *fname)
{
	__u16 st = 0;
	long n = read_user_name(eb->data, fname, &st);

	eb->ev.hdr.status &= ~(ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE);
	if (n < 0) {
		eb->ev.hdr.status |= ST_FNAME_UNREADABLE;
		n = 0;
	}
	eb->ev.hdr.status |= st;
	eb->ev.fname_len = n;
}

#define ST_EXEC_STRINGS (ST_FNAME_TRUNCATED | ST_FNAME_UNREADABLE | ST_ARGV_TRUNCATED | ST_ARGV_UNREADABLE)

/* The size of eb sent: flen < ONCE_PATH_MAX and alen <= ONCE_ARGS_MAX. The
 * mask bounds the size for the verifier and keeps every value it can take
 * (it must be a power of two less one: a mask with a hole in it cuts the
 * size of a filename and argv of 4 KiB or more). */
static __always_inline __u64 exec_size(struct exec_buf *eb)
{
	__u32 flen = eb->ev.fname_len & (ONCE_PATH_MAX - 1);
	__u32 alen = eb->ev.args_len & (ONCE_ARGS_MAX * 2 - 1);

	if (alen > ONCE_ARGS_MAX)
		alen = ONCE_ARGS_MAX;
	return sizeof(struct exec_event) + ((flen + alen) & (ONCE_PATH_MAX + ONCE_ARGS_MAX - 1));
}

/* Send the strings in eb (see EVENT_EXEC_ARGS); whether they went. */
static __always_inline bool send_exec_args(struct exec_buf *eb, __u32 old_tid)
{
	__u64 id = bpf_get_current_pid_tgid();

	eb->ev.hdr.kind = EVENT_EXEC_ARGS;
	eb->ev.task = (struct task_info){ .pid = id >> 32, .tid = (__u32)id };
	eb->ev.old_tid = old_tid;
	eb->ev.enter_ns = eb->ev.exit_ns = 0;
	eb->ev.ret = 0;
	return emit(&eb->ev, exec_size(eb));
}

static __always_inline int exec_enter(__u8 sys, long dirfd, const char *fname,
				      const char *const *argv, __u32 at_flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct exec_pending p = {}, *last;
	struct scratch *s;
	struct exec_buf *eb;

	if (!traced(tgid))
		return 0;
	s = get_scratch();
	if (!s)
		return 0;
	p.enter_ns = bpf_ktime_get_ns();
	p.fname_ptr = (__u64)fname;
	p.argv_ptr = (__u64)argv;
	p.old_tid = tid;
	p.dirfd = (__s32)dirfd;
	p.at_flags = at_flags;
	p.syscall = sys;
	p.in_flight = 1;
	eb = &s->exec;
	eb->ev.hdr.status = 0;
	eb->ev.hdr.syscall = sys;
	read_exec_fname(eb, fname);
	/*
	 * A forked child's argv strings often sit in pages it has not touched
	 * (a string literal in the program's text), which a read here can't
	 * fault in; and a failed probe of a PATH search never copies them, so
	 * they stay out for the next probe too. Each read of them costs a
	 * page fault taken and fixed up (1.4 us on this VM): an argv the
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
		p.bad_addr = read_argv(eb, argv);
	}
	if (eb->ev.hdr.status & ST_ARGV_UNREADABLE)
		p.bad_argv = (__u64)argv;
	p.fname_len = eb->ev.fname_len;
	p.argc = eb->ev.argc;
	p.status = eb->ev.hdr.status;
	/* A faulted read is done again where it can be: at a failed exec's
	 * exit, in the old address space; after a successful one, from the
	 * kernel's copies (handle_exec). So is a send the ring had no room
	 * for (counted). */
	if (p.status & (ST_FNAME_UNREADABLE | ST_ARGV_UNREADABLE))
		p.status |= ST_FNAME_REREAD;
	if (send_exec_args(eb, tid))
		p.status |= ST_ARGS_SENT;
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
	__u16 st;

	p = bpf_map_lookup_elem(&pending_execs, &tid);
	if (!p || !p->in_flight) {
		/* A successful exec changed comm: the entry was judged by the
		 * old one, and may well have been filtered out. */
		if ((ret < 0 || !(filter_comm || filter_no_comm)) && traced(tgid))
			count(CNT_MISSED_ENTER);
		return 0;
	}
	p->in_flight = 0;
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
				p->bad_addr = read_argv(eb, (const char *const *)p->argv_ptr);
				p->bad_argv = (eb->ev.hdr.status & ST_ARGV_UNREADABLE) ? p->argv_ptr : 0;
			}
		} else {
			eb->ev.hdr.status = st;
		}
	} else if (!(st & ST_ARGS_SENT)) {
		eb->ev.hdr.status = st | ST_FNAME_UNREADABLE | ST_ARGV_UNREADABLE;
	} else {
		eb->ev.hdr.status = st;
	}
	fill_current(&eb->ev.task);
	eb->ev.exit_ns = bpf_ktime_get_ns();
	eb->ev.ret = (__s32)ret;
	count_status(eb->ev.hdr.status);
	emit(eb, exec_size(eb));
out:
	/* Kept after a failure to remember an argv it could not read. */
	if (ret >= 0 || !p->bad_argv)
		bpf_map_delete_elem(&pending_execs, &tid);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_execve")
int enter_execve(struct syscall_enter_ctx *ctx)
{
	return exec_enter(SYS_EXECVE, AT_FDCWD, (const char *)ctx->args[0],
			  (const char *const *)ctx->args[1], 0);
}

SEC("tracepoint/syscalls/sys_enter_execveat")
int enter_execveat(struct syscall_enter_ctx *ctx)
{
	return exec_enter(SYS_EXECVEAT, (int)ctx->args[0], (const char *)ctx->args[1],
			  (const char *const *)ctx->args[2], (__u32)ctx->args[4]);
}

/* The exits of execve and execveat, attached to both. */
SEC("tracepoint/syscalls/sys_exit_execve")
int exit_exec(struct syscall_exit_ctx *ctx)
{
	return exec_exit(ctx->ret);
}

/* ---- process lifecycle ---- */


enum image_class {
	IMAGE_NATIVE = 0,
	IMAGE_COMPAT = 1, /* i386 on x86-64, arm on arm64 */
	IMAGE_X32 = 2,	  /* x32 on x86-64 */
};

/*
 * Whether the image being started is a 32-bit ELF program. The kernel's
 * syscall tracepoints skip compat syscalls (ARCH_TRACE_IGNORE_COMPAT_SYSCALLS),
 * so none of its opens and execs will be seen: user space says so rather
 * than show it opening nothing. The exit of the execve that started it
 * is skipped too, once the new image has made the thread a compat one:
 * for i386 and arm, not for x32 (whose calls are told apart by their
 * number, and this one was made with a native number). bprm->buf holds the
 * head of the file the kernel ran (for a script, its interpreter's).
 */
static __always_inline enum image_class image_class_of(struct linux_binprm *bprm)
{
	__u8 head[20] = {};

	if (bpf_core_read(head, sizeof(head), &bprm->buf))
		return IMAGE_NATIVE;
	if (head[0] != 0x7f || head[1] != 'E' || head[2] != 'L' || head[3] != 'F' ||
	    head[4] != 1 /* ELFCLASS32 */)
		return IMAGE_NATIVE;
	/* e_machine, little-endian on both architectures that have compat
	 * tasks and BPF: EM_X86_64 is 62. */
	if (head[18] == 62 && head[19] == 0)
		return IMAGE_X32;
	return IMAGE_COMPAT;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	__u32 tree = TRACK_TREE;
	__u32 *kind;
	struct proc_buf *pb;

	/* Threads share their process's entry; only new processes matter. */
	if (BPF_CORE_READ(child, pid) != ctgid || !filter_tracked)
		return 0;
	kind = bpf_map_lookup_elem(&tracked, &ptgid);
	if (!kind || *kind == TRACK_ONLY)
		return 0;
	if (bpf_map_update_elem(&tracked, &ctgid, &tree, BPF_ANY))
		count(CNT_TRACKED_FULL);
	else
		set_tracked_bit(ctgid, true);
	/* Followed whatever its attributes (it may exec into a comm that
	 * passes), reported only if they pass now. */
	if (!current_passes())
		return 0;
	pb = proc_event_for(child, EVENT_FORK);
	if (!pb)
		return 0;
	pb->ev.parent_pid = ptgid;
	pb->ev.parent_start_ns = BPF_CORE_READ(parent, group_leader, start_time);
	emit(pb, sizeof(struct proc_event));
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 tid = BPF_CORE_READ(p, pid);
	__u32 old = old_pid;
	struct exec_pending *pe;
	struct proc_buf *pb;
	struct scratch *s;
	struct file *f;
	__u32 start = 0, plen = 0;
	enum image_class class;
	bool pending;

	if (!followed(tgid))
		return 0;
	/* current is the thread that exec'd, the process's only one now: its
	 * repeats count for the image it replaced, read back at the image
	 * event sent below. */
	end_local();
	/* Its unsent opens, before the image event that ends their image;
	 * then the new image starts with no files. */
	flush_unsent(p, true);
	if (first_opens_unsent) {
		bpf_task_storage_delete(&image_files, bpf_get_current_task_btf());
		bpf_task_storage_delete(&image_files_big, bpf_get_current_task_btf());
	}

	/* An exec in flight passed the filters at its entry: complete it even
	 * if the new comm does not pass them. */
	pe = bpf_map_lookup_elem(&pending_execs, &old);
	if (pe && !pe->in_flight)
		pe = NULL;
	pending = pe != NULL;
	if (pe && (pe->status & (ST_FNAME_REREAD | ST_ARGS_SENT)) != ST_ARGS_SENT &&
	    (s = get_scratch())) {
		/* The entry could not read or send the strings, and the old
		 * address space is gone: the kernel's copies, sent to replace
		 * what the entry sent. */
		struct exec_buf *eb = &s->exec;
		unsigned long as = BPF_CORE_READ(p, mm, arg_start);
		unsigned long ae = BPF_CORE_READ(p, mm, arg_end);
		__u32 len = ae > as ? ae - as : 0, at;
		long n;

		eb->ev.hdr.status = pe->status & ~ST_EXEC_STRINGS;
		n = bpf_probe_read_kernel_str(eb->data, ONCE_PATH_MAX, BPF_CORE_READ(bprm, filename));
		if (n <= 0) {
			eb->ev.hdr.status |= ST_FNAME_UNREADABLE;
			n = 1;
		}
		eb->ev.fname_len = n - 1;
		at = eb->ev.fname_len & (ONCE_PATH_MAX - 1);
		eb->ev.args_len = 0;
		eb->ev.argc = 0;
		/* The new image's argument area holds argv, NUL separated. */
		if (len > ONCE_ARGS_MAX) {
			len = ONCE_ARGS_MAX;
			eb->ev.hdr.status |= ST_ARGV_TRUNCATED;
		}
		barrier_var(len);
		len &= 2 * ONCE_ARGS_MAX - 1;
		if (len && !bpf_probe_read_user(&eb->data[at], len, (void *)as)) {
			eb->ev.args_len = len;
			eb->ev.argc = BPF_CORE_READ(bprm, argc);
		} else {
			eb->ev.hdr.status |= ST_ARGV_UNREADABLE;
		}
		if (send_exec_args(eb, pe->old_tid)) {
			pe->status = eb->ev.hdr.status | ST_ARGS_SENT;
			pe->argc = eb->ev.argc;
		}
	}
	if (pe && old != tid) {
		/* A non-leader thread exec'd: it now has the leader's pid, and
		 * its exit will be seen under that tid. */
		bpf_map_update_elem(&pending_execs, &tid, pe, BPF_ANY);
		bpf_map_delete_elem(&pending_execs, &old);
	}

	class = image_class_of(bprm);
	/* The image event is about the new image: comm is already its own. */
	if (current_passes() && (pb = proc_event_for(p, EVENT_IMAGE))) {
		pb->ev.parent_pid = old;
		if (class != IMAGE_NATIVE) {
			pb->ev.hdr.status |= ST_COMPAT;
			count(CNT_COMPAT_IMAGES);
		}
		f = BPF_CORE_READ(bprm, file);
		s = get_scratch();
		if (f && s) {
			pb->ev.exe_ino = BPF_CORE_READ(f, f_inode, i_ino);
			pb->ev.exe_dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
			pb->ev.hdr.status |= walk_file_path((__u64)f, &start);
			plen = copy_path(pb->data, &s->path, start);
		}
		pb->ev.path_len = plen;
		emit(pb, sizeof(struct proc_event) + (plen & (ONCE_PATH_MAX - 1)));
	}
	/* An i386 or arm image: the exit of the execve that started it is a
	 * compat syscall's by then, which no tracepoint reports. The exec
	 * succeeded: complete it here, after the image it belongs to, as its
	 * exit would have. */
	if (class == IMAGE_COMPAT && pending)
		exec_exit(0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);
	struct proc_buf *pb;

	/* A spawner (TRACK_SPAWNER) is the tracer itself, whose entry goes
	 * with it: nothing to remove for a process that is not followed. */
	if (!followed(tgid))
		return 0;
	/* A thread killed inside an exec never reaches its exit. Done even
	 * when the attribute filters now reject the task: one that passed
	 * them at an entry (its comm changed since) must not leave an entry
	 * for a later thread with its tid to complete. */
	bpf_map_delete_elem(&pending_execs, &tid);
	/* current is the exiting thread. Before the exit event, which has
	 * user space read the image's tallies for the last time. */
	end_local();
	flush_unsent(task, false);
	if (!group_dead)
		return 0;
	if (current_passes()) {
		pb = proc_event_for(task, EVENT_EXIT);
		if (pb) {
			pb->ev.exit_code = BPF_CORE_READ(task, exit_code);
			emit(pb, sizeof(struct proc_event));
		}
	}
	if (filter_tracked) {
		bpf_map_delete_elem(&tracked, &tgid);
		set_tracked_bit(tgid, false);
	}
	return 0;
}
