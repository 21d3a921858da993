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
#include "maps.bpf.h"
#include "emit.bpf.h"

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
};

/*
 * Snapshot the current thread's user side into the CPU's stack_buf: its
 * registers as saved at syscall entry (a thread in a syscall has not run
 * user code since, so they are the caller's whether read at the entry or
 * the exit), the frames of bpf_get_stack's user frame-pointer walk, and
 * stack_size bytes of its stack from SP up.
 *
 * The window is read page by page: bpf_probe_read_user fails whole on a
 * range that reaches an unmapped (or not resident) page, so a read up to
 * the end of SP's page comes first, then a page at a time; the first that
 * fails ends the window with what was read (STK_WINDOW_FAULT: above the
 * top of the stack, most often). A window that got all of stack_size
 * bytes is cut (STK_WINDOW_CUT) if the byte past it is readable.
 */
static __always_inline int stack_capture(void *ctx)
{
	struct stack_buf *b;
	struct pt_regs *regs;
	/* 64-bit: a 32-bit difference the verifier sees sign-extended. */
	__u64 want = stack_size, got = 0;
	long n;
	__u8 probe;

	if (!stack_size)
		return STACK_NONE;
	b = get_stack_buf();
	if (!b)
		return STACK_MISSING;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	b->t.ip = regs->ip;
	b->t.sp = regs->sp;
	b->t.bp = regs->bp;
	b->t.bx = regs->bx;
	b->t.r12 = regs->r12;
	b->t.r13 = regs->r13;
	b->t.r14 = regs->r14;
	b->t.r15 = regs->r15;
	b->t.flags = 0;
	if (want > ONCE_STACK_MAX)
		want = ONCE_STACK_MAX;
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
		if (bpf_probe_read_user(&b->window[got & (ONCE_STACK_MAX - 1)], len, (void *)addr)) {
			b->t.flags |= STK_WINDOW_FAULT;
			break;
		}
		got += len;
	}
	if (got >= want && !bpf_probe_read_user(&probe, 1, (void *)(b->t.sp + got)))
		b->t.flags |= STK_WINDOW_CUT;
	b->t.window_len = got;
	n = bpf_get_stack(ctx, b->fp, sizeof(b->fp), BPF_F_USER_STACK);
	b->t.nr_fp = n > 0 ? n / sizeof(__u64) : 0;
	if (!got && !b->t.nr_fp)
		return STACK_MISSING;
	return STACK_CAPTURED;
}

/* How emit_snap sent a record. */
enum {
	SNAP_NOT_SENT = 0,
	SNAP_SENT_BARE = 1,  /* without a snapshot */
	SNAP_SENT_STACK = 2, /* with the CPU's stack_buf behind it */
};

/*
 * Send the record data (size bytes, its header's status at *status) with
 * the snapshot stack_capture left in the CPU's stack_buf behind it, if
 * stacked is STACK_CAPTURED. A record reserved at its run-time size
 * (a dynptr) and written in three parts, so that neither the window nor
 * the strings are copied twice. Should the ring have no room for the
 * whole, the record goes without the snapshot. The caller counts a
 * record sent bare where a snapshot was wanted (CNT_STACKS_DROPPED).
 */
static __always_inline int emit_snap(void *data, __u64 size, __u16 *status, int stacked)
{
	struct bpf_dynptr dp;
	struct stack_buf *b;
	__u32 head, wlen;

	if (stacked != STACK_CAPTURED || !(b = get_stack_buf()))
		return emit(data, size) ? SNAP_SENT_BARE : SNAP_NOT_SENT;
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
	if (!bpf_ringbuf_reserve_dynptr(&events, size + head + wlen, 0, &dp)) {
		bpf_dynptr_write(&dp, 0, data, size, 0);
		bpf_dynptr_write(&dp, size, &b->t, head, 0);
		bpf_dynptr_write(&dp, size + head, b->window, wlen, 0);
		bpf_ringbuf_submit_dynptr(&dp, wakeup_flags());
		count(CNT_EVENTS_SENT);
		return SNAP_SENT_STACK;
	}
	/* A failed reservation must be released all the same. */
	bpf_ringbuf_discard_dynptr(&dp, 0);
	*status &= ~ST_STACK;
	return emit(data, size) ? SNAP_SENT_BARE : SNAP_NOT_SENT;
}

#endif /* ONCE_STACK_BPF_H */
