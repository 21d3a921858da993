/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A file's identity and its absolute path, walked in the kernel across
 * mounts; names read from user memory.
 */
#ifndef ONCE_PATH_BPF_H
#define ONCE_PATH_BPF_H

#include "kernel.h"
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "task.bpf.h"

#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#define PIPEFS_MAGIC 0x50495045
#define SOCKFS_MAGIC 0x534F434B
#define ANON_INODE_FS_MAGIC 0x09041934
#define NSFS_MAGIC 0x6e736673
#define PID_FS_MAGIC 0x50494446
#define TRACEFS_MAGIC 0x74726163
#define BTRFS_SUPER_MAGIC 0x9123683E


/* An open the open programs record: open, openat, openat2, creat. */
static __always_inline bool is_open_call(__u8 sys)
{
	return sys >= SYS_OPEN && sys <= SYS_CREAT;
}

/* A lookup (stat, access): a name looked up, not opened. */
static __always_inline bool is_lookup(__u8 sys)
{
	return sys >= SYS_NEWFSTATAT && sys <= SYS_FACCESSAT2;
}

/* A directory made: a name, no file opened. */
static __always_inline bool is_made(__u8 sys)
{
	return sys == SYS_MKDIR || sys == SYS_MKDIRAT;
}

/* A call that names a path without opening it: its event carries the
 * directory a relative name was tried in, not the file's path. */
static __always_inline bool names_only(__u8 sys)
{
	return is_lookup(sys) || is_made(sys);
}

/*
 * A device, FIFO or socket: a file opened for what stands behind it, not
 * for its contents, whose repeated opens are no duplicate (a shell's
 * every redirection to /dev/null). Kept apart like O_PATH opens.
 */
static __always_inline bool file_apart(__u16 ftype)
{
	return ftype == FILE_CHR || ftype == FILE_BLK || ftype == FILE_FIFO || ftype == FILE_SOCK;
}

/*
 * The generation of the inode an overlayfs inode stands for (the caller
 * checked it is one). overlayfs leaves its own inodes' i_generation 0,
 * and its i_ino is a layer's inode number: that of the
 * lower inode when there is one (a copy-up keeps it), else the upper's.
 * The generation is taken from the same layer, so that it changes where
 * and only where that number can be reused for another file: an
 * upper-only file deleted and another created in its place (the upper
 * filesystem reused the number) is another file; a file copied up is the
 * same one before and after. One level only: a layer that is itself an
 * overlay gives 0. A kernel without overlayfs in its BTF (none, or a
 * module not loaded when once started) loads the program with all of
 * this left out by the verifier.
 * Only overlayfs's inodes come here: plain CO-RE reads, in a global
 * function verified once.
 */
__noinline int ovl_real_gen(__u64 inode)
{
	__u64 oi, oe, d = 0;

	if (!bpf_core_type_exists(struct ovl_inode) ||
	    !bpf_core_field_exists(struct ovl_inode, __upperdentry))
		return 0;
	oi = inode - bpf_core_field_offset(struct ovl_inode, vfs_inode);
	if (bpf_core_field_exists(struct ovl_inode, oe) &&
	    bpf_core_field_exists(struct ovl_entry, __lowerstack)) {
		oe = (__u64)BPF_CORE_READ((struct ovl_inode *)oi, oe);
		if (oe && BPF_CORE_READ((struct ovl_entry *)oe, __numlower) > 0) {
			/* __lowerstack[0].dentry, by offsets: CO-RE takes no
			 * index into a flexible array. */
			oe += bpf_core_field_offset(struct ovl_entry, __lowerstack) +
			      bpf_core_field_offset(struct ovl_path, dentry);
			bpf_probe_read_kernel(&d, sizeof(d), (void *)oe);
		}
	} else if (bpf_core_field_exists(struct ovl_inode___old, lower)) {
		struct inode *lower = BPF_CORE_READ((struct ovl_inode___old *)oi, lower);
		if (lower)
			return BPF_CORE_READ(lower, i_generation);
	}
	if (!d)
		d = (__u64)BPF_CORE_READ((struct ovl_inode *)oi, __upperdentry);
	if (!d)
		return 0;
	return BPF_CORE_READ((struct dentry *)d, d_inode, i_generation);
}

