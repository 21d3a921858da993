/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The knobs the loader sets, and the maps with the structs they hold: the
 * state the jobs in the other headers share. (The tables of
 * image_files.bpf.h are that header's own.)
 */
#ifndef ONCE_MAPS_BPF_H
#define ONCE_MAPS_BPF_H

#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include "once.h"

/* Values of the kernel's uapi, whose headers are not included. */
#define AT_FDCWD -100
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define O_PATH 010000000
#define __O_TMPFILE 020000000

/* Set by the loader before the programs are loaded. Being read-only data,
 * the verifier knows their values and removes the checks they turn off. */
const volatile __u32 filter_tracked = 0; /* 1: only processes in `tracked` */
const volatile __u32 self_tgid = 0;	   /* never trace the collector itself */
const volatile __u32 filter_comm = 0;	   /* 1: only comms in comm_include */
const volatile __u32 filter_no_comm = 0; /* 1: never comms in comm_exclude */
const volatile __u32 filter_uid = 0;	   /* 1: only real uids in uid_include */
const volatile __u32 filter_cgroup = 0;  /* 1: only tasks under cgroup_include[0] */
const volatile __u32 filter_cgroup_ids = 0; /* 1: only tasks in (or below) a cgroup of cgroup_ids */
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
/* tracefs's device (kernel encoding; 0: unknown). Its event files share
 * one inode number, which is all a stat buffer says: a lookup of a file
 * on it is sent, never counted, and user space tells the files apart by
 * their names (file_id, for an open, hashes the dentry's path). */
const volatile __u32 tracefs_dev = 0;
/* Bytes of user stack a snapshot keeps, from SP upward (0: no stack
 * snapshots; at most ONCE_STACK_MAX). See stack.bpf.h. */
const volatile __u32 stack_size = 0;
/* Snapshots of first opens kept in the kernel at a time (stack.bpf.h's
 * kept_slots), sent only if the file is opened again; 0: none kept. */
const volatile __u32 kept_nslots = 0;
/* 1 (with kept_nslots): a first open whose snapshot is kept goes unsent
 * too, counted as first_opens_unsent's are; its call is kept beside the
 * snapshot and sent with it after a repeat (XST_FIRST_CALL). */
const volatile __u32 first_calls_kept = 0;
/* Calls of first opens kept (first_calls_kept): stack.bpf.h's kept_calls. */
const volatile __u32 kept_ncalls = 0;
/* 1: the kernel has bpf_rdonly_cast (6.2+), so kernel structs reached
 * from a plain address are read with BTF loads instead of helper calls. */
const volatile __u32 btf_casts = 0;

/* Whether each image keeps a table of the files it opened
 * (image_files.bpf.h): where its first opens go unsent, or their
 * snapshots are kept. Every open the image makes is entered in it, an
 * io_uring one too: else a later open of the file would pass for the
 * first, and not be sent. */
static __always_inline bool image_table_on(void)
{
	return first_opens_unsent || kept_nslots;
}
const volatile long nr_execveat = 0; /* execveat's syscall number (enter_exec) */

/* Rings the CPUs write to (0 or 1: `events` alone). With more, CPU c writes
 * rings[c % nrings] (cpu_ring in emit.bpf.h): a ring's producers share its
 * spinlock, whose cost grows with how many CPUs contend for it. */
const volatile __u32 nrings = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
	__type(value, struct event_header);
} events SEC(".maps");

