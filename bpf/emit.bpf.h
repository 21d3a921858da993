/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What reaches user space: events through the ring buffer, and the per-CPU
 * counters of what was sent, lost or cut.
 */
#ifndef ONCE_EMIT_BPF_H
#define ONCE_EMIT_BPF_H

#include "maps.bpf.h"

__noinline int count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	/* Atomic even per CPU: a preemptible kernel can run this program
	 * for another task on the same CPU in between. */
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

/* count by n. */
__noinline int count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v && n)
		__sync_fetch_and_add(v, n);
	return 0;
}

__noinline int count_status(__u32 st)
{
	if (st & ST_FNAME_TRUNCATED)
		count(CNT_FNAME_TRUNCATED);
	if (st & ST_FNAME_UNREADABLE)
		count(CNT_FNAME_UNREADABLE);
	if (st & ST_PATH_TRUNCATED)
		count(CNT_PATH_TRUNCATED);
	if (st & ST_PATH_UNRESOLVED)
		count(CNT_PATH_UNRESOLVED);
	if (st & ST_PATH_INTERNAL)
		count(CNT_PATH_INTERNAL);
	if (st & ST_ARGV_TRUNCATED)
		count(CNT_ARGV_TRUNCATED);
	if (st & ST_ARGV_UNREADABLE)
		count(CNT_ARGV_UNREADABLE);
	return 0;
}

/* The ring this CPU writes. A program runs on one CPU from start to end
 * (migration is disabled while it runs), so all of one call's records go
 * to one ring in order; a task that migrates writes its later records to
 * another ring, and user space merges the rings by the records' kernel
 * timestamps (collector/rings.go). NULL only if a slot were empty. */
static __always_inline void *cpu_ring(void)
{
	__u32 i;

	if (nrings <= 1)
		return &events;
	i = bpf_get_smp_processor_id() % nrings;
	return bpf_map_lookup_elem(&rings, &i);
}

/*
 * Batched wakeups: the reader is woken when the backlog reaches
 * wakeup_bytes, and polls on a short deadline otherwise. The kernel's own
 * wakeup (flags 0) only wakes a reader whose consumer position is at the
 * record committed, one that has read everything: past the first record
 * sent without a wakeup, that is never the case, so the record that takes
 * the backlog to the threshold forces one. rec is the record's room in the
 * ring (header included); reserved: the backlog already counts it.
 */
__noinline __u64 wakeup_flags(__u64 rec, __u32 reserved)
{
	void *ring;
	__u64 before;

	if (!wakeup_bytes)
		return 0;
	/* This CPU's, the one the caller writes (see cpu_ring). */
	ring = cpu_ring();
	if (!ring)
		return 0;
	before = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	if (reserved)
		before = before > rec ? before - rec : 0;
	if (before >= wakeup_bytes)
		return 0; /* past it: woken already, or busy with the backlog */
	return before + rec >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* A record's room in a ring: its 8-byte header and its data, rounded up
 * to 8 bytes. */
static __always_inline __u64 ring_room(__u64 size)
{
	return (size + 8 + 7) & ~7ULL;
}

/* Send a record of size bytes. One the ring has no room for is counted
 * in counter cnt; in none with CNT_MAX, where the caller counts what the
 * record held. */
static __always_inline bool emit_counted(void *data, __u64 size, __u32 cnt)
{
	void *ring = cpu_ring();

	if (!ring || bpf_ringbuf_output(ring, data, size, wakeup_flags(ring_room(size), 0))) {
		if (cnt < CNT_MAX)
			count(cnt);
		return false;
	}
	count(CNT_EVENTS_SENT);
	return true;
}

/* Send a record; one the ring has no room for is an event lost. */
static __always_inline bool emit(void *data, __u64 size)
{
	return emit_counted(data, size, CNT_RINGBUF_FULL);
}

#endif /* ONCE_EMIT_BPF_H */