/*
 * The st_dev stat gives an overlayfs file that is not a directory where
 * the overlay's own device and the inode number do not name it: layers on
 * several file systems without xino (xino_mode < 0), or a number too wide
 * for xino's bits. There each layer numbers its files on its own (two
 * lower layers' files can share a number, and on file systems without
 * generations a generation of 0 too), and stat gives each layer's files a
 * device of their own, the layer's pseudo_dev (ovl_map_dev_ino). The
 * layer is the one ovl_real_gen takes the generation from: the lower
 * one when there is one (a copy-up keeps it, as stat's origin does), else
 * the upper (fs[0]). 0 when the overlay's s_dev is right (one file system,
 * xino, a directory, whose number overlayfs makes unique) or unknown.
 */
__noinline int ovl_real_dev(__u64 inode)
{
	__u64 oi, oe, ofs, layer = 0, d = 0, fs = 0;
	int xino;

	if (!bpf_core_type_exists(struct ovl_inode) ||
	    !bpf_core_field_exists(struct ovl_inode, oe) ||
	    !bpf_core_field_exists(struct ovl_entry, __lowerstack) ||
	    !bpf_core_field_exists(struct ovl_path, layer) ||
	    !bpf_core_field_exists(struct ovl_layer, fs) ||
	    !bpf_core_field_exists(struct ovl_fs, xino_mode) ||
	    !bpf_core_field_exists(struct ovl_fs, fs) ||
	    !bpf_core_field_exists(struct ovl_sb, pseudo_dev))
		return 0;
	if ((BPF_CORE_READ((struct inode *)inode, i_mode) & FILE_TYPE_MASK) == FILE_DIR)
		return 0;
	ofs = (__u64)BPF_CORE_READ((struct inode *)inode, i_sb, s_fs_info);
	if (!ofs)
		return 0;
	xino = BPF_CORE_READ((struct ovl_fs *)ofs, xino_mode);
	if (xino == 0)
		return 0;
	oi = inode - bpf_core_field_offset(struct ovl_inode, vfs_inode);
	oe = (__u64)BPF_CORE_READ((struct ovl_inode *)oi, oe);
	if (oe && BPF_CORE_READ((struct ovl_entry *)oe, __numlower) > 0) {
		/* __lowerstack[0], by offsets, as in ovl_real_gen. */
		oe += bpf_core_field_offset(struct ovl_entry, __lowerstack);
		bpf_probe_read_kernel(&layer, sizeof(layer),
				      (void *)(oe + bpf_core_field_offset(struct ovl_path, layer)));
		bpf_probe_read_kernel(&d, sizeof(d),
				      (void *)(oe + bpf_core_field_offset(struct ovl_path, dentry)));
	} else {
		d = (__u64)BPF_CORE_READ((struct ovl_inode *)oi, __upperdentry);
	}
	if (xino > 0) {
		/* xino: mapped into the overlay's numbers, unless the layer's
		 * number needs the bits that would say the layer. */
		__u64 ino;
		if (!d || xino >= 64)
			return 0;
		ino = BPF_CORE_READ((struct dentry *)d, d_inode, i_ino);
		if (!(ino >> (64 - xino)))
			return 0;
	}
	if (layer)
		fs = (__u64)BPF_CORE_READ((struct ovl_layer *)layer, fs);
	else
		fs = (__u64)BPF_CORE_READ((struct ovl_fs *)ofs, fs);
	if (!fs)
		return 0;
	return BPF_CORE_READ((struct ovl_sb *)fs, pseudo_dev);
}

/*
 * The st_dev stat gives a btrfs file: its subvolume's anonymous device
 * (root->anon_dev), not the superblock's s_dev, which every subvolume of
 * the file system shares. Each subvolume numbers its inodes on its own
 * (the first file made in each is 257), and a snapshot has its source's
 * numbers and generations: on s_dev, a file and its copy in a snapshot,
 * or the first files of two subvolumes made in one transaction, were one
 * file. 0 when unknown (no btrfs in the kernel's BTF): s_dev stays.
 */
