/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack snapshots (stack_size > 0): what user space needs to unwind the
 * caller's stack of an open or exec, taken in the kernel while the
 * caller's memory is there to read. Registers, a window of the user stack
 * from SP upward, and the kernel's frame-pointer walk; sent behind the
 * event's strings in the same record (struct stack_tail in once.h).
 */
#ifndef ONCE_STACK_BPF_H
#define ONCE_STACK_BPF_H

#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "task.bpf.h"

#define STACK_PAGE 4096
/* The pages a window of ONCE_STACK_MAX bytes from an unaligned SP spans. */
#define STACK_CHUNKS (ONCE_STACK_MAX / STACK_PAGE + 1)

/* A snapshot as it is sent: the tail and the frames back to back (one
 * write), the window apart. 20 KiB: its own per-CPU map, the scratch
 * being near the 32 KiB a per-CPU value may have. */
struct stack_buf {
	struct stack_tail t;
	__u64 fp[ONCE_STACK_FRAMES];
	/* The slack past ONCE_STACK_MAX is for the verifier, which bounds a
	 * chunk's offset and its size apart. */
	__u8 window[ONCE_STACK_MAX + STACK_PAGE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_buf);
} stack_scratch SEC(".maps");

static __always_inline struct stack_buf *get_stack_buf(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&stack_scratch, &zero);
}

/* What stack_capture found, for the send. */
enum {
	STACK_NONE = 0,	  /* no snapshot asked for (stack_size 0) */
	STACK_CAPTURED = 1, /* in the CPU's stack_buf */
	STACK_MISSING = 2,  /* asked for, nothing could be read */
	STACK_KEPT = 3,	    /* in a kept slot: the open goes without it (ST_STACK_KEPT) */
};

/* Bytes kept above the main thread's initial SP (mm->start_stack, where
 * argc is): what lies above is argv, envp and their strings, no frame;
 * _start's CFI ends the unwinding below it. A few words of slack. */
#define STACK_TOP_SLACK 64

struct stack_vma {
	__u64 start;
	__u64 end;
};

static long stack_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct stack_vma *v = data;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	return 0;
}

/*
 * Where the stack SP is on ends, as far as a window needs: the end of its
 * mapping, or just above the initial SP on the main thread's stack. 0 if
 * not known (the mapping lock was taken: bpf_find_vma only tries it).
 *
 * A read that reaches past the mapping costs a page fault the kernel
 * then fixes up, as dear as the rest of the snapshot together; a
 * shallow program's window reaches the top of its stack at every call.
 */
static __always_inline __u64 stack_top(struct task_struct *task, __u64 sp, struct stack_span *seen)
{
	struct stack_vma v = {};
	__u64 initial, top;

	/* The thread's stack of its last snapshot, most often this one. */
	if (seen && seen->lo <= sp && sp < seen->hi)
		return seen->hi;
	if (bpf_find_vma(task, sp, stack_vma_cb, &v, 0) || v.end <= sp || v.start > sp)
		return 0;
	top = v.end;
	initial = BPF_CORE_READ(task, mm, start_stack);
	if (initial > sp && initial + STACK_TOP_SLACK < v.end)
		top = initial + STACK_TOP_SLACK;
	if (seen) {
		seen->lo = v.start;
		seen->hi = top;
	}
	return top;
}

/*
 * Snapshot the current thread's user side into the CPU's stack_buf: its
 * registers as saved at syscall entry (a thread in a syscall has not run
 * user code since, so they are the caller's whether read at the entry or
 * the exit), stack_size bytes of its stack from SP up, and, where user
 * space could not walk them from the window, the frames of bpf_get_stack's
 * user frame-pointer walk.
 *
 * With the stack's top known (stack_top), the window is one read of what
 * lies below it, cut (STK_WINDOW_CUT) if stack_size ends first. Else, or
 * should that read fail (a page not resident), it is read page by page:
 * bpf_probe_read_user fails whole on a range that reaches an unreadable
 * page, so a read up to the end of SP's page comes first, then a page at
 * a time; the first that fails ends the window with what was read
 * (STK_WINDOW_FAULT). A window that got all of stack_size bytes then is
 * cut if the byte past it is readable.
 *
 * The kernel's frame-pointer walk reads the same memory as the window
 * does: it adds frames only past a cut window, and only if BP points into
 * the stack at all (code built without frame pointers uses BP for
 * anything, and a walk from a stray BP faults). Skipped otherwise, for
 * what it costs.
 */