/* The inner maps' shape: the loader makes each ring its own size. */
struct ring_shape {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

/* rings[0] is `events`; the loader fills every slot before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct ring_shape);
} rings SEC(".maps");

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
 * (the verifier inlines the lookup), where a hash lookup was slow on a
 * child's first exec (the element cold on the CPU that forked it), and
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

/* The cgroup v2 ids selected by --container, --pod, --namespace: user
 * space puts in those it found (CGROUP_SELECTED); the kernel puts in every
 * cgroup made since (CGROUP_PENDING), which passes until user space has
 * named its container and kept it or taken it out. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
} cgroup_ids SEC(".maps");

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

/* A thread's recent kinds (file, call and flags) whose repeats it counts:
 * opens and lookups share them, and a loop of a few opens and a few stats
 * (a config reread, a cache check) is common. A power of two. */
#define RECENT_OPENS 8
/* The failures a process sent last whose basenames are kept beside its
 * probe generation (image_files.bpf.h's struct probe_gen). A power of
 * two. */
#define PROBE_FAILS 8
/* Of the opens tallied for a key, the first and every TALLY_TIME_EVERY-th
 * are timed: a clock read is a large part of what a tallied open costs.
 * User space scales the timed sum up to all. */
#define TALLY_TIME_EVERY 8 /* a power of two */

struct local_tally {
	struct open_key key;
	__u64 ns;	/* of the timed ones */
	__u32 opens;
	__u32 timed;
	__u8 on;	/* key is a kind past its sent opens */
};

/* Where a thread's stack is, as far as a snapshot reads it: [lo, hi). */
struct stack_span {
	__u64 lo;
	__u64 hi;
};

/*
 * Set by user space once every program is attached. A call begun before
 * its entry program was attached exits with no entry recorded: that is
 * outside the trace, not a loss. A thread seen entering a call after
 * this was set has had every entry since recorded, so an exit without
 * one is a loss (CNT_MISSED_ENTER).
 */
__u32 attach_done = 0;
/* When attach_done was set (CLOCK_MONOTONIC, bpf_ktime_get_ns's clock):
 * every call of a thread started after it is in the trace. */
__u64 attach_ns = 0;

/* Names longer than this are sent at every failure: a repeat is told by
 * its whole name, compared word by word. */
#define MISS_NAME_MAX 256

/*
 * The thread's last failed open sent, or its last failed lookup sent (a
 * thread has a run of each: pending_open.miss and lmiss), and its
 * repeats since: the same
 * call with the same flags, dirfd and name (all its bytes), looked up
 * from the same directory (the cwd's, the dirfd's or, for an absolute
 * name, the root's: dentry and mount), failing with the same errno. Past
 * the first open_send_max repeats sent, the rest are counted here and
 * reported with the thread's next event (open_event.miss_repeats) or an
 * EVENT_UNSENT: a retry loop costs a compare, not an event.
 */
struct miss_run {
	__u64 fname; /* the name's user address: an entry with it is predicted */
	__u64 flags;
	__u64 dentry;
	__u64 mnt;
	__u64 ns;    /* the timed repeats' latency, not reported yet */
	__u64 base;  /* base_hash of the name */
	__s32 dirfd;
	__s32 ret;
	__u32 len;   /* bpf_probe_read_user_str's result: with the NUL */
	__u32 sent;  /* repeats sent */
	__u32 count; /* repeats counted, not reported yet */
	__u32 timed;
	__u32 seen;  /* repeats counted in all: which to time */
	__u8 sys;
	__u8 on;
	__u8 pad[2];
	__u64 name[MISS_NAME_MAX / 8];
};

#define REPEAT_NAME_WORDS 8 /* a name of up to 63 bytes */
#define REPEAT_COMPS 16	    /* path components */
#define REPEAT_COMP_WORDS 4 /* a component of up to 32 bytes */

/* One path component as the walk found it: its dcache hash and length
 * (qstr.hash_len) and its bytes, zero past len. */
struct repeat_comp {
	__u64 hash_len;
	__u64 w[REPEAT_COMP_WORDS];
};

/*
 * The thread's last open sent in full, for the EVENT_OPEN_REPEAT of the
 * next one if it names the same bytes and walks to the same path (see
 * repeat_walk): the name, and the components of the path, leaf first.
 */
/* What an EVENT_OPEN_REPEAT takes from the open it repeats besides its
 * strings: compared word by word (repeat_same_fields). */
struct repeat_fields {
	struct task_info task;
	__u64 flags;
	__u64 mode;
	__u64 resolve;
	__u64 ino;
	__u32 dev;
	__u32 gen;
	__u32 ftype;
	__u32 pad;
};

struct open_repeat {
	__u64 ns; /* its exit_ns; 0: none to repeat */
	struct repeat_fields fields;
	__u64 name[REPEAT_NAME_WORDS];
	struct repeat_comp comp[REPEAT_COMPS];
	__u32 ncomp;
	__u32 tid;
	__u32 cpu;
	__u8 walk_ok; /* the last repeat_walk recorded the whole path */
	__u8 name_len;
	__u8 misses; /* opens in a row that repeated nothing (see repeat_try) */
	__u8 skip;
};

/* The comm filter's verdict for the thread's comm lo, hi and its group
 * leader's llo, lhi (see current_passes_slot). */
struct comm_verdict {
	__u64 lo;
	__u64 hi;
	__u64 llo;
	__u64 lhi;
	__u8 known;
	__u8 pass;
};

/* Why an entry was predicted a counted repeat. Only a wrong prediction
 * from the local arguments disarms them: a failed lookup predicted by
 * the thread's lookup miss run says nothing of the hit they hold (a
 * loop that stats a file and a missing name in turn). */
enum predicted_by {
	PREDICTED_NOT = 0,
	PREDICTED_LOCAL = 1, /* the arguments of the last repeat counted in local[] */
	PREDICTED_MISS = 2,  /* those of the thread's lookup miss run (lmiss), past the repeats sent */
};

struct pending_open {
	__u64 enter_ns;
	/* The exit's clock read, before its stack snapshot (or tallied()'s,
	 * before the insert of a new key): held here, not on the exit
	 * program's stack, which is at the verifier's bound. */
	__u64 exit_ns;
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
	/* The image's probe_gen when each recent kind's name was last
	 * looked at (its open or lookup went the whole way). */
	__u64 recent_gen[RECENT_OPENS];
	/* The hash of each recent kind's basename (base_hash) as last
	 * named, read when needed (0: not yet): while one of the thread's
	 * miss runs is of that basename, a repeat could end its search. */
	__u64 recent_base[RECENT_OPENS];
	/* The stems of the failures a repeat is checked against
	 * (fails_spare), copied from their words: here, not on the stack,
	 * which the open exit's chain of calls fills. */
	__u64 fail_stem[PROBE_FAILS];
	__u32 recent_next;
	/* The entry was predicted a counted repeat, and by what: an enum
	 * predicted_by (see open_enter and lookup_enter). */
	__u8 predicted;
	/* Entries predicted by each, counted to time one in TALLY_TIME_EVERY
	 * of them: apart, so that in a loop of a hit and a miss in turn
	 * both get their samples, not only the one on the counter's beat. */
	__u8 local_skip;
	__u8 miss_skip;
	/* recent_index's answer, read back through memory (see there). */
	__u8 recent_hit;
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
	/* The thread entered a call after attach_done was set. */
	__u8 entered;
	__u8 local_any; /* some local[] is on */
	/* Opens of the current image counted, not sent (first_opens_unsent),
	 * since the thread's last event that reported them. */
	__u32 unsent;
	/* Successful lookups of the current image counted, not sent: the
	 * same, for stat and access. */
	__u32 lookups_unsent;
	/* With stacks: the thread's stack at its last snapshot. */
	struct stack_span stack;
	/* The thread's runs of misses: of its last failed open sent, and of
	 * its last failed lookup sent. Two, not one: a poll loop that stats
	 * one missing name and opens another (or opens a file that is not
	 * there yet and stats its directory) alternates the two, which one
	 * run would see as a new failure every time, all sent. */
	struct miss_run miss;
	struct miss_run lmiss;
	struct comm_verdict comm;
	struct open_repeat rep;
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
 * allocating and copying their 12 KiB bound, was most of what once run
 * added to a PATH search, and task storage is dear to create, once per
 * process (bench/results has the figures).
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
	__u8 stack_sent; /* the entry's EVENT_EXEC_ARGS carried a stack snapshot */
	/* handle_prepare_exec read and sent the strings as the caller
	 * passed them: handle_exec leaves them be. */
	__u8 strings_final;
	/* Entered by a task whose comm the filter refused: the exec is
	 * followed only if the comm it gives passes (handle_exec decides),
	 * its strings then the kernel's copies. */
	__u8 by_new_comm;
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
 * argv at data[fname_len], path at data[fname_len + args_len]. The slack
 * past the last use is for the verifier, which bounds an argument's
 * offset and its size apart. */
struct exec_buf {
	struct exec_event ev;
	__u8 data[2 * ONCE_PATH_MAX + 2 * ONCE_ARGS_MAX];
};

struct proc_buf {
	struct proc_event ev;
	__u8 data[2 * ONCE_PATH_MAX];
};

struct uring_submit_buf {
	struct uring_submit_event ev;
	__u8 data[ONCE_PATH_MAX];
};

struct uring_complete_buf {
	struct uring_complete_event ev;
	__u8 data[ONCE_PATH_MAX];
};

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
	/* The walk's first dentry is a root of its own that is not its
	 * mount's (d_alloc_pseudo's: pipes, sockets, memfd). */
	bool pseudo;
	/* Walk up to the file system's root, crossing no mount: the
	 * file's name within its file system (see file_path_gen). */
	bool in_sb;
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
		struct uring_submit_buf usubmit;
		struct uring_complete_buf ucomplete;
	};
	struct path_scratch path;
	/* The path walk's state (build_path, file_path_gen), for walk_one. */
	struct walk_ctx walk;
	/* An EVENT_OPEN_REPEAT of the open in open.ev: beside it, not on
	 * the stack, which the deepest chain of calls at an open's exit
	 * fills (see send_open_repeatable). */
	struct open_repeat_event repeat;
	/* The open being sent: its name (user address) and file (kernel
	 * address, 0 for a failure); see send_open. */
	__u64 open_fname;
	__u64 open_file;
	/* bpf_probe_read_user_str's result for open_fname, read into
	 * open.data already (ends_probe); 0: not read. */
	__s64 fname_read;
	/* The hash of the sent name's basename (base_hash's), made by
	 * probe_add for miss_remember; 0: not made. */
	__u64 base_hash;
	/* The dentry pseudo_name names: a plain address for the global
	 * function, read back from here. */
	__u64 pseudo_dentry;
	/* An open file's dentry and mount, for build_file_path to pass to
	 * build_path as plain numbers. */
	__u64 file_dentry;
	__u64 file_mnt;
	/* The seq of the snapshot stack_keep kept at this open's exit (0:
	 * none), for keep_first_call. */
	__u64 kept_seq;
	/* A failed open's miss_again answer, from before its send to after:
	 * in the scratch, not on the open exit's stack, which is at the
	 * verifier's bound. */
	__u32 open_again;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

static __always_inline struct scratch *get_scratch(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch_map, &zero);
}

#endif /* ONCE_MAPS_BPF_H */
