/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The few kernel types once reads, declared by hand instead of a generated
 * vmlinux.h. Every struct carries preserve_access_index, so clang emits CO-RE
 * relocations and the loader fixes field offsets against the running
 * kernel's BTF: only the names and the field types matter here, not the
 * layout. Keeping this small means `make generate` does not depend on the
 * BTF of the machine that runs it.
 */
#ifndef ONCE_KERNEL_H
#define ONCE_KERNEL_H

typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 pid_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

/* From include/uapi/linux/bpf.h: only what the map definitions use. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_CGROUP_ARRAY = 8,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};
enum {
	BPF_F_NO_PREALLOC = 1,
};
enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};
/* bpf_ringbuf_output flags and bpf_ringbuf_query selectors. */
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};
enum {
	BPF_RB_AVAIL_DATA = 0,
};

/* Common header of every trace event, and the two syscall event layouts
 * (see /sys/kernel/tracing/events/syscalls/sys_enter_openat/format). */
struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
};

struct syscall_enter_ctx {
	struct trace_entry ent;
	long nr; /* int __syscall_nr, padded to 8 */
	unsigned long args[6];
};

struct syscall_exit_ctx {
	struct trace_entry ent;
	long nr;
	long ret;
};

struct qstr {
	union {
		struct {
			u32 hash;
			u32 len;
		};
		u64 hash_len;
	};
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct super_block {
	u32 s_dev; /* dev_t, kernel encoding: major << 20 | minor */
	unsigned long s_magic;
	void *s_fs_info; /* overlayfs: its struct ovl_fs */
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode; /* umode_t: the file type is i_mode & FILE_TYPE_MASK */
	unsigned long i_ino;
	u32 i_generation;
	struct super_block *i_sb;
	void *i_private; /* nsfs: the struct ns_common */
} __attribute__((preserve_access_index));

/* A namespace file's namespace (nsfs), and its kind's name ("net"). */
struct proc_ns_operations {
	const char *name;
} __attribute__((preserve_access_index));

struct ns_common {
	const struct proc_ns_operations *ops;
} __attribute__((preserve_access_index));

/* A dentry's link in the dcache hash: pprev is NULL once it is unhashed
 * (d_unhashed). */
struct hlist_bl_node {
	struct hlist_bl_node *next;
	struct hlist_bl_node **pprev;
} __attribute__((preserve_access_index));

struct dentry;

/* Only d_dname: set on the dentries of internal mounts (pipes, sockets,
 * anon inodes, alloc_file_pseudo's), whose name d_path asks it for. */
struct dentry_operations {
	char *(*d_dname)(struct dentry *, char *, int);
} __attribute__((preserve_access_index));

struct dentry {
	struct hlist_bl_node d_hash;
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
	const struct dentry_operations *d_op;
	struct super_block *d_sb;
} __attribute__((preserve_access_index));

/* overlayfs's inode and the layers' dentries under it (fs/overlayfs/
 * ovl_entry.h, 6.5+: the lower stack hangs off the inode). Absent from a
 * kernel built without overlayfs, or with it as a module not loaded when
 * once started (collector/link.go reads the modules' BTF too): every read
 * of them is guarded by bpf_core_type_exists / bpf_core_field_exists. */
struct ovl_sb {
	u32 pseudo_dev; /* dev_t: the st_dev stat gives this layer's files */
} __attribute__((preserve_access_index));

struct ovl_layer {
	struct ovl_sb *fs;
} __attribute__((preserve_access_index));

/* xino_mode: 0 all layers on one file system, > 0 the inode number's
 * high bits that say the layer, < 0 neither. */
struct ovl_fs {
	struct ovl_sb *fs; /* fs[0]: the upper layer's */
	int xino_mode;
} __attribute__((preserve_access_index));

struct ovl_path {
	const struct ovl_layer *layer;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct ovl_entry {
	unsigned int __numlower;
	struct ovl_path __lowerstack[0];
} __attribute__((preserve_access_index));

struct ovl_inode {
	struct inode vfs_inode;
	struct dentry *__upperdentry;
	struct ovl_entry *oe;
} __attribute__((preserve_access_index));

/* Before 6.5: the lower inode itself. */
struct ovl_inode___old {
	struct inode vfs_inode;
	struct dentry *__upperdentry;
	struct inode *lower;
} __attribute__((preserve_access_index));

/* btrfs's inode and its subvolume (fs/btrfs/btrfs_inode.h, ctree.h):
 * stat's st_dev is the subvolume's anon_dev, not the superblock's s_dev.
 * Absent without btrfs (or its module not loaded when once started):
 * guarded as overlayfs's types are. */
struct btrfs_root {
	u32 anon_dev; /* dev_t */
} __attribute__((preserve_access_index));

struct btrfs_inode {
	struct btrfs_root *root;
	struct inode vfs_inode;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
	struct inode *f_inode;
	unsigned int f_mode; /* fmode_t */
} __attribute__((preserve_access_index));

/* Only to read a pointer-sized word (an fd table slot) with a BTF load. */
struct list_head {
	struct list_head *next;
} __attribute__((preserve_access_index));

/* Only to read 16 bytes as two words (scalars) with BTF loads. */
struct timespec64 {
	__s64 tv_sec;
	long tv_nsec;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct fs_struct {
	struct path root;
	struct path pwd;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long start_stack;
	unsigned long arg_start;
	unsigned long arg_end;
} __attribute__((preserve_access_index));

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
} __attribute__((preserve_access_index));

/* x86-64's saved user registers (bpf_task_pt_regs): only those a stack
 * snapshot keeps. */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

struct signal_struct {
	int nr_threads;
} __attribute__((preserve_access_index));

/* What bpf_get_current_uid_gid and bpf_get_current_cgroup_id read, read
 * with BTF loads instead (see fill_current). */
typedef struct {
	__u32 val;
} kuid_t;

struct cred {
	kuid_t uid;
} __attribute__((preserve_access_index));

struct cgroup;

struct css_set {
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

/* kernel/seccomp.c: mode SECCOMP_MODE_FILTER (2) once a filter is set. */
struct seccomp {
	int mode;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	unsigned int ptrace; /* PT_PTRACED and the options, 0 untraced */
	struct seccomp seccomp;
	pid_t pid;
	pid_t tgid;
	u64 start_time;
	u64 self_exec_id;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct files_struct *files;
	struct fs_struct *fs;
	struct mm_struct *mm;
	struct signal_struct *signal;
	char comm[16];
	int exit_code;
	const struct cred *cred;
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

/* io_uring (the headers in io_uring/): a request, its open's arguments (the kernel's
 * copies, made at prep), and the ring's fixed-file table. Absent from a
 * kernel without io_uring: every read is guarded by bpf_core_type_exists
 * or bpf_core_field_exists. */
struct filename {
	const char *name;
} __attribute__((preserve_access_index));

struct open_how {
	__u64 flags;
	__u64 mode;
	__u64 resolve;
} __attribute__((preserve_access_index));

struct io_open {
	int dfd;
	u32 file_slot; /* sqe->file_index: 0, slot + 1, or IORING_FILE_INDEX_ALLOC */
	struct filename *filename;
	struct open_how how;
} __attribute__((preserve_access_index));

/* IORING_OP_STATX's part of the request (io_uring/statx.c). */
struct io_statx {
	int dfd;
	unsigned int mask;
	unsigned int flags;
	struct filename *filename;
	void *buffer; /* struct statx __user * */
} __attribute__((preserve_access_index));

struct io_cmd_data {
	struct file *file;
} __attribute__((preserve_access_index));

struct io_cqe {
	__s32 res;
} __attribute__((preserve_access_index));

/* 6.13+: the fixed files are resource nodes. */
struct io_rsrc_node {
	unsigned long file_ptr; /* the file, its low bits flags */
} __attribute__((preserve_access_index));

struct io_rsrc_data {
	unsigned int nr;
	struct io_rsrc_node **nodes;
} __attribute__((preserve_access_index));

struct io_file_table {
	struct io_rsrc_data data;
} __attribute__((preserve_access_index));

struct io_ring_ctx {
	struct io_file_table file_table;
} __attribute__((preserve_access_index));

/* Before 6.13: an array of tagged file pointers. */
struct io_fixed_file {
	unsigned long file_ptr;
} __attribute__((preserve_access_index));

struct io_file_table___old {
	struct io_fixed_file *files;
} __attribute__((preserve_access_index));

struct io_ring_ctx___old {
	struct io_file_table___old file_table;
	unsigned int nr_user_files;
} __attribute__((preserve_access_index));

struct io_kiocb {
	struct io_cmd_data cmd; /* the opcode's own part: struct io_open */
	u8 opcode;
	struct io_cqe cqe;
	struct io_ring_ctx *ctx;
} __attribute__((preserve_access_index));

struct linux_binprm {
	char buf[256]; /* BINPRM_BUF_SIZE: the head of the file being run */
	struct file *file;
	const char *filename;
	const char *interp;
	/* "/dev/fd/N" or "/dev/fd/N/NAME", filename too, for an execveat
	 * of an empty or relative name with a dirfd (alloc_bprm); not in
	 * every kernel (bpf_core_field_exists). */
	const char *fdpath;
	int argc;
} __attribute__((preserve_access_index));

/* From include/uapi/linux/bpf.h: a ring buffer record reserved at a
 * size known only at run time (bpf_ringbuf_reserve_dynptr). */
struct bpf_dynptr {
	__u64 __opaque[2];
} __attribute__((aligned(8)));

/* bpf_get_stack's flag: the user stack, not the kernel's. */
enum {
	BPF_F_USER_STACK = 1 << 8,
};

/* cgroup_mkdir's cgroup: its id (the kernfs node's, what
 * bpf_get_current_cgroup_id returns) and its hierarchy (0: cgroup v2). */
struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup_root {
	int hierarchy_id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
	struct cgroup_root *root;
} __attribute__((preserve_access_index));

#endif /* ONCE_KERNEL_H */