static __always_inline int stack_capture_into(void *ctx, struct stack_buf *b, struct stack_span *seen)
{
	struct task_struct *task;
	struct pt_regs *regs;
	/* 64-bit: a 32-bit difference the verifier sees sign-extended. */
	__u64 want = stack_size, got = 0, top;
	long n;
	__u8 probe;

	if (!stack_size)
		return STACK_NONE;
	if (!b)
		return STACK_MISSING;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	b->t.ip = regs->ip;
	b->t.sp = regs->sp;
	b->t.bp = regs->bp;
	b->t.bx = regs->bx;
	b->t.r12 = regs->r12;
	b->t.r13 = regs->r13;
	b->t.r14 = regs->r14;
	b->t.r15 = regs->r15;
	b->t.flags = 0;
	b->t.nr_fp = 0;
	if (want > ONCE_STACK_MAX)
		want = ONCE_STACK_MAX;
	top = stack_top(task, b->t.sp, seen);
	if (top) {
		__u64 len = top - b->t.sp;

		if (len > want)
			len = want;
		barrier_var(len);
		if (len > ONCE_STACK_MAX)
			len = ONCE_STACK_MAX;
		if (len && !bpf_probe_read_user(b->window, len, (void *)b->t.sp)) {
			got = len;
			if (b->t.sp + got < top)
				b->t.flags |= STK_WINDOW_CUT;
		} else {
			top = 0;
		}
	}
	if (!top) {
		for (int i = 0; i < STACK_CHUNKS; i++) {
			__u64 addr = b->t.sp + got;
			__u64 len = STACK_PAGE - (addr & (STACK_PAGE - 1));

			if (got >= want)
				break;
			if (len > want - got)
				len = want - got;
			/* The bound checked on the register passed. */
			barrier_var(len);
			if (len > STACK_PAGE)
				len = STACK_PAGE;
			if (bpf_probe_read_user(&b->window[got & (ONCE_STACK_MAX - 1)], len,
						(void *)addr)) {
				b->t.flags |= STK_WINDOW_FAULT;
				break;
			}
			got += len;
		}
		if (got >= want && !bpf_probe_read_user(&probe, 1, (void *)(b->t.sp + got)))
			b->t.flags |= STK_WINDOW_CUT;
	}
	b->t.window_len = got;
	if (!got || ((b->t.flags & STK_WINDOW_CUT) && b->t.bp >= b->t.sp &&
		     (!top || b->t.bp < top))) {
		n = bpf_get_stack(ctx, b->fp, sizeof(b->fp), BPF_F_USER_STACK);
		b->t.nr_fp = n > 0 ? n / sizeof(__u64) : 0;
	}
	if (!got && !b->t.nr_fp)
		return STACK_MISSING;
	return STACK_CAPTURED;
}

/* A snapshot into the CPU's stack_buf. seen, when not NULL, is the
 * thread's: where its stack was at its last snapshot. */
static __always_inline int stack_capture(void *ctx, struct stack_span *seen)
{
	return stack_capture_into(ctx, get_stack_buf(), seen);
}

/* How emit_snap sent a record. */
enum {
	SNAP_NOT_SENT = 0,
	SNAP_SENT_BARE = 1,  /* without a snapshot */
	SNAP_SENT_STACK = 2, /* with the snapshot behind it */
};

/*
 * Send the record data (size bytes, its header's status at *status) with
 * the snapshot in b behind it. A record reserved at its run-time size
 * (a dynptr) and written in three parts, so that neither the window nor
 * the strings are copied twice. Not submitted if *seq (when not NULL) is
 * no longer want once written: b was being overwritten meanwhile.
 */
