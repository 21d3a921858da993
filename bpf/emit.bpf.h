/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What reaches user space: events through the ring buffer, and the per-CPU
 * counters of what was sent, lost or cut.
 */
#ifndef ONCE_EMIT_BPF_H
#define ONCE_EMIT_BPF_H

#include "maps.bpf.h"

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
	if (st & ST_PATH_INTERNAL)
		count(CNT_PATH_INTERNAL);
	if (st & ST_ARGV_TRUNCATED)
		count(CNT_ARGV_TRUNCATED);
	if (st & ST_ARGV_UNREADABLE)
		count(CNT_ARGV_UNREADABLE);
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

/* Below the threshold: no wakeup. Above it: the default, which wakes the
 * reader only if it is waiting (it has consumed everything); forcing it
 * would interrupt a reader that is already busy with the backlog, once
 * per event. */
static __always_inline __u64 wakeup_flags(void *ring)
{
	if (wakeup_bytes && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) < wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	return 0;
}

static __always_inline bool emit(void *data, __u64 size)
{
	void *ring = cpu_ring();

	if (!ring || bpf_ringbuf_output(ring, data, size, wakeup_flags(ring))) {
		count(CNT_RINGBUF_FULL);
		return false;
	}
	count(CNT_EVENTS_SENT);
	return true;
}

#endif /* ONCE_EMIT_BPF_H */
