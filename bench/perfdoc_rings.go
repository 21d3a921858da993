package main

// perfDocRings is the performance page's section on rings per CPU group:
// the design for many-CPU nodes and what it predicts. Its figures are
// measured by hand, not by make bench, and say so.
const perfDocRings = `## Rings per CPU group

Every producer of a BPF ring buffer reserves its record under the ring's
one spinlock. Published measurements of one ring: 11–13 M records/s with
one producer, 1.9–3.1 M/s in all with 32–52 producers (the kernel's
rqspinlock and overwrite-mode patch threads, 2025); systing dropped 85% of
its events with one ring on 192 CPUs and moved to min(ncpu, 64) rings;
Falco's modern probe shares a ring per 2 CPUs. The nodes once is meant
for have 32–192 CPUs.

**What once does.** ` + "`--rings N`" + ` (run, check, watch, and compare's traced run) makes N rings; CPU *c*
writes ring *c* mod N (the program looks its ring up in an array of
rings; with one ring the lookup is removed at load and the programs are
the same as before). The default is one ring per 4 CPUs, rounded up, at
most 32: one ring up to 4 CPUs (this 2-CPU VM), 8 on 32 CPUs, 16 on 64,
32 from 128 CPUs on (6 CPUs a ring on 192). ` + "`--ring-size`" + ` is each ring's
size; without it each ring gets 8 MiB up to 4 rings and then a share of
32 MiB (a power of two, at least 1 MiB): 32 MiB in all from 16 CPUs on,
where one ring had 8. once watch without ` + "`--events`" + ` sends a small
part of that stream (the kernel counts first opens and repeats), and
its rings are half that size: 4 MiB each up to 4 rings, then a share of
16 MiB (its pod, sized for one 8 MiB ring, is charged 8 MiB more from 16
CPUs on). A ring's pages are mapped twice into the reader, so each of
its MiB is two of RSS. With ` + "`--stacks`" + ` it is 64 MiB each up to 4
rings, then a share of 256 MiB. The kernel counts the records it could
not reserve per CPU already; the JSON report and the summary lines add ` + "`dropped_events_by_ring`" + ` with more than one ring
(` + "`events_lost`" + ` stays the total). Putting a ring in the array of rings
waits for an RCU grace period (milliseconds); the rings are made and put
in place in parallel while the programs load, so that Open with 2, 8 or
32 rings took as long as with one here (75–97 ms without the link cache;
a ring put in place after loading had added 15–20 ms).

**Why 4 CPUs a ring.** Between the published points a ring's throughput
falls about as a power of its producers, T(k) ≈ 12 · k^−0.43 M records/s
(12 at 1, 6.6 at 4, 4.9 at 8, 3.6 at 16, 2.5 at 40, 1.25 at 192). A CPU
running W1's loop as fast as it can under ` + "`once watch --events`" + ` sends a
record every 2–4 µs here: at most some 0.5 M/s per CPU (say 0.7 on a
faster core). k such CPUs on one ring ask for k × 0.5–0.7 M/s: 4 CPUs
2–2.8 M/s, 30–42% of T(4); 8 CPUs 4–5.6 M/s, 82–114% of T(8), saturated;
16 CPUs twice what the ring can take. Past saturation the producers wait
on the lock inside the traced syscalls. 4 keeps each ring under half of
what it can take with every CPU flooding; 2, as Falco, would halve that
again for twice the rings (memory, and rings for the reader to look at).
Past 128 CPUs the rings stay 32: 6 CPUs a ring on 192 ask for 3–4.2 M/s
of T(6) = 5.6, 54–76%, still short of saturation, for half the memory and
half the rings that 48 would take.

**What it predicts for 64–192 CPUs.** One ring on 192 CPUs under a
machine-wide flood is asked for some 100 M records/s and takes about 1.25:
the producers serialize on its lock, as systing saw. 32 rings of 6 CPUs
each stay at the 6-producer point (5.6 M/s a ring, some 180 M/s in all),
and on 64 CPUs 16 rings of 4 at 6.6 M/s each: the kernel side no longer
limits; the reader does: one reader decodes a few M records/s, so under
such a flood records are still lost, but
counted per ring, and lost because the reader is slower, not because the
traced processes wait on one lock. A single busy process (the acceptance
test of once watch --events at full speed) writes one ring at a time
whatever N is: rings cost it nothing and gain it nothing.

**The order the engine needs.** A ring keeps its records in the order
they were reserved, but a task that migrates writes its next records to
another ring, and a child may run on another CPU than its fork: one
reader (one epoll over every ring) merges the rings by each record's
kernel time (its program's bpf_ktime_get_ns, taken before the record is
reserved) with a watermark, as perf's ordered events do: the oldest
record at the rings' heads goes out once every ring with nothing to read
was last seen empty at or after that record's time. A record that follows
another in cause (a fork before its child's records, a task's records
before it migrates, an exit before the next process with that pid, an
io_uring submission before its completion in a worker) has a later time,
and is never read before it. A per-task sequence number would order one
task's records, but none of the others, and would need a field in every
record; every record had a time already (an exec's strings, sent at its
entry, now carry their send time when there are several rings). The cost
per record is a scan of the rings' heads in once's own memory; a ring with
nothing to read is looked at again (a load of its producer position) only
when its last look is older than the record going out, after one clock
read (vDSO, no system call): a backlog in one ring costs no look at the
others, and a reader that keeps up looks at each idle ring once a record.
Flush reads every ring until all are empty; deadlines work as with one
ring.

**Measured here** (2 CPUs, 2026-12-05, with other work on the machine that
made wall times swing 2–5×): BPF statistics of once's own programs over
200,000 opens of W1's loop under
` + "`once watch --events --format json --comm NAME`" + `, ` + "`--rings 1`" + ` and
` + "`--rings 2`" + ` in alternating order, paired by round. One process:
` + "`exit_open`" + ` with two rings less one ring, median over rounds, −7 ns
(8 rounds; earlier runs −35 ns over 12, and medians of 805 against 840
and 778 against 765 ns, the spread between runs ±40 ns); once's CPU ×1.04
(×1.01 in an earlier run); W1 3.69 against 3.74 µs a call in the
quietest run (untraced 2.32); nothing lost, every open a line. One process
on each CPU: −0.5 ns (6 rounds; earlier medians 828 against 825); once's
CPU ×0.99; W1 5.39 against 4.99 µs (untraced 2.96); in 2 of 13 rounds one ring lost events (31,757 and 2,736), two
rings never. No cost measurable either way, and two CPUs do not contend
for one lock enough to show a gain.

`