static __always_inline bool emit_with(void *data, __u64 size, __u16 *status, struct stack_buf *b,
				      __u64 *seq, __u64 want)
{
	struct bpf_dynptr dp;
	__u32 head, wlen;
	void *ring = cpu_ring();

	if (!ring)
		return false;
	head = b->t.nr_fp;
	if (head > ONCE_STACK_FRAMES)
		head = ONCE_STACK_FRAMES;
	head = sizeof(struct stack_tail) + head * sizeof(__u64);
	b->t.nr_fp = (head - sizeof(struct stack_tail)) / sizeof(__u64);
	wlen = b->t.window_len;
	if (wlen > ONCE_STACK_MAX)
		wlen = ONCE_STACK_MAX;
	b->t.window_len = wlen;
	*status |= ST_STACK;
	if (!bpf_ringbuf_reserve_dynptr(ring, size + head + wlen, 0, &dp)) {
		bpf_dynptr_write(&dp, 0, data, size, 0);
		bpf_dynptr_write(&dp, size, &b->t, head, 0);
		bpf_dynptr_write(&dp, size + head, b->window, wlen, 0);
		if (!seq || *(volatile __u64 *)seq == want) {
			bpf_ringbuf_submit_dynptr(&dp, wakeup_flags(ring_room(size + head + wlen), 1));
			count(CNT_EVENTS_SENT);
			return true;
		}
	}
	/* A failed reservation must be released all the same. */
	bpf_ringbuf_discard_dynptr(&dp, 0);
	*status &= ~ST_STACK;
	return false;
}

/*
 * Send the size bytes at data, copied from a slot that another CPU may be
 * overwriting: submitted only if *seq is still want once copied. A ring
 * with no room is counted, as by emit; a slot overwritten is not sent.
 */
static __always_inline bool emit_seq(void *data, __u64 size, __u64 *seq, __u64 want)
{
	struct bpf_dynptr dp;
	void *ring = cpu_ring();

	if (!ring)
		return false;
	if (bpf_ringbuf_reserve_dynptr(ring, size, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		count(CNT_RINGBUF_FULL);
		return false;
	}
	bpf_dynptr_write(&dp, 0, data, size, 0);
	if (*(volatile __u64 *)seq != want) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		return false;
	}
	bpf_ringbuf_submit_dynptr(&dp, wakeup_flags(ring_room(size), 1));
	count(CNT_EVENTS_SENT);
	return true;
}

/*
 * Send the record data with the snapshot stack_capture left in the CPU's
 * stack_buf behind it, if stacked is STACK_CAPTURED; should the ring
 * have no room for the whole, without it. The caller counts a record
 * sent bare where a snapshot was wanted (CNT_STACKS_DROPPED).
 */
static __always_inline int emit_snap(void *data, __u64 size, __u16 *status, int stacked)
{
	struct stack_buf *b;

	if (stacked == STACK_CAPTURED && (b = get_stack_buf()) &&
	    emit_with(data, size, status, b, NULL, 0))
		return SNAP_SENT_STACK;
	return emit(data, size) ? SNAP_SENT_BARE : SNAP_NOT_SENT;
}

/*
 * Kept snapshots. Most opens are their image's first of a file and most
 * files are never opened again, yet the first open of one that is is a
 * call site of its duplicate. Its snapshot is taken all the same, into
 * one of kept_slots (a ring of them, the oldest reused first), and sent
 * only when the image opens the file again (EVENT_KEPT_STACK): sending
 * every first open's window to have it then was most of what --stacks
 * cost. A slot's seq is odd while it is written, and names the snapshot
 * in it when even; kept_refs finds an image's file's slot, its seq saying
 * whether the snapshot there is still that one.
 */
/* Bound on a kept call's name (its NUL included): a longer one's open is
 * sent, as without first_calls_kept. */
#define KEPT_NAME_MAX 256

/* A first open's call kept with its snapshot (first_calls_kept): the
 * event as it is sent, the name behind it. */
struct kept_call {
	struct open_event ev;
	__u8 name[KEPT_NAME_MAX];
};

struct kept_slot {
	__u64 seq;
	__u64 ns; /* the open's exit time: which mappings the snapshot is in */
	struct stack_buf b;
};

/*
 * The kept calls, apart from the snapshots and many more of them: a
 * call is a few hundred bytes, a snapshot some 20 KiB, and a call whose
 * snapshot was reused before the repeat came is still the duplicate's
 * first call, listed without a stack. The call of the snapshot of seq s
 * (see kept_slots) is in slot (s / 2 - 1) % kept_ncalls, its own seq s
 * while it holds that call.
 */
struct kept_call_slot {
	__u64 seq;
	struct kept_call call;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct kept_call_slot);
} kept_calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by the loader */
	__type(key, __u32);
	__type(value, struct kept_slot);
} kept_slots SEC(".maps");