__noinline int btrfs_subvol_dev(__u64 inode)
{
	__u64 root;

	if (!bpf_core_type_exists(struct btrfs_inode) ||
	    !bpf_core_field_exists(struct btrfs_root, anon_dev))
		return 0;
	root = (__u64)BPF_CORE_READ(
		(struct btrfs_inode *)(inode - bpf_core_field_offset(struct btrfs_inode, vfs_inode)), root);
	if (!root)
		return 0;
	return BPF_CORE_READ((struct btrfs_root *)root, anon_dev);
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


/* One step of the walk in the scratch buffer's walk: prepend one
 * component, or cross one mount; 1 when the walk is done. i counts the
 * steps from 0. */
static __always_inline int walk_component(struct scratch *s, struct walk_ctx *c, __u64 i)
{
	__u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
	__u64 mnt;
	const unsigned char *name;

	mnt = c->vfsmnt - mnt_off;
	if (c->dentry == c->root_dentry && c->vfsmnt == c->root_mnt)
		goto done;
	__u64 parent = dentry_parent(c->dentry);
	if (c->in_sb) {
		if (c->dentry == parent)
			goto done;
		goto name;
	}
	__u64 mnt_root = vfsmount_root(c->vfsmnt);
	if (c->dentry == mnt_root || c->dentry == parent) {
		__u64 up = mount_parent(mnt);
		/* The namespace's root mount, or a dentry of an internal mount
		 * that no root reaches (pipes, memfd): named by pseudo_name. */
		if (c->dentry != mnt_root) {
			c->pseudo = i == 0;
			goto done;
		}
		if (up == mnt)
			goto done;
		c->dentry = mount_mountpoint(mnt);
		c->vfsmnt = up + mnt_off;
		return 0;
	}
name:;
	__u32 len = dentry_name(c->dentry, &name);
	__u32 off = c->off;
	if (len > 255 || len + 1 >= off) {
		c->status |= ST_PATH_TRUNCATED;
		goto done;
	}
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

/* Steps walk_one takes per call: a call and a return per step were a
 * good part of a short walk's cost. Each more step per call is one more
 * copy of walk_component for the verifier in every program that walks
 * (at 4, a fifth more of start-up's program loading). */
#define WALK_BATCH 2

/* WALK_BATCH steps of the walk (walk_component), from step i *
 * WALK_BATCH; 1 when the walk is done. A global function, called by
 * walk_step: the verifier checks it once, for any walk, where a bpf_loop
 * callback's body is checked again for each state an iteration leaves
 * until they converge (the offset, status and flags differ at each
 * depth). */
__noinline int walk_one(__u64 i)
{
	struct scratch *s = get_scratch();

	if (!s)
		return 1;
#pragma clang loop unroll(full)
	for (int j = 0; j < WALK_BATCH; j++)
		if (walk_component(s, &s->walk, i * WALK_BATCH + j))
			return 1;
	return 0;
}

static long walk_step(__u64 i, void *unused)
{
	/* The verifier takes a callback's result to be 0 or 1 only as
	 * written here: a global function's is any int. */
	return walk_one(i) ? 1 : 0;
}

/* Prepend the n bytes of the literal lit at off (n a constant). */
static __always_inline __u32 prepend_lit(struct scratch *s, __u32 off, const char *lit, int n)
{
#pragma clang loop unroll(full)
	for (int k = n - 1; k >= 0; k--) {
		off--;
		s->path.buf[off & (ONCE_PATH_MAX - 1)] = lit[k];
	}
	return off;
}

#define PREPEND_LIT(s, off, lit) prepend_lit(s, off, lit, sizeof(lit) - 1)

/* The longest name pseudo_name writes, its NUL included: a dentry's name
 * (NAME_MAX) with what the kernel puts around it. */
#define PSEUDO_NAME_MAX 512

/* bpf_snprintf(buf, PSEUDO_NAME_MAX, fmt, args...) into the front of the
 * path buffer; fmt a literal (the verifier reads it from .rodata). */
#define PSEUDO_FORMAT(s, fmt, args...)                                                         \
	({                                                                                      \
		static const char ___fmt[] = fmt;                                               \
		unsigned long long ___param[___bpf_narg(args)];                                 \
		_Pragma("GCC diagnostic push")                                                  \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")                          \
		___bpf_fill(___param, args);                                                    \
		_Pragma("GCC diagnostic pop")                                                   \
		bpf_snprintf((char *)(s)->path.buf, PSEUDO_NAME_MAX, ___fmt, ___param, sizeof(___param)); \
	})

/*
 * The name d_path gives a file on an internal mount, whose dentry asks its
 * d_dname for it: the pipe's "pipe:[INO]" (pipefs_dname), the socket's
 * "socket:[INO]", the anon inode's "anon_inode:NAME" ("anon_inode:[eventfd]"),
 * a namespace's "net:[INO]" (nsfs), a pidfd's "anon_inode:[pidfd]" (pidfs),
 * and alloc_file_pseudo's (simple_dname: a memfd, a shm segment)
 * "/NAME (deleted)". Written ending at ONCE_PATH_MAX (in place of anything
 * written before: d_path returns d_dname's alone); returns where it starts,
 * or ONCE_PATH_MAX for a dentry with no d_dname (a disconnected one).
 *
 * Formatted by bpf_snprintf at the front of the path buffer, then moved to
 * its end: the walk before this wrote a short path (an internal mount's
 * root and one name) at the end only. One helper call per kind keeps the
 * verifier from following every digit count and name length, which,
 * prepended byte by byte, made this function a fifth of what the
 * verifier walks in each of the six programs that build paths.
 */
__noinline int pseudo_name(__u64 d)
{
	struct scratch *s = get_scratch();
	__u64 op, ino, name;
	long n;

	if (!s)
		return ONCE_PATH_MAX;
	op = (__u64)BPF_CORE_READ((struct dentry *)d, d_op);
	if (!op || !BPF_CORE_READ((struct dentry_operations *)op, d_dname))
		return ONCE_PATH_MAX;
	unsigned long magic = BPF_CORE_READ((struct dentry *)d, d_sb, s_magic);
	ino = BPF_CORE_READ((struct dentry *)d, d_inode, i_ino);
	name = (__u64)BPF_CORE_READ((struct dentry *)d, d_name.name);
	if (magic == PIPEFS_MAGIC) {
		n = PSEUDO_FORMAT(s, "pipe:[%lu]", ino);
	} else if (magic == SOCKFS_MAGIC) {
		n = PSEUDO_FORMAT(s, "socket:[%lu]", ino);
	} else if (magic == NSFS_MAGIC) {
		/* ns_dname: "net:[INO]". */
		struct ns_common *ns = BPF_CORE_READ((struct dentry *)d, d_inode, i_private);
		n = PSEUDO_FORMAT(s, "%s:[%lu]", BPF_CORE_READ(ns, ops, name), ino);
	} else if (magic == PID_FS_MAGIC) {
		static const char pidfd[] = "anon_inode:[pidfd]";
		n = bpf_snprintf((char *)s->path.buf, PSEUDO_NAME_MAX, pidfd, NULL, 0);
	} else if (magic == ANON_INODE_FS_MAGIC) {
		n = PSEUDO_FORMAT(s, "anon_inode:%s", name);
	} else {
		n = PSEUDO_FORMAT(s, "/%s (deleted)", name);
	}
	/* n counts the NUL; a name cut at PSEUDO_NAME_MAX still ends in one. */
	if (n <= 1)
		return ONCE_PATH_MAX;
	if (n > PSEUDO_NAME_MAX)
		n = PSEUDO_NAME_MAX;
	n--;
	/* Moved in two copies of at most 255 bytes, each bounded where the
	 * verifier can see it fits the buffer's 256 bytes past
	 * ONCE_PATH_MAX: the last bytes, then the first. */
	__u32 tail = n > 255 ? 255 : n;
	__u32 head = n - tail;
	barrier_var(tail);
	barrier_var(head);
	tail &= 0xff;
	head &= 0xff;
	bpf_probe_read_kernel(&s->path.buf[ONCE_PATH_MAX - tail], tail, &s->path.buf[head]);
	if (head)
		bpf_probe_read_kernel(&s->path.buf[(ONCE_PATH_MAX - tail - head) & (ONCE_PATH_MAX - 1)], head, s->path.buf);
	return ONCE_PATH_MAX - tail - head;
}

/* d_unlinked: the dentry was unhashed (its file deleted while open) and
 * is not a root of its own. */
static __always_inline bool dentry_unlinked(__u64 d)
{
	if (btf_casts) {
		struct dentry *bd = btf_cast(d, struct dentry);
		return !bd->d_hash.pprev && (__u64)bd->d_parent != d;
	}
	return !BPF_CORE_READ((struct dentry *)d, d_hash.pprev) &&
	       (__u64)BPF_CORE_READ((struct dentry *)d, d_parent) != d;
}

/*
 * Write the absolute path of (dentry, vfsmnt) into the scratch path buffer,
 * ending at ONCE_PATH_MAX, crossing mount points, stopping at the current
 * task's root (so a chrooted process sees its own paths). As d_path: a
 * file deleted while open ends in " (deleted)", and one on an internal
 * mount gets the kernel's name for it (pseudo_name, ST_PATH_INTERNAL). Returns where
 * the path begins << 16 | its status bits. No helper does this from a
 * tracepoint (bpf_d_path is for LSM and fentry); bpf_loop keeps the
 * verifier from walking every depth. A global function: the walk is
 * verified once per program, not once per caller and path to it.
 */
__noinline int build_path(__u64 dentry, __u64 vfsmnt)
{
	struct scratch *s = get_scratch();
	struct fs_struct *fs = current_task()->fs;
	struct walk_ctx *c;

	if (!s)
		return (ONCE_PATH_MAX - 1) << 16 | ST_PATH_UNRESOLVED;
	c = &s->walk;
	*c = (struct walk_ctx){
		.dentry = dentry,
		.vfsmnt = vfsmnt,
		.root_dentry = (__u64)fs->root.dentry,
		.root_mnt = (__u64)fs->root.mnt,
		.off = ONCE_PATH_MAX,
	};
	/* A file deleted while open is named as d_path names it. */
	if (dentry_unlinked(dentry))
		c->off = PREPEND_LIT(s, c->off, " (deleted)");
	bpf_loop(ONCE_MAX_DEPTH / WALK_BATCH, walk_step, NULL, 0);
	__u32 off = c->off;
	__u16 status = c->status;
	if (!c->done)
		status |= ST_PATH_TRUNCATED;
	if (c->pseudo) {
		s->pseudo_dentry = c->dentry;
		__u32 poff = pseudo_name(*(volatile __u64 *)&s->pseudo_dentry);
		if (poff < ONCE_PATH_MAX) {
			off = poff;
			status |= ST_PATH_INTERNAL;
		}
	}
	if (off >= ONCE_PATH_MAX) {
		off = ONCE_PATH_MAX - 1;
		s->path.buf[ONCE_PATH_MAX - 1] = '/';
	}
	return off << 16 | status;
}

/* build_path of an open file. It calls build_path rather than walking
 * itself, so that a program that builds both kinds of path has the walk
 * verified once (a bpf_loop callback is verified at each call site). With
 * btf_casts the dentry and mount are two loads, not two helper calls, and
 * go to build_path through the scratch buffer: what a global function is
 * passed must be a plain number, and a load through a cast is a pointer to
 * the verifier. */
__noinline int build_file_path(__u64 file)
{
	if (btf_casts) {
		struct scratch *s = get_scratch();
		struct file *bf = btf_cast(file, struct file);

		if (!s)
			return (ONCE_PATH_MAX - 1) << 16 | ST_PATH_UNRESOLVED;
		s->file_dentry = (__u64)bf->f_path.dentry;
		s->file_mnt = (__u64)bf->f_path.mnt;
		return build_path(*(volatile __u64 *)&s->file_dentry, *(volatile __u64 *)&s->file_mnt);
	}
	return build_path((__u64)BPF_CORE_READ((struct file *)file, f_path.dentry),
			  (__u64)BPF_CORE_READ((struct file *)file, f_path.mnt));
}

struct hash_ctx {
	__u32 at;
	__u32 h;
};

/* One byte of file_path_gen's hash (FNV-1a). */
static long hash_step(__u64 i, struct hash_ctx *c)
{
	struct scratch *s = get_scratch();

	if (!s)
		return 1;
	c->h = (c->h ^ s->path.buf[(c->at + i) & (ONCE_PATH_MAX - 1)]) * 16777619;
	return 0;
}

/*
 * The generation of a file on tracefs (see file_id): a 32-bit hash of its
 * path from its file system's root, crossing no mount, so that any mount
 * of tracefs gives it the one identity. Two files that share a number
 * differ in it but for a chance of 2^-32. Built in the scratch path
 * buffer, which the caller walks again for the path it sends. Rare: a
 * global function, verified once.
 */
__noinline int file_path_gen(__u64 dentry)
{
	struct scratch *s = get_scratch();
	struct hash_ctx h = { .h = 2166136261 };

	if (!dentry || !s)
		return 0;
	s->walk = (struct walk_ctx){ .dentry = dentry, .off = ONCE_PATH_MAX, .in_sb = true };
	bpf_loop(ONCE_MAX_DEPTH / WALK_BATCH, walk_step, NULL, 0);
	__u32 off = s->walk.off;
	h.at = off;
	if (off < ONCE_PATH_MAX)
		bpf_loop(ONCE_PATH_MAX - off, hash_step, &h, 0);
	return h.h;
}

/* f's f_mode: a load with BTF casts, where the helper call is on every
 * open sent. */
static __always_inline __u32 file_mode(struct file *f)
{
	if (btf_casts)
		return btf_cast((__u64)f, struct file)->f_mode;
	return BPF_CORE_READ(f, f_mode);
}

/*
 * The file's identity: its device, inode number and the inode's
 * generation; true when the generation is a hash of the file's name (see
 * below). The hot path of a tallied open reads nothing else.
 *
 * An inode number alone names a file only while it lives: ext4 and xfs
 * give a freed number to the next file made (git's lock files, renamed
 * over the file they replace, then the next one made, get the number the
 * replaced file had). The generation tells those apart: ext4, xfs and
 * tmpfs draw it at random for every inode they make (get_random_u32), so
 * two files that share a number differ in it but for a chance of 2^-32.
 * (A file written by a tool that builds a filesystem image offline, as
 * mke2fs -d does, may have 0; a number reused later is then reused by a
 * file the kernel made, with a random one.)
 * btrfs gives the id of the transaction that made the inode, and hands out
 * a subvolume's numbers in increasing order (a number freed at the top is
 * given again only after a remount, in a later transaction): exact. A
 * filesystem without generations (proc, sysfs, pipes, sockets) leaves 0:
 * there (dev, ino) is all there is, and what it was before. overlayfs:
 * see ovl_real_gen.
 *
 * tracefs gives every file of its events/ tree (eventfs) one inode number,
 * and makes their inodes anew as their dentries come and go: neither the
 * number nor the inode object tells two events' id files apart, or one
 * file from itself later. Their names do, and nothing else changes them:
 * on tracefs the generation is a hash of the file's path within the file
 * system (file_path_gen), the same through any mount of it. procfs (its
 * numbers come from get_next_ino or the proc entry, the same only for the
 * same entry: every task's /proc/PID/task/TID/net/arp is its netns's one file),
 * sysfs and cgroupfs (kernfs node ids), debugfs (get_next_ino, its inodes
 * live as long as their files) give files numbers of their own; FUSE
 * gives what the server says (libfuse's own numbering without use_ino
 * is unique), taken as it is, as stat's users take it.
 */
static __always_inline bool file_id(struct file *f, __u64 *ino, __u32 *dev, __u32 *gen, __u16 *ftype)
{
	unsigned long magic = 0;

	/* Only an inode without a generation of its own, or on a device no
	 * disk stands behind (major 0: btrfs gives its superblock one), is
	 * asked which file system it is on: on most files that costs
	 * nothing. */
	if (btf_casts) {
		struct inode *in = btf_cast(f, struct file)->f_inode;
		struct super_block *sb = in->i_sb;
		*ino = in->i_ino;
		*dev = sb->s_dev;
		*gen = in->i_generation;
		*ftype = in->i_mode & FILE_TYPE_MASK;
		if (!*gen || !(*dev >> 20))
			magic = sb->s_magic;
	} else {
		struct inode *in = BPF_CORE_READ(f, f_inode);
		struct super_block *sb = BPF_CORE_READ(in, i_sb);
		*ino = BPF_CORE_READ(in, i_ino);
		*dev = BPF_CORE_READ(sb, s_dev);
		*gen = BPF_CORE_READ(in, i_generation);
		*ftype = BPF_CORE_READ(in, i_mode) & FILE_TYPE_MASK;
		if (!*gen || !(*dev >> 20))
			magic = BPF_CORE_READ(sb, s_magic);
	}
	/* The inode or dentry again as a plain address: a BTF pointer can't
	 * be a global function's argument. The device as stat gives it,
	 * where that is not the superblock's (btrfs, some overlays). */
	if (magic == BTRFS_SUPER_MAGIC && bpf_core_type_exists(struct btrfs_inode)) {
		__u32 sd = btrfs_subvol_dev((__u64)BPF_CORE_READ(f, f_inode));
		if (sd)
			*dev = sd;
	} else if (magic == OVERLAYFS_SUPER_MAGIC && bpf_core_type_exists(struct ovl_inode)) {
		__u64 oin = (__u64)BPF_CORE_READ(f, f_inode);
		__u32 od = ovl_real_dev(oin);
		*gen = ovl_real_gen(oin);
		if (od)
			*dev = od;
	} else if (magic == TRACEFS_MAGIC)
		*gen = file_path_gen((__u64)BPF_CORE_READ(f, f_path.dentry));
	return magic == TRACEFS_MAGIC;
}

#define PROC_SUPER_MAGIC 0x9fa0
#define SYSFS_MAGIC 0x62656572
#define CGROUP_SUPER_MAGIC 0x27e0eb
#define CGROUP2_SUPER_MAGIC 0x63677270
#define DEBUGFS_MAGIC 0x64626720
#define SECURITYFS_MAGIC 0x73636673

/*
 * enum generated_fs of an open file on device dev (kernel encoding): the
 * file system that makes its content at each read, told by its
 * superblock's magic; GEN_FS_NONE for any other. Those are all on
 * devices no disk stands behind (major 0): a file on another is not
 * asked.
 */
static __always_inline __u16 generated_fs(struct file *f, __u32 dev)
{
	unsigned long magic;

	if (dev >> 20)
		return GEN_FS_NONE;
	if (btf_casts)
		magic = btf_cast(f, struct file)->f_inode->i_sb->s_magic;
	else
		magic = BPF_CORE_READ(f, f_inode, i_sb, s_magic);
	switch (magic) {
	case PROC_SUPER_MAGIC:
		return GEN_FS_PROC;
	case SYSFS_MAGIC:
		return GEN_FS_SYSFS;
	case CGROUP_SUPER_MAGIC:
		return GEN_FS_CGROUP;
	case CGROUP2_SUPER_MAGIC:
		return GEN_FS_CGROUP2;
	case DEBUGFS_MAGIC:
		return GEN_FS_DEBUGFS;
	case TRACEFS_MAGIC:
		return GEN_FS_TRACEFS;
	case SECURITYFS_MAGIC:
		return GEN_FS_SECURITYFS;
	}
	return GEN_FS_NONE;
}

/* The number that places a file in an image's table (file_place): its
 * inode number, or for a file named by its path (file_id returned true),
 * whose number its file system gives many files, that and the hash. */
static __always_inline __u64 place_ino(__u64 ino, __u32 gen, bool named)
{
	return named ? ino ^ (__u64)gen << 32 : ino;
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
 * for ONCE_PATH_MAX), or take read, bpf_probe_read_user_str's result when
 * it was read there already (0: not yet). Returns the length without the
 * NUL, or -1 if unreadable; *status gets ST_FNAME_TRUNCATED when the
 * string was longer than the bound.
 */
static __always_inline long read_user_name(__u8 *dst, const char *src, long read, __u16 *status)
{
	long n = read > 0 ? read : bpf_probe_read_user_str(dst, ONCE_PATH_MAX, src);
	char next = 0;

	if (n <= 0)
		return -1;
	if (n >= ONCE_PATH_MAX) {
		/* Exactly full: longer only if the byte after the kept ones
		 * isn't the terminator. */
		bpf_probe_read_user(&next, 1, src + ONCE_PATH_MAX - 1);
		if (next)
			*status |= ST_FNAME_TRUNCATED;
		n = ONCE_PATH_MAX;
	}
	return n - 1;
}

#endif /* ONCE_PATH_BPF_H */