/*
 * Which of its files' snapshots an image has kept, where: a table per
 * process, in its group leader's task storage (deleted at exec with the
 * image's files), of sets of KEPT_WAYS references, a file's set chosen by
 * its signature and the oldest reference of the set given to a new file.
 * A file whose reference another file took meanwhile has lost its
 * snapshot and its call: user space counts them. 16 KiB per process that
 * keeps: a reference outlives a few hundred other files' first opens (a
 * direct-mapped table of 256 lost it after 200 in one run of two), the
 * snapshot 128 of them (kept_slots), the call 4,096 (kept_calls).
 */
#define KEPT_REFS 1024
#define KEPT_WAYS 4 /* a set is one cache line */

struct kept_ref {
	__u64 sig; /* file_sig of the file */
	__u64 seq; /* its slot's seq then; 0: sent, or none */
};

struct kept_refs {
	struct kept_ref r[KEPT_REFS];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kept_refs);
} kept_refs SEC(".maps");

/* Snapshots kept so far: the next one's slot and seq. */
__u64 kept_next = 0;

/* At the exec of current: the new image has kept nothing. */
static __always_inline void kept_on_exec(void)
{
	if (kept_nslots)
		bpf_task_storage_delete(&kept_refs, bpf_get_current_task_btf());
}

static __always_inline struct kept_ref *kept_ref_of(__u64 sig, bool create)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct kept_refs *t;

	struct kept_ref *r, *pick = NULL;
	__u32 set = ((sig ^ (sig >> 32)) & (KEPT_REFS / KEPT_WAYS - 1)) * KEPT_WAYS;

	t = bpf_task_storage_get(&kept_refs, leader, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t)
		return NULL;
	for (int w = 0; w < KEPT_WAYS; w++) {
		r = &t->r[(set + w) & (KEPT_REFS - 1)];
		if (r->sig == sig)
			return r;
		/* A free one (seq 0: sent, or never used), else the oldest. */
		if (create && (!pick || r->seq < pick->seq))
			pick = r;
	}
	return pick;
}

/*
 * Keep the current open's snapshot for its image's file, taken at ns (its
 * exit's time, which mappings it is in): STACK_KEPT, or
 * what stack_capture gives when it cannot be kept (the open is then sent
 * with its snapshot, as any other).
 */
static __always_inline int stack_keep(void *ctx, __u64 sig, struct stack_span *seen, __u64 ns)
{
	struct kept_slot *slot;
	struct kept_ref *ref;
	__u64 n;
	__u32 i;

	if (!kept_nslots || !(ref = kept_ref_of(sig, true)))
		return stack_capture(ctx, seen);
	n = __sync_fetch_and_add(&kept_next, 1);
	i = n % kept_nslots;
	slot = bpf_map_lookup_elem(&kept_slots, &i);
	if (!slot)
		return stack_capture(ctx, seen);
	*(volatile __u64 *)&slot->seq = 2 * n + 1;
	barrier();
	if (stack_capture_into(ctx, &slot->b, seen) != STACK_CAPTURED)
		return STACK_MISSING;
	slot->ns = ns;
	barrier();
	*(volatile __u64 *)&slot->seq = 2 * n + 2;
	ref->sig = sig;
	ref->seq = 2 * n + 2;
	if (first_calls_kept) {
		struct scratch *s = get_scratch();

		if (s)
			s->kept_seq = 2 * n + 2;
	}
	count(CNT_STACKS_KEPT);
	return STACK_KEPT;
}

/*
 * Keep the call of the open in the scratch (its event's fixed fields
 * filled, its name at open_fname), a first open whose snapshot stack_keep
 * just kept, beside the snapshot (first_calls_kept): 1 if kept, the open
 * then counted and not sent; 0 if not (the slot taken meanwhile, the name
 * unreadable, empty or too long), the open then sent as it would be
 * without first_calls_kept. A global function, verified once.
 */
__noinline int keep_first_call(void)
{
	struct scratch *s = get_scratch();
	struct kept_call_slot *slot;
	struct open_event *ev;
	__u64 want;
	__u32 i;
	long n;

	if (!s || !kept_ncalls)
		return 0;
	want = s->kept_seq;
	s->kept_seq = 0;
	if (!want)
		return 0;
	i = (want / 2 - 1) % kept_ncalls;
	slot = bpf_map_lookup_elem(&kept_calls, &i);
	if (!slot)
		return 0;
	/* Odd while written, as a snapshot's slot. */
	*(volatile __u64 *)&slot->seq = want - 1;
	barrier();
	/* The name, from the scratch where the probe-end check read it
	 * already (fname_read), else from the caller. */
	n = s->fname_read;
	if (n > 1 && n < KEPT_NAME_MAX)
		bpf_probe_read_kernel(slot->call.name, n & (KEPT_NAME_MAX - 1), s->open.data);
	else if (n <= 0)
		n = bpf_probe_read_user_str(slot->call.name, KEPT_NAME_MAX, (const void *)s->open_fname);
	if (n <= 1 || n >= KEPT_NAME_MAX)
		return 0;
	ev = &slot->call.ev;
	__builtin_memcpy(ev, &s->open.ev, sizeof(*ev));
	fill_current(&ev->task);
	ev->hdr.kind = EVENT_KEPT_STACK;
	ev->xstatus |= XST_FIRST_CALL;
	ev->fname_len = n - 1;
	ev->path_len = 0;
	/* Counts go with the thread's next event sent. */
	ev->unsent = 0;
	ev->lookups_unsent = 0;
	ev->miss_repeats = 0;
	ev->miss_timed = 0;
	ev->miss_ns = 0;
	ev->lookup_miss_repeats = 0;
	ev->lookup_miss_timed = 0;
	ev->lookup_miss_ns = 0;
	barrier();
	if (*(volatile __u64 *)&slot->seq != want - 1)
		return 0; /* another CPU's call took the slot meanwhile */
	*(volatile __u64 *)&slot->seq = want;
	return 1;
}

/*
 * The first open's call, kept with the snapshot of seq want (first_calls_kept),
 * sent after a repeat with the snapshot in slot, if that still holds it,
 * else without: true if sent. A call lost (its slot reused, or no room in
 * the ring) is not: the caller sends the bare event, from which user space
 * counts the call and its stack lost.
 */
static __always_inline bool send_first_call(struct kept_slot *slot, __u64 want)
{
	struct kept_call_slot *c;
	__u32 i = (want / 2 - 1) % kept_ncalls, len;

	c = bpf_map_lookup_elem(&kept_calls, &i);
	if (!c || c->seq != want)
		return false;
	len = c->call.ev.fname_len & (KEPT_NAME_MAX - 1);
	if (slot && slot->seq == want &&
	    emit_with(&c->call, sizeof(struct open_event) + len, &c->call.ev.hdr.status, &slot->b, &slot->seq, want))
		return true;
	/* Its snapshot reused, or no room for both: the call alone, if the
	 * slot still holds it once copied. */
	return emit_seq(&c->call, sizeof(struct open_event) + len, &c->seq, want);
}

/*
 * The image opened a file again: send its first open's kept snapshot, if
 * not sent before, as an EVENT_KEPT_STACK made from ev (the repeat, just
 * sent): without the snapshot if its slot was reused meanwhile.
 */
static __always_inline void send_kept(struct open_event *ev, __u64 sig)
{
	struct kept_slot *slot;
	struct kept_ref *ref;
	__u64 want;
	__u32 i;

	if (!kept_nslots || !(ref = kept_ref_of(sig, false)) || ref->sig != sig)
		return;
	want = ref->seq;
	/* The first to take the seq sends the snapshot. */
	if (!want || __sync_val_compare_and_swap(&ref->seq, want, 0) != want)
		return;
	i = (want / 2 - 1) % kept_nslots;
	ev->hdr.kind = EVENT_KEPT_STACK;
	ev->hdr.status = 0;
	ev->fname_len = 0;
	ev->path_len = 0;
	ev->unsent = 0;
	slot = bpf_map_lookup_elem(&kept_slots, &i);
	if (first_calls_kept && send_first_call(slot, want))
		return;
	if (slot && slot->seq == want) {
		ev->enter_ns = ev->exit_ns = slot->ns;
		if (emit_with(ev, sizeof(*ev), &ev->hdr.status, &slot->b, &slot->seq, want))
			return;
	}
	emit(ev, sizeof(*ev));
}

#endif /* ONCE_STACK_BPF_H */
