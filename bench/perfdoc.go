package main

import (
	"os"
	"path/filepath"
)

// perfDocPath is where make bench writes the performance page; a test
// keeps it the rendering of the committed results.
const perfDocPath = "../docs/performance.md"

// perfDocHead is the page's own text: how the figures are made and what
// keeps once cheap. The figures follow it, rendered from
// bench/results/latest.json.
const perfDocHead = `# Performance

This page is written by ` + "`make bench`" + ` (root, about 18 minutes; ` + "`make bench-deps`" + `
installs strace, bpftrace and libbpf-tools to compare against) from
[bench/results/latest.json](../bench/results/latest.json); a test keeps it
the rendering of that file, so it cannot drift from the figures.

## How it is measured

Three workloads run untraced and under each tracer, interleaved over up
to 5 rounds: **W1** open+close of one file in a loop (the cost per call),
**W2** ` + "`cp -r`" + ` of 3,000 files of 4 KiB (a real program, every open a new
file), **W3** 2,000 fork+execvpe with a 7-entry PATH (the exec side). The
machine is a noisy 2-CPU VM, so each traced cell is judged against
untraced runs made right before it (paired), W3 runs pinned to one CPU,
and the steadier figure, what the BPF programs themselves cost, is
measured after the rounds with the kernel's BPF statistics. **W4** runs
` + "`once run`" + ` on a build-like tree (N jobs, two at a time, each opening M
distinct files) for memory, the time from the command's exit to the
report written, and the report's size; a churn of processes under
` + "`once watch --events`" + ` checks that printing events costs no memory.
**W5**, stat storms, runs after them in rounds of its own
(` + "`go run ./bench -bin bin -only W5`" + ` runs it alone, about 7 minutes):
200,000 ` + "`newfstatat`" + `, alternately a hit and a miss; ` + "`find`" + ` over 10,000
files; ` + "`git status`" + ` in a 5,000-file repository; bash running 2,000
commands through a 7-entry PATH; under the floor, once run, once watch
and once run following another tree, with the BPF programs' time per
lookup by the kernel's statistics. Most targets are judged against the
floor: what programs that do nothing cost on once's 30 syscall
tracepoints.

## The floor

The floor row is the bench itself run as ` + "`bench floor-programs`" + `: one
program per tracepoint ` + "`bench/bt/floor.bt`" + ` names, each returning 0 at
once, loaded and attached with cilium/ebpf as once attaches its own (a
perf event and a BPF link per tracepoint). What it adds to a call is
what having any BPF program on the call's tracepoints costs: the
syscall's slow path, the record the tracepoint fills, the program's
call.

Until 2026-12-07 (d8ba21a) the floor was bpftrace running floor.bt, and
that was not this floor. bpftrace 0.17 compiles an empty action (and
` + "`return`" + `) to a program that returns 1, and it enables the perf event
it attaches each program by, an event it opens on CPU 0. After a
tracepoint's programs run, a non-zero result hands the record on to the
enabled perf events on the CPU's list (perf_trace_run_bpf_submit in
the kernel): every traced call that ran on CPU 0 also
wrote a perf sample, and the same call on CPU 1 did not. By hand on
2026-12-07, the W5 stat loop (ns per call, the median of 200 batches of
1,000 calls, pinned with taskset, two to five runs each):

| programs | CPU 0 | CPU 1 |
|---|--:|--:|
| none | 521-544 | 529-537 |
| floor.bt under bpftrace | 744-1,082 | 589-655 |
| the same, loaded with cilium/ebpf, returning 0 | 557-604 | 569-603 |

Programs loaded with cilium/ebpf that returned 1 showed no such
difference either (682-697 ns on CPU 0, 683-702 on CPU 1, in a slower
spell of the VM). Under strace, bpftrace opens each tracepoint's perf
event on CPU 0 and enables it (PERF_EVENT_IOC_SET_BPF, then
PERF_EVENT_IOC_ENABLE); cilium/ebpf opens it on CPU 0 too but attaches
through a BPF link and never enables it, so no record is handed to it
whatever its program returns. So the old
floor stood above what a program there has to cost, by more for a
workload that ran on CPU 0 than for one on CPU 1, and every limit
judged against it was looser than the target meant and moved with
where the workload ran. The bench keeps bpftrace's empty programs as a
row no target is judged against, so each run shows the two side by
side: in 0ce6932's run they added +127 ns per W1 open where the floor
added +115, in 5e195fd's +216 where it added +161 (unpaired +222 and
+148), in 7b81bdb's +224 where it added +126, while by the kernel's
statistics the programs themselves took the same (70 ns per open
against 71, 64 against 73, and 60 against 71: the difference is outside
them).

## The targets run by run

Every committed full run since 2026-12-05 08:45, newest first, and the
targets of its 25 it missed, each with what was measured and, in
parentheses, its limit in that run (the results are the named commit's
` + "`bench/results/latest.json`" + `; the run below is this page's). No run met
all 25, and which it missed changed from run to run: W1 under
` + "`--events`" + ` missed in 19 of these 30 runs, W2 under once run in 18,
W2 under ` + "`--stacks`" + ` in 17, W5 under once run in 16, the start-up in
15, a W5 process outside once run's tree in 15, W2 under once watch in
12, W5 under once watch in 11, W1 under once run in 9, a W1 process
outside once run's tree in 8, every other target in 2 or fewer.

The run below (8d75694's code) came after a session that cut what the
verifier walks at start-up (see Start-up), which changed, on the paths
the rows measure, only the image table's big sequences (they no longer
wrap; past their first 8 slots they are looked at by ` + "`bpf_loop`" + `) and
a repeated miss's compare (the same loads, its cut word indexed anew).
The VM was about as slow as in the run before (the floor's empty
programs took 87 ns per W1 open by the kernel's statistics, 83 before;
untraced W1 772 ns a call, 776), but the floor added less: +150 ns per
W1 open (+213 before) and +107 per stat (+143). It missed 9: W1 under
` + "`--events`" + ` (+532 against +300), under once run (+265 against +225)
and outside its tree (+173 against +150), W2 under once run (×1.30) and
under once watch (×1.26, against the floor's ×1.12 + 0.10), the
start-up (51.4 ms; the start-up table's warm starts at rest 52.9 ms,
54.5 in the run before), and all three W5 targets (once run +268
against +161, outside its tree +142 against +107, once watch +258
against +215). It met W1 under once watch (+297 against +300), W2 under
` + "`--stacks`" + ` (×1.35, at its limit), W3 under once run (×1.05), and every
loss, memory, report-size and W4 target. By the kernel's statistics
once's programs above the floor's took what they did in the run before:
W1 under ` + "`--events`" + ` +448 ns per open (+429), once watch +86 (+91),
outside the tree +19 (+25), W2 under once watch +568 per call (+560).

e747476's run (at bd7f5d4) came after a fifth session of audits,
with no change made for speed, on a VM slower that evening than in any
run before it: the floor's empty programs took 83 ns per W1 open by the
kernel's statistics (68 in the run before), untraced W1 776 ns a call
(609), and the floor added +213 ns per W1 open and +143 per stat. On
the paths it measures, an open's exit that sends its event also reads
the file system's magic once more for a file on a device of major 0
(tmpfs, where W1 runs), to mark procfs and sysfs files; a once run
repeat past failures sent checks their stems before it is counted (W5's
loop sends none past its first, so never there); the comm filter, off
in every row, reads the group leader's comm when on. It missed 5:
W1 under ` + "`--events`" + ` (+572 against +426), W2 under once watch (×1.26
against the floor's ×1.15 + 0.10) and under ` + "`--stacks`" + ` (×1.38), the
start-up (59.8 ms; the start-up table's warm starts at rest 54.5 ms),
and W5 under once run (+241 against +214). It met W1 under once run
(+268 against +320) and outside its tree (+160 against +213), W2 under
once run (×1.23), W3 under once run (×1.02) and the other two W5
targets. By the kernel's statistics once's programs above the floor's
took what they did in the run before, scaled by the VM: W1 under
` + "`--events`" + ` +429 ns per open (+282 before; the floor's programs ×1.22
slower), once watch +91 (+81), outside the tree +25 (+23).

e632660's run (at 7a2464b) came after a fourth session of audits,
with no change made for speed; on the paths it measures, a repeat's
exit reads its clock before tallying a new key (a store and a branch
more on every open and lookup exit), and ` + "`once run --stacks`" + ` forks
the command from a thread whose per-CPU perf events it inherits, so
that the mapping records are the tree's alone. It missed 8, on a floor
that added +135 ns per W1 open and +125 per stat: W1 under
` + "`--events`" + ` (+425 against +270), W1 under once run (+223 against
+202) and outside its tree (+162 against +135), W2 under once run
(×1.24 against the floor's ×1.11 + 0.10), W3 under once run (×1.09
against ×1.08), the start-up (55.4 ms), W5 under once run (+202
against +188) and outside its tree (+127 against +125). It met W2 under
once watch (×1.16) and under ` + "`--stacks`" + ` (×1.32), and W5 under once
watch (+218 against +250).

bd1803d's run (e492db5's code) came after a third session of audits,
with no change made for speed; on the paths it measures, a thread keeps
a run of misses of each kind (its last failed open's and its last failed
lookup's), which makes open and process records 16 bytes longer, and a
program on io_uring_req_failed runs only when a request fails. It
missed 8, on a floor that added +135 ns per W1 open and +111 per stat:
W1 under ` + "`--events`" + ` (+418 against +271), W1 under once run (+236
against +203) and outside its tree (+156 against +135), W2 under once
watch (×1.22 against the floor's ×1.10 + 0.10), the start-up (59.2 ms),
W5 under once run (+220 against +166), outside its tree (+131 against
+111) and under once watch (+221.9 against +221.8). By the kernel's
statistics its programs took about what bd7dece's did: 347 ns per W1
open under ` + "`--events`" + ` against 430; under once watch, the stat loop's
lookup exit 121 ns a run against 110 (the floor's programs 138 per
lookup against 155). Side by side on one stat loop, three runs each in
turn, 33dbccf's lookup exit took 109-130 ns a run and this code's
106-109.

bd7dece's run (at c92b9b1) came after a second session of audits,
with no change made for speed; on the paths it measures, a fork now
reads the child's cgroup, an open that ends a pending probe compares its
name with ld.so's cache's, and an exit with no entry asks whether the
thread is ptraced. It missed 7, on a floor that added +137 ns per W1
open and +117 per stat (+124 and +95 in 7d1f984's): W1 under
` + "`--events`" + ` (+423 against +274), W1 under once run (+241 against
+206) and outside its tree (+150 against +137), the start-up (60.9 ms),
W5 under once run (+197 against +176), outside its tree (+139 against
+117) and under once watch (+242 against +235). It met all three W2
targets: once run ×1.12 and once watch ×1.20 against the floor's ×1.13
+ 0.10, ` + "`--stacks`" + ` ×1.28. It and 7d1f984's run, an hour and a
half apart with no change to the hot paths between them, disagree on 5
of the 25: the spread this page's paragraphs keep meeting.

7d1f984's run (at 25421ea) came after a session of audits against real
programs, with no change made for speed; on the paths it measures, an
open's exit now reads the file system's magic for a file on a device
of major 0 (tmpfs, where W1 runs, and btrfs, to give stat's device),
and an exit with no entry asks whether a seccomp filter refused the
call. It missed 6: W1 under ` + "`--events`" + ` (+399 ns per open against 2 ×
the floor's +124), W1 under once run (+197 against +187), W2 under once
run (×1.23) and once watch (×1.21) against the floor's ×1.11 + 0.10, W5
under once run (+180 per stat against 1.5 × the floor's +95) and once
watch (+216 against +190). It met W2 under ` + "`--stacks`" + ` (×1.34), both
targets of a process outside once run's tree (+124 per W1 open, at its
limit; +91 per stat against +95) and the start-up (45.3 ms).

0ce6932's run was the first with the image table's sequences in a plain
loop (9584f21), the repeat's walk in one (f004cc9) and the file's mode
read with a load (4dd3942). It missed 8, and met W2 under once watch
(×1.19 against the floor's ×1.10 + 0.10; by the kernel's statistics
once watch's programs took 612 ns per cp open against 712 in 5e195fd's
run, the floor's 178 against 177). Its floor added the least yet per W1
open, +115 ns (bpftrace's empty programs +127), and against it W1 under
once run (+214, limit +173) and outside the tree (+143) missed again;
W1 under ` + "`--events`" + ` added +438 (limit +231), W2 under once run ×1.22
(limit ×1.20) and under ` + "`--stacks`" + ` ×1.36 (×1.35); the three W5 targets
missed against a floor of +110 ns per stat (once run +216, once watch
+245, outside +113). The start-up was 45.0 ms.

5e195fd's run and 7b81bdb's, an hour before it on the same VM, were the
first two judged against the floor of programs that return at once
(d8ba21a, see The floor): every run before them was judged against
bpftrace's empty programs, which cost more, and more on one CPU than on
the other, so their limits were looser and moved with where a workload
ran. 5e195fd's run missed 6: W1 under ` + "`--events`" + ` (+478 ns per open
against 2 × the floor's +161); W2 under once run (×1.24 against the
floor's ×1.09 + 0.10) and once watch (×1.26); and the three W5 targets
against a floor that added +90 ns per stat (once run +177, once watch
+191, outside +96). It met W1 under once run (+221 against +241) and
outside once run's tree (+142 against +161), W2 under ` + "`--stacks`" + ` (×1.35,
at its limit) and the start-up (38.5 ms). 7b81bdb's run missed 8: the
same, and W1 under once run (+231 against 1.5 × the floor's +126, +189)
and outside its tree (+156 against +126), with W2 under once watch at
×1.41 (by the kernel's statistics its programs took 823 ns per cp open
against 684 in ba5616a's run, the floor's 187 against 168, on a VM
whose untraced cp -r took 30.4 ms against 24.0). The floor's W1 figure
moved from +126 to +161 between the two, and with it the W1 verdicts;
against bpftrace's floor of either run, W1 under once run and outside
the tree would have been met.

ba5616a's run was the first whose untraced runs never start cold
(f0f4f05): on this VM the first run after a second idle, or after runs
of another workload, is slower than the next by up to a third (cp -r
35-90 ms, then 26-30, by hand the same day), and the untraced half of a
wrapping tracer's pair used to come right after the bench's wait for
the kernel to let go of the once before (about a second, the machine
idle), its traced half right after once's busy start. An untraced run
after such a wait or another workload now comes after one untimed run
of its own. The run before it (923a02d), on the same VM an hour earlier
and without the warm-ups, missed only W1 under ` + "`--events`" + `, but its W2
figures for once run (×0.82) and ` + "`--stacks`" + ` (×0.96) were that bias, not
a result: unpaired they were ×1.21 and ×1.30 (the floor's ×1.17). In
5185798's run the pairs had erred the other way (×1.30 paired, ×1.15
unpaired). The paragraphs below say, target by target, what moved.

| results | run at (UTC) | missed: measured against its limit |
|---|---|---|
| the run below | 2026-12-08 00:35 | 9 of 25: W1 --events +532 ns (+300 ns); W1 run +265 ns (+225 ns); W1 outside +173 ns (+150 ns); W2 run ×1.30 (floor ×1.12 + 0.10); W2 watch ×1.26 (floor ×1.12 + 0.10); start-up 51.4 ms (50 ms); W5 run +268 ns (+161 ns); W5 outside +142 ns (+107 ns); W5 watch +258 ns (+215 ns) |
| bd7f5d4 | 2026-12-07 22:36 | 5 of 25: W1 --events +572 ns (+426 ns); W2 watch ×1.26 (floor ×1.15 + 0.10); W2 --stacks ×1.38 (×1.35); start-up 59.8 ms (50 ms); W5 run +241 ns (+214 ns) |
| 7a2464b | 2026-12-07 17:14 | 8 of 25: W1 --events +425 ns (+270 ns); W1 run +223 ns (+202 ns); W1 outside +162 ns (+135 ns); W2 run ×1.24 (floor ×1.11 + 0.10); W3 run ×1.09 (×1.08); start-up 55.4 ms (50 ms); W5 run +202 ns (+188 ns); W5 outside +127 ns (+125 ns) |
| bd1803d | 2026-12-07 14:23 | 8 of 25: W1 --events +418 ns (+271 ns); W1 run +236 ns (+203 ns); W1 outside +156 ns (+135 ns); W2 watch ×1.22 (floor ×1.10 + 0.10); start-up 59.2 ms (50 ms); W5 run +220 ns (+166 ns); W5 outside +131 ns (+111 ns); W5 watch +221.9 ns (+221.8 ns) |
| bd7dece | 2026-12-07 12:50 | 7 of 25: W1 --events +423 ns (+274 ns); W1 run +241 ns (+206 ns); W1 outside +150 ns (+137 ns); start-up 60.9 ms (50 ms); W5 run +197 ns (+176 ns); W5 outside +139 ns (+117 ns); W5 watch +242 ns (+235 ns) |
| 7d1f984 | 2026-12-07 10:11 | 6 of 25: W1 --events +399 ns (+249 ns); W1 run +197 ns (+187 ns); W2 run ×1.23 (floor ×1.11 + 0.10); W2 watch ×1.21 (floor ×1.11 + 0.10); W5 run +180 ns (+143 ns); W5 watch +216 ns (+190 ns) |
| 0ce6932 | 2026-12-07 05:30 | 8 of 25: W1 --events +438 ns (+231 ns); W1 run +214 ns (+173 ns); W1 outside +143 ns (+115 ns); W2 run ×1.22 (floor ×1.10 + 0.10); W2 --stacks ×1.36 (×1.35); W5 run +216 ns (+165 ns); W5 outside +113 ns (+110 ns); W5 watch +245 ns (+220 ns) |
| 5e195fd | 2026-12-07 03:54 | 6 of 25: W1 --events +478 ns (+321 ns); W2 run ×1.24 (floor ×1.09 + 0.10); W2 watch ×1.26 (floor ×1.09 + 0.10); W5 run +177 ns (+134 ns); W5 outside +96 ns (+90 ns); W5 watch +191 ns (+179 ns) |
| 7b81bdb | 2026-12-07 02:56 | 8 of 25: W1 --events +474 ns (+252 ns); W1 run +231 ns (+189 ns); W1 outside +156 ns (+126 ns); W2 run ×1.24 (floor ×1.12 + 0.10); W2 watch ×1.41 (floor ×1.12 + 0.10); W5 run +203 ns (+168 ns); W5 outside +120 ns (+112 ns); W5 watch +229 ns (+223 ns) |
| ba5616a | 2026-12-07 00:50 | 9 of 25: W1 --events +432 ns (+272 ns); W1 run +214 ns (+204 ns); W1 outside +163 ns (+136 ns); W2 run ×1.25 (floor ×1.14 + 0.10); W2 watch ×1.28 (floor ×1.14 + 0.10); W2 --stacks ×1.41 (×1.35); W5 run +233 ns (+121 ns); W5 outside +116 ns (+81 ns); W5 watch +244 ns (+162 ns) |
| 923a02d | 2026-12-07 00:29 | 1 of 25, its untraced runs cold (see above): W1 --events +475 ns (+362 ns) |
| 5185798 | 2026-12-06 22:55 | 8 of 25: W2 run ×1.30 (floor ×1.00 + 0.10); W2 watch ×1.28 (floor ×1.00 + 0.10); W2 --stacks ×1.50 (×1.35); start-up 60.1 ms (50 ms); W5 run +422 ns (+29 ns); W5 outside +250 ns (+20 ns); W5 watch +487 ns (+39 ns) |
| e77e48a | 2026-12-06 19:49 | 3 of 25: W2 --stacks ×1.37 (×1.35); W5 run +280 ns (+279 ns); W5 watch +856 ns (+371 ns) |
| 3853bd9 | 2026-12-06 18:34 | 4 of 25: W1 --events +715 ns (+388 ns); W2 run ×1.35 (floor ×1.12 + 0.10); W2 watch ×1.24 (floor ×1.12 + 0.10); start-up 60.0 ms (50 ms) |
| 765e2a8 | 2026-12-06 18:06 | 1 of 25: W1 --events +640 ns (+492 ns) |
| 5ae740f | 2026-12-06 16:46 | 2 of 25: W2 --stacks ×1.40 (×1.35); start-up 56.0 ms (50 ms) |
| 57fdad5 | 2026-12-06 16:13 | 4 of 25: W2 --stacks ×1.35 (×1.35); W5 run +285 ns (+155 ns); W5 outside +252 ns (+104 ns); W5 watch +804 ns (+207 ns) |
| 2ec218b | 2026-12-06 14:00 | 5 of 25: W1 --events +1.41 µs (+643 ns); W2 run ×1.30 (floor ×1.16 + 0.10); W2 --stacks ×1.35 (×1.35); start-up 55.8 ms (50 ms); W5 outside +679 ns (+250 ns) |
| c2f5973 | 2026-12-06 12:52 | 7 of 25: W1 --events +1.45 µs (+540 ns); W1 run +432 ns (+405 ns); W1 outside +483 ns (+270 ns); W2 run ×1.31 (floor ×1.19 + 0.10); W2 --stacks ×1.43 (×1.35); start-up 63.9 ms (50 ms); W5 outside +450 ns (+288 ns) |
| 7acb3b4 | 2026-12-06 12:25 | 5 of 25: W1 --events +863 ns (+854 ns); W2 run ×1.36 (floor ×1.20 + 0.10); W2 --stacks ×1.47 (×1.35); start-up 50.8 ms (50 ms); W5 outside +296 ns (+167 ns) |
| 0f21a7d | 2026-12-06 10:46 | 3 of 25: W2 run ×1.35 (floor ×1.07 + 0.10); W2 watch ×1.20 (floor ×1.07 + 0.10); start-up 60.3 ms (50 ms) |
| cc1bda5 | 2026-12-06 09:44 | 5 of 25: W2 run ×1.26 (floor ×1.14 + 0.10); W3 run ×1.11 (×1.08); start-up 54.9 ms (50 ms); W5 run +390 ns (+374 ns); W5 outside +288 ns (+249 ns) |
| d85c053 | 2026-12-06 08:53 | 2 of 25: start-up 60.4 ms (50 ms); W5 run +291 ns (+290 ns) |
| 2732df3 | 2026-12-06 03:16 | 2 of 25: W2 run ×1.31 (floor ×1.19 + 0.10); W2 --stacks ×1.55 (×1.35) |
| 5c63530 | 2026-12-06 01:09 | 6 of 25: W1 --events +657 ns (+593 ns); W2 run ×1.31 (floor ×1.15 + 0.10); W2 watch ×1.30 (floor ×1.15 + 0.10); W2 --stacks ×1.41 (×1.35); start-up 71.2 ms (50 ms); W5 outside +301 ns (+199 ns) |
| 4f2e2c7 | 2026-12-05 23:10 | 4 of 25: W1 --events +686 ns (+543 ns); W2 run ×1.33 (floor ×1.13 + 0.10); W2 --stacks ×1.44 (×1.35); --events RSS 20.5 MiB (20 MiB) |
| 6726082 | 2026-12-05 18:09 | 1 of 25: W2 --stacks ×1.46 (×1.35) |
| 446f632 | 2026-12-05 17:44 | 3 of 25: W1 --events +1.19 µs (+1.17 µs); W2 --stacks ×1.46 (×1.35); W5 run +612 ns (+495 ns) |
| 61525e8 | 2026-12-05 13:50 | 3 of 25: W2 --stacks ×1.44 (×1.35); W4 2,000 report time 1.09 s (1 s); W4 20,000 report time 1.10 s (1 s) |
| 0e80b86 | 2026-12-05 08:45 | 5 of 25: W2 run ×1.36 (floor ×1.15 + 0.10); W2 watch ×1.26 (floor ×1.15 + 0.10); W2 --stacks ×1.45 (×1.35); W4 2,000 report time 1.12 s (1 s); W4 20,000 report time 1.11 s (1 s) |

## W5: what the wall clock can and cannot say

In the run below all three missed, against a floor that added +107 ns
per stat: once run +268 against 1.5 ×, +161; once watch +258 against
2 ×, +215; a process outside once run's tree +142. In bd7dece's run all
three missed, against a floor that added +117 ns per stat: once run
+197 against 1.5 ×, +176; once watch +242 against 2 ×, +235; a process
outside once run's tree +139. In 7d1f984's run two
of the three missed, against a floor that added +95 ns per stat: once run +180 against 1.5 ×, +143; once watch +216
against 2 ×, +190; a process outside once run's tree met its limit
(+91). In 0ce6932's run all three missed, against a floor that added
+110 ns per stat: once run +216 against 1.5 ×, +165; once watch +245
against 2 ×, +220; a process outside once run's tree +113 (by the
kernel's statistics once watch's programs 355 ns per stat, 2.8 × the
floor's 127; outside 159). In 5e195fd's, the second against the floor
of programs that return at once (The floor), all three missed against
a floor that added +90
ns per stat: once run +177 against 1.5 ×, +134; once watch +191 against
2 ×, +179; a process outside once run's tree +96 (by the kernel's
statistics once watch's programs 293 ns per stat, 2.2 × the floor's
131; outside 153). In 7b81bdb's, the first, all three missed against a
floor that added +112 ns per stat: once run +203 against 1.5 ×, +168; once watch +229 against
2 ×, +223; a process outside once run's tree +120 (by the kernel's
statistics once watch's programs 341 ns per stat, 2.4 × the floor's
141; outside 197). Since 2de75f5 a miss predicted by the thread's miss
run no longer disarms the hit beside it: by the kernel's statistics
over the same stat loop under once watch, by hand before the run,
` + "`enter_newfstatat`" + ` took 55 ns a run against 77 before and ` + "`exit_lookup`" + `
118-120 against 130. In ba5616a's run, the first with the bench's
warm-ups, all three
missed against a floor that added +81 ns per stat: once run +233, once
watch +244, a process outside once run's tree +116 (by the kernel's
statistics once watch's programs 365 ns per stat, outside 157, the
floor's 145). In 923a02d's run, an hour before on the same VM, all
three were met: once run +216 ns per stat against
1.5 × the floor's +255, once watch +196 against 2 ×, a process outside
once run's tree +113 against 1 × (by the kernel's statistics once
watch's programs 186 ns per stat, outside 80, the floor's 86); its
system-wide rows were the first to run the stat loop nearest its
untraced runs, first after the session's start (c7752ad). In 5185798's run all three missed against a floor that added +20 ns
per stat on the wall clock (its stat loop took 1,062 ns a call, the
untraced one 1,163: the VM was slower during the untraced runs than
during the floor's), while by the kernel's statistics the floor's
programs took 89 ns per stat: once run +422, once watch +487 (programs
279 ns), a process outside once run's tree +250 (programs 112). In
e77e48a's run once run missed by a nanosecond (+280 ns per stat
against a limit of 1.5 × the floor's +186, +279) and once watch by more
than twice (+856 against 2 ×: its stat loop took 1,744 ns a call against
920 untraced and the floor's 1,141, while by the kernel's statistics its
programs cost 327 ns per stat against the floor's 126); a process
outside once run's tree +17 against 1 ×, met (programs 134 ns). In the
run before it all three were met: once run +316 ns per stat against a
limit of 1.5 × the floor's +324, once watch +386 against 2 ×, a process
outside once run's tree +233 against 1 ×; by the kernel's statistics
once watch's programs cost 287 ns per stat against the floor's 88, a
process outside the tree 102. In the two runs before that all three
were met too: once run +272 and +292 against 1.5 × the
floor's +530 and +577 (its highest yet), once watch +202 and +402,
outside +85 and +169 (programs 231 and 217 ns against 80 and 81,
outside 105 and 126). In the run before those all three missed: once run +285 against 1.5 × the floor's +104 (its lowest),
once watch +804 against 2 ×, outside +252 against 1 ×. That run's VM
slowed during the section, and its /dev/null was a regular file (a
measuring script of mine had removed the device an hour before; the
workloads do not write to it): the untraced stat loop went from 934 ns a
call in its first runs to 1,215-1,856 in its last, and once watch's
three runs in a round were 1,142-1,541, 1,764-1,797 and 1,144-1,785 ns,
one fast run beside two slow ones; the collector took no CPU while they
ran (once watch over the loop by hand: 0 or 1 clock tick per 200,000
stats). By the kernel's statistics once watch's programs cost 291 ns per
stat against the floor's 109, a process outside the tree 114. In the run
before that, whose untraced runs all waited for the kernel to let go of
the once run before them (After the command), the wall clock had once
run +316 against a limit of 1.5 × the floor's +250, +375, and once
watch +367 against 2 ×: both met; a process outside once run's tree
+679 against 1 ×: a miss, on a VM whose untraced stat loop took longer
per call (1,222 ns) than the floor's (1,187). In the run
before that, once run +233 against 1.5 × +288 and once watch +235 met, the
process outside the tree +450 missed; in the one before that, once run +138
against 1.5 × +167 and once watch +196 met, the process outside the tree
+296 missed; in the one before that all three were met (once run +268
against 1.5 × +299, once watch +349, outside +128); in the one before
that, the first to wait so, once run added +390 against +374 and the
process outside the tree +288 against the floor's +249: both missed. By
the kernel's statistics a process outside the tree costs once's programs
more than the floor's empty ones (159 ns per stat against 127 in 0ce6932's run, 153 against 131 in 5e195fd's, 197 against 141 in 7b81bdb's, 157 against 145 in ba5616a's, 80 against 86 in 923a02d's, the only run in which it came out below the floor's; 112 against 89 in 5185798's, 134 against 126 in e77e48a's, 102 against 88 in the one before; 151 against 82, 136 against 99, 132 against 115, 94 against 86 and 115 against 93 in earlier runs): once's two programs each look whether the process is followed
before they return, where the floor's return at once, so on the wall
clock that row meets its 1 × only by the floor's noise. The run before
those four, the first since once leaves its tracepoints to the
kernel at its exit, timed untraced runs while the kernel was letting go
of a once run's, which slows every syscall on the machine: its untraced
figures were high, and once's added time low (the runs before it had
once's exit wait for the kernel). It had once run
missing by a nanosecond (+291 against +290, the floor +193), once watch +228 and a
process outside once run's tree +140; the one before that all three met (once run
+258, once watch +278, outside +162, against the floor's +236), the one
before that the process outside the tree missing its target (+301
against the floor's +199) although by the kernel's statistics its
programs cost what the floor's did (112 ns per stat against 108), and
the one before that once run adding less than the floor (+198 against
+242). Earlier runs put the floor at +706 (once run +582), +330 (once
run +612, a miss), +302 (` + "`" + `-only W5` + "`" + `, 2026-12-04: once run +650, once
watch +680) and +292 (two rounds, 2026-12-05: once run +596, once watch
+566), while once's own figure moved far less: the floor's wall-clock
figure decides the verdict, and it does not settle at this size. By
the kernel's statistics, the steadier figure, once watch's programs
cost 2.8 × the floor's per stat in 0ce6932's run (355 ns against 127), 2.2 × in 5e195fd's (293 ns against 131), 2.4 × in 7b81bdb's (341 ns against 141), 2.5 × in ba5616a's (365 ns against 145), 2.2 × in 923a02d's (186 ns against 86), 3.1 × in 5185798's (279 ns against 89), 2.6 × in e77e48a's (327 ns against 126), 3.3 × in the one before (287 ns against 88), 2.9 × in the one before that (231 ns against 80), 2.7 × in the two before those (217 ns against 81, 291 against 109), 3.9 × in the one before them (318 ns against 82; 2.2 ×, 2.7 ×, 3.1 ×, 2.4 ×, 3.2 ×, 2.9 ×, 2.3 × and 3.2 × in the runs before): more than the 2 × its
wall-clock target allows. The wall clock's added time also holds what
any syscall tracepoint costs outside its programs, the same for both,
which brings the ratio down; so the W5 target for once watch is met in
some runs' figures but not by a margin the next run can be counted on
to keep.

The kernel's statistics are steadier: per stat, the floor's empty
programs run 52 + 67 ns; a process outside the tree 62 + 63 ns (one bit
looked up); a followed one about 100 ns in ` + "`" + `enter_newfstatat` + "`" + ` and 205 ns
in ` + "`" + `exit_lookup` + "`" + ` (2026-12-05, after the entry kept the comm filter's verdict;
120 and 249 the day before), where it was 140–180 and 720 (a repeated hit)
or 860 (a miss) while every repeat was sent. Alone, a loop of repeated hits costs
` + "`" + `exit_lookup` + "`" + ` about 212 ns and one of repeated misses 212 ns (once run)
to 244 ns (once watch). What is left is reading the user's memory twice
a call (the name or the stat buffer, then the other at the exit), two
task-storage lookups, and the compare that keeps the counts exact: a
repeat is only counted when its whole name and its directory are the
same, and only while no failure since could make it the end of a search.
A first stat of a file under once watch (find stats each entry once)
still costs ` + "`" + `exit_lookup` + "`" + ` about 530 ns, the image table's lookup and
insert.

## Start-up: where once watch's time goes

` + "`once watch`" + ` says ` + "`once: watching`" + ` once every program is loaded and
attached; with ` + "`-v`" + ` it first says where its start-up went. On this
2-CPU VM (2026-12-05, link cache warm, medians of 15 starts): about 5 ms
starting the process (the Go runtime and the packages' initialisation:
` + "`once version`" + ` takes 6 ms), then, from main, 1.3 ms for the flags, the
checks and the output, 5.5 ms waiting for the embedded BPF object to
decode (it starts at main, in the background, without its line info,
which only a verifier's log needs), 0.4 ms linking it (the link cache),
1.2 ms making the maps (` + "`open_tallies`" + `' 65,536 preallocated entries, the
one slow map at 3.5 ms, are made while the object decodes), 33 ms loading
the programs and 2 ms attaching the 35 hooks on two threads. The bench's
launch → ` + "`once: watching`" + `: see the targets below. Its target is judged
on the once watch row's starts, made in the rounds, each once the kernel
has let go of the tracepoints of the once before it (the bench waits for
that, see After the command). Run by run, 0ce6932's first, with
its start-up table's warm starts at rest (the median of 9) and right
after another once's exit in parentheses: 45.0 ms, met (45.5, range
42.5-47.9; 43.7); 38.5 ms, met (50.0, range
43.8-57.3; 45.7); 49.8 ms, met (90.9, range
73.4-98.5; 135.7: that table, made before the rounds, on a VM slower
then than during them; by hand after the run, ` + "`once watch -v`" + ` put
42.7-53.5 ms between main and watching, the programs' load 23-25 ms of
it); 38.2 ms, met (41.7, range
39.1-47.9; 40.9); 46.4 ms, met (65.5, range
59.3-69.5; 46.7: that table, made before the rounds); 60.1 ms, a miss (54.6, range
48.4-70.1; 63.8); 44.1 ms, met (84.7, range
58.2-196.3; 138.1: that table, made before the rounds, on a VM slower
then than during them); 60.0 ms, a miss (56.5, range
42.2-58.9; 46.1); 45.1 ms, met (48.2, 40.6-53.0; 51.6); 56.0 ms, a miss
(46.0, 40.6-52.0; 48.7); 48.0 ms, met (53.4, 40.2-64.5; 53.1); 55.8 ms, a
miss (47.4; 49.5); 63.9 ms, on a VM busier during its rounds than in any
run before (the floor's empty programs took 156 ns per W1 open by the
kernel's statistics, against 87 and 81 in the two runs before; 51.0);
50.8 ms, the first with the global functions (below), a miss by 0.8 ms
(60.6); 60.3 and 54.9 ms (58.4 and 58.0). The code before the global
functions started at rest by hand took 52-57 ms from main (` + "`once watch -v`" + `,
8 starts alternating with the build of the session before, whose starts
took the same, 2026-12-06); with them, 37-55 ms (median 44) against
46-68 ms (median 63) for the build before, 8 starts each, alternating.
The paragraph above has 33 ms of loading the day before: loading is the
verifier, CPU work, and this VM's speed moves from day to day, and
within an hour: the same code's launch → watching went from a median
of 57 ms to one of 67 between two sets of starts (12 and 20) taken
twenty minutes apart that day.
Started right as another once exited, once watch waits for the kernel's
lock while it opens its perf events (After the command): 43.7 ms in the start-up table of 0ce6932's run, 45.7, 135.7, 40.9, 46.7, 63.8, 138.1, 46.1, 51.6, 48.7, 53.1, 49.5, 61.8, 64.4 and 59.8 ms in the thirteen before, now that it opens them while the programs
load; 195.7 ms in the run before those, which opened them after. The runs before those
timed such waits in their rows' start-ups (60.4 ms in the last, 47.9 ms
in the one before once left its perf events to the kernel); the trade
is deliberate: a ` + "`once run`" + ` or ` + "`once check`" + ` ends 1.2 s sooner, and a
loop of them spends 0.2-0.45 s a run against 1.4 s.

Before main, the process start: ` + "`GODEBUG=inittrace=1 once version`" + ` has
main's own initialisation begin 11-12 ms after the exec on this VM
(2026-12-06), the packages' initialisation functions about 5 ms of it
(pprof's ` + "`profile`" + ` compiling its regular expressions, tablewriter's width
tables, gonum plot's fonts, the OTLP exporters' gRPC and protobuf
registrations, none of which a start can skip: Go has no lazy package
initialisation), the rest the runtime's own start and the page faults of
a 41 MB binary. cilium/ebpf's ` + "`rlimit`" + ` package made every once command,
` + "`once version`" + ` too, zero its memlock limit and create a BPF map at
initialisation, to probe for what Linux 5.11 made the rule; once needs
5.17, and no longer imports it.

Where loading went, by a kernel profile (` + "`perf record -a -g`" + ` over four
starts at rest, 2026-12-06, the build before the global functions
below): ` + "`bpf_check`" + ` was about 65% of once's CPU in
its start-up, and its walk of the programs' states 45%. No part stood
out: looking up the kernel's ` + "`__safe_trusted`" + ` types by name at each
walk of a trusted pointer (a linear search of the kernel's BTF) 6%,
moving the instructions along as dead code is removed and helpers are
patched 8%, the JIT 3%, state comparisons and precision marks the rest.
Reading a name's words in one load each instead of eight byte loads (the
image table's ` + "`base_words`" + `, and the compare of a repeated miss) took
6% off the instructions ` + "`exit_open`" + ` has the verifier walk and 13% off
` + "`exit_lookup`" + `'s (10,370 and 11,971), too little to show in the start's
own noise, and about 14 ns off ` + "`exit_lookup`" + `'s mean in the stat loop
(kernel statistics under once watch, 8 runs each, alternating builds).

Loading is the kernel's verifier. Alone and one after the other
(` + "`verification time`" + ` of each program's log, best of 5, one loading
thread, 2026-12-06): ` + "`exit_open`" + ` 10.8 ms, ` + "`exit_lookup`" + ` 10.1,
` + "`uring_complete`" + ` 5.2, ` + "`handle_exec`" + ` 2.9, ` + "`exit_exec`" + ` 2.2,
` + "`enter_exec`" + ` 2.2, the 18 others 3.2 together: 37 ms of CPU, loaded
largest first on one thread per CPU (four at most); the build before took
50 ms in the same runs (15.1, 14.8, 7.7, 3.5, 3.5, 2.4 and 2.8). It was
106 ms, 111,000 instructions walked; it is 28,700 (29,500 in the build
these times are of, 43,300 before the global functions below). What the verifier had walked again and again:

- the names of pipes, sockets, namespaces and memfds (` + "`pseudo_name`" + `),
  prepended a byte at a time, each length a path of its own: 6,060
  instructions in each of six programs; one ` + "`bpf_snprintf`" + ` per kind now;
- the path walk, a ` + "`bpf_loop`" + ` callback verified again for each state an
  iteration left until they converged, and twice in a program building
  both kinds of path: its state is in the per-CPU scratch and its step a
  global function, checked once;
- which of a thread's recent opens an open repeats, one of five
  constants (nine since there are eight), after which the rest of the exit was walked once for each:
  read back through memory now, any byte to the verifier;
- the 32 words of a missed name kept for its run, unrolled: ` + "`bpf_loop`" + `
  now, which only a run's first miss pays. Their compare, which every
  repeated miss makes, stays unrolled: as a callback per word it cost a
  repeated miss 40 ns more;
- every function whose outcomes branch, inlined: the rest of its caller
  was walked once for each state it left. ` + "`count_status`" + `'s seven flags,
  ` + "`count`" + `'s lookup, the image table's slots (found, added, another
  file's), the tallies' outcomes, a missed name's compare, argv's loop and
  the exec's path, the wakeup decision, the send after the path walk:
  each a BPF global function now (` + "`bpf/once.bpf.c`" + ` says which and
  why), which the verifier checks once per program knowing only its
  arguments' types, and whose caller sees one number it knows nothing of.
  That took the instructions walked from 43,300 to 29,500, and one slot
  of the image table's sequences as a function of its own (` + "`seen_at`" + `:
  its four outcomes one call to the verifier) to 28,700. It costs a
  call each at run time: by the kernel's statistics, alternating builds,
  ` + "`exit_lookup`" + ` in the stat loop and ` + "`exit_open`" + ` over ` + "`cp -r`" + ` under once
  watch cost what they did, ` + "`exit_open`" + ` under ` + "`--events`" + ` in an open loop
  a few ns more.

What is left is mostly each exit's own body, the path walk every program
that names a file verifies (` + "`pseudo_name`" + ` and the walk's step, about 570
instructions in each of six programs), and, in the kernel's own time, the
moving of instructions as dead code is removed (about 6% of once's CPU
at start-up) and the search of its BTF by name at each load through the
group leader's trusted pointer, which the image table's task storage
needs trusted: several searches of all its 125,850 types at each such
load the verifier checks. There were seven such loads, three in
` + "`exit_lookup`" + `, one in each global function that used the table; one
global function (` + "`image_op`" + `) now does all that is done with the table,
one load per program, and the search went from 6-7% of the samples of
a start to about 3.5% (` + "`perf`" + `, four starts each, 2026-12-06). Each
program's ` + "`verification time`" + `, best of 7 starts on one thread,
alternating builds: ` + "`exit_lookup`" + ` 8.5 ms against 9.9, ` + "`exit_open`" + ` 9.5
against 10.3, ` + "`uring_complete`" + ` 5.1 against 4.8 (it now walks the
table's other uses too), all programs 34.9-35.3 ms against 35.1-36.7.

The verifier's edits weigh most on the largest programs. Each removal of
a run of dead code (code a load-time constant rules out: no stacks, one
ring, the filters, BTF casts or their fallback) and each patch (a map
lookup inlined, a helper fixed up) moves the whole program along, so
their cost is their number times the program's length. Loading
` + "`exit_open`" + ` alone 30 times under ` + "`perf`" + ` (once watch's options,
2026-12-06): of ` + "`bpf_check`" + `'s samples, walking the states 47%, removing
dead code 20% (about 48 runs of it, most under 20 instructions, and the
jumps left empty after them), patching 11%, the BTF search of its one
` + "`group_leader`" + ` load 10%, the JIT 7%; ` + "`exit_lookup`" + `'s, 58%, 13%, 10%,
11% and 8%. Fewer runs would take each load-time choice made once per
program (a function per choice, its unchosen twin left whole) rather
than at each place it is asked.

By 2026-12-07 the programs had grown back to 61,987 instructions walked
(the kernel's ` + "`verified_insns`" + ` of each loaded program, summed): ` + "`exit_open`" + `
17,141, ` + "`exit_lookup`" + ` 16,392, ` + "`uring_complete`" + ` 10,998. Counting in each
program's instruction-level log how often each instruction was walked
found three more places walked again and again (2026-12-08):

- a big image table's sequence of 32 slots, a plain loop the verifier
  follows slot by slot, in each of the three programs that look a file
  up: about three times per slot, for the two sides of the sequence's
  wrap back to the table's first slot (each reaching the slot with its
  own range of index) and for each value of the one-thread flag, made
  a bool. The table now has the 32 slots past its last sequence's start
  (64,256 bytes, under task storage's 64 KiB), so that a sequence runs
  on instead of wrapping, the flag goes through as its caller gave it,
  and the slots past the first group of 8, where most sequences end,
  are looked at by ` + "`bpf_loop`" + `;
- a repeated miss's compare, a plain loop ending at the name's length,
  whose count then indexed the cut last word: the verifier knows a
  range of the count at each step the loop may end at, and walked the
  rest of the function once for each. The cut word's index is made anew
  from the length;
- a thread's 8 recent kinds flushed into their tallies at its exit and
  exec, each flush inlined in the loop with its outcomes: a global
  function now, one call per kind.

Together 61,987 → 40,285 instructions: ` + "`exit_open`" + ` 9,978, ` + "`exit_lookup`" + `
9,229, ` + "`uring_complete`" + ` 5,528, ` + "`handle_exec`" + ` 4,191 (4,787),
` + "`handle_exit`" + ` 717 (2,027). Started at rest in turn with the build
before, 15 starts each, with all but the last of the three (42,191
instructions; ` + "`once watch -v`" + `, 2026-12-08): median 52.9 → 47.1 ms from
launch to watching, the programs' load 35.7 → 31.2 ms. Loading
is still about 60 ms of CPU on the two loading threads, ` + "`exit_open`" + `
the longest at 15-18 ms. By the kernel's statistics, builds in turn,
none costs more at run time beyond the noise of such a comparison: over
` + "`cp -r`" + ` of 3,000 files under once watch (16 runs of each of four builds
in turn), ` + "`exit_open`" + ` 268.5 ns before, 261 with the sequence that
does not wrap, 273 with the rest of it by ` + "`bpf_loop`" + `, 283 with the
flush at the end (whose ` + "`exit_open`" + ` is the one before's, instruction
for instruction: that 10 ns is the noise), ` + "`exit_lookup`" + ` 135, 126, 134.5
and 133.5; in the stat loop under once run (8 runs each, in turn)
` + "`exit_lookup`" + ` 148.5 ns before and after, under once watch 135 and 137;
in W1's open loop under ` + "`--events`" + ` ` + "`exit_open`" + ` 342 and 338.

once reads ` + "`/proc/self/mountinfo`" + ` once at start-up (the memory limit and
container naming share the read); the Go runtime (its CPU quota) and
cilium/ebpf (its BPF token lookup) read it once each.

## After the command: detaching

Taking once's programs off the kernel costs two kinds of wait. Closing
a syscall tracepoint's BPF link takes the program off and then waits
until no run of it is left (an RCU Tasks Trace grace period); made in
parallel, the closes of a group share one wait, about 40-55 ms here.
Closing the tracepoint's last perf event makes the kernel unregister its
probe and wait for its grace periods before freeing its buffers, one
tracepoint at a time under one lock: about 40 ms each, for each of the
31 syscall tracepoints, whatever the number of threads closing them
(` + "`strace -T -f`" + ` of ` + "`once run -- true`" + `, 2026-12-05).

once attaches each syscall program through a perf event it opens itself,
so the two close apart. At the command's end it closes the exit and
lifecycle programs' links, then the entry programs' (an exit whose entry
is gone would count a missed entry), waits one RCU grace period
(` + "`membarrier`" + `) for the raw tracepoints' programs, whose links do not
wait, then reads the rest of the ring and writes the report: about
0.15 s after the command's exit for ` + "`once run -- true`" + `.

The perf events, disabled, are not closed by once: it puts them in a
perf event array, closes its own descriptors of them, then the array's.
The kernel drops an array's references to the events put through a
descriptor when that descriptor is closed, from an RCU callback, and a
file whose last reference goes there is closed by a kernel worker; so
the second wait, about 1.2 s, is the kernel's, after once has exited.
While once closed them itself, once exited only when the kernel was
done with them, since a process's exit closes what it still holds
before its parent sees it exit: ` + "`once run -- true`" + ` took 1.37-1.43 s,
and 0.18-0.22 s since (6 runs each, alternating, 2026-12-06). A once
started meanwhile that attaches to a tracepoint not yet let go of makes
it no longer the last user, and that tracepoint's wait is gone; but its
perf events' opens wait for the lock the kernel's worker holds through
each wait it does make: ` + "`once watch`" + ` started right as another once
exited spent 70-190 ms attaching (6 starts back to back), against 2-3
ms at rest; one goroutine per hook instead of two did not shorten it.
So once now opens its syscall hooks' perf events as loading begins, on
two threads beside the verifier, and links the programs through them
once they are loaded (` + "`openHookEvents`" + `): the wait for the lock overlaps
the loading, and each tracepoint it opens before the kernel's worker
gets there is no longer let go of, its grace periods skipped for every
tracer after. ` + "`once watch -v`" + ` started right after a ` + "`once run -- true`" + `
exited: 55-118 ms from main in five of six starts (one 366 ms), against
156-339 ms before (alternating builds, six each, 2026-12-06); at rest
61-71 ms against 59-92, the same within the noise. The events are
opened disabled: a syscall tracepoint runs the programs attached through
its perf events whether they are enabled or not, and an enabled one with
no program yet would have the tracepoint's probe build a sample at each
call.
A loop of ` + "`once run`" + ` or ` + "`once check`" + ` still takes a fraction of what each
run's exit waited before. W4 reports both times: the report's, which
its target is on, and once's exit.

Until the kernel has let go of the last of them, every syscall on the
machine still takes the tracing path (the syscall tracepoints' perf
probe stays registered while any of their events is), whichever process
makes it. So the bench waits, after a tracer exits, until a perf event
opened and closed on a tracepoint nothing hits takes its tenth of a
millisecond again, for 150 ms in a row (` + "`bench/rest.go`" + `; the test holds
that it waits out a release): no untraced run is timed while the once
before it is being let go of, and no tracer's start-up waits for it.
The bench's earlier runs, since the exit hand-over, timed untraced runs
right after a once run had exited, and started some tracers in the
middle of a release.

## W1 and W5 against the floor: where a repeat's time goes

The W1 and W5 targets allow once run 0.5 × the floor's added time above
the floor (1.5 ×), once watch 1 × (2 ×), a process outside the tree
none. In 7b81bdb's run the floor added +126 ns per W1 open and +112 per
stat, so once run had about 63 ns per W1 open and 56 per stat for its
programs' own work; once watch 126 and 112. In 5e195fd's run, +161
and +90: 80 and 45; in 0ce6932's run, +115 and +110: 57 and 55. By hand on 2026-12-07,
under once watch with the kernel's statistics over 5 runs of each loop
(each program's figure includes the statistics' own clock reads, about
35 ns a run, as the floor's empty programs show), builds that return at
one point or another put once's time above the floor's here:

| per call | W1 open (repeats of one file) | W5 stat (a hit and a miss in turn) |
|---|--:|--:|
| entry: the thread's slot (task storage) | 10 ns | 10 ns |
| entry: the prediction and the record | 11 ns | 10 ns |
| exit: the thread's slot, the call taken out | 13 ns | 17 ns |
| exit: the file (fd table, inode) / the stat buffer or scratch | 22 ns | 23 ns |
| exit: the count (tally_repeat) / the miss run's compare (name read again, place) | 30 ns | 45 ns |
| in all, above the floor's | about 86 ns | about 105 ns |

The wall clock agrees: in 7b81bdb's run once run added +231 ns per W1
open against the floor's +126, +105 more, and +203 per stat against
+112, +91 more; in 5e195fd's +221 against +161, +60 more (met),
and +177 against +90, +87 more; in 0ce6932's run +214 against +115,
+99 more, and +216 against +110, +106 more. No part
can go without losing what a finding needs: the slot holds the call
between entry and exit; the file's identity and the whole name are what
make a repeat exact; the clock, read for one predicted repeat in 8 at
each end (about 30 ns a read), times the waste. Reading it for one in
32 instead measured 4 ns less per W1 entry and 2 ns per exit; with
that, counting 64 repeats in the slot before adding them to the map
instead of 16, 15 ns less per W1 open in all: not the 35-43 ns by which
W5 and W1 under once run missed in these two runs, and at a cost to the timing sample and to
how far a live view lags, so not made. So once run
meets its 1.5 × on W1 and W5 only where the floor's wall-clock figure
comes out high, once watch its 2 × on W5 within a few ns (it missed by
6 and 12 in the first two runs against this floor, by 25 in the third), and a
process outside the tree, whose programs each look up one bit before
they return (the kernel's statistics: 12 ns per W1 open above the
floor's), its 1 × by the wall clock's noise.

## W2: a first open under once watch

Every open ` + "`cp -r`" + ` makes is the first of its file in its image, and
under once watch each is looked up and added in the image's table. By
the kernel's statistics (` + "`once watch --comm cp`" + ` over ` + "`cp -r`" + ` of 3,000
files, the other processes' share subtracted, 2026-12-05, on a VM busy
with other work): ` + "`exit_open`" + ` about 600 ns per such open, of which
about 195 without the table; about 520 since the small table's group of
eight is scanned in a plain loop rather than a ` + "`bpf_loop`" + ` (a call per
slot). The big table, which a process past 256 files uses, costs about
220 ns of the rest. Since 2026-12-07 its slots are scanned in a plain
loop too, and a slot another file holds is passed over without calling
the function that claims an empty one: all of once's programs took
620 ns per cp open against 714 before (the kernel's statistics over
five ` + "`cp -r`" + ` under ` + "`once watch --comm cp`" + `, medians of six runs of each
build in turn; 642 against 706 in five more). The verifier walks the
loop slot by slot, which the programs' load at start-up did not show
above its own noise (medians of five starts, ` + "`once watch -v`" + `: 22.8
and 23.2 ms against 24.3 and 22.2).

## W2 under once run and --stacks

Under once run every open is sent: ` + "`exit_open`" + ` reads the name, walks the
file's path a component at a time and sends both, about 860-910 ns per
open of ` + "`cp -r`" + ` (kernel statistics, 3,000 files on tmpfs, 2026-12-05,
after the walk took two components per call; 945-982 before). With
` + "`--stacks`" + ` it costs about 520 ns more: the image's table, which says
whether an open is its file's first (whose snapshot is kept) or a
repeat, about 190; the kept slot and the image's reference to it about
110; the snapshot itself about 220. The window's size hardly matters:
` + "`--stack-size 512`" + ` and ` + "`16384`" + ` cost what 8192 does. Since cp -r under once run
alone is ×1.36-1.38 in these runs, the ×1.35 target for ` + "`--stacks`" + ` would
take once run's own cost per sent open down, not only the snapshot's.

That is what keeping the first call does (2026-12-06): with ` + "`--stacks`" + `
a first open is not sent at all, its call kept beside its snapshot and
sent only after a repeat (docs/hooks.md, Kept snapshots). By the
kernel's statistics over five ` + "`cp -r`" + ` of the tree, ` + "`exit_open`" + ` against
` + "`enter_openat`" + ` went from 9.2-9.8 times to 6.6-7.3 (once run alone:
5.0-6.1), alternating builds. A first step kept the call but left cp's
opens past the image's table untracked (the copy makes about 6,300
files, one big table holds about 5,000), and those went with their
snapshots: 7.6-8.1. A second big table holds them. Three rounds of
W2 by the bench then put once run ` + "`--stacks`" + ` at ×1.23, once run at ×1.23
and the floor at ×1.34 (unpaired ×1.25, ×1.21, ×1.13: the floor's own
figure moved that much within the run). The committed full runs of 2026-12-06, newest first (` + "`--stacks`" + `, once
run, the floor; once watch in parentheses), each named by the commit
that holds its results: ba5616a ×1.41, ×1.25, ×1.14 (×1.28), the
first with the bench's warm-ups (unpaired ×1.45, ×1.32, ×1.15,
×1.26); 923a02d ×0.96, ×0.82, ×1.15 (×1.21),
pairs that the targets' paragraph says are no result (unpaired ×1.30,
×1.21, ×1.17, ×1.20); 5185798 ×1.50, ×1.30, ×1.00 (×1.28),
all but the last misses, on a VM slower and noisier than any before;
e77e48a ×1.37 (a miss), ×1.26, ×1.23
(×1.32); 3853bd9 ×1.32, ×1.35, ×1.12 (×1.24); 765e2a8 ×1.35, ×1.22,
×1.13 (×1.20); 5ae740f ×1.40, ×1.27, ×1.27 (×1.25), on a VM on which
the floor's empty programs added +657 ns per W1 open; 57fdad5 ×1.35,
×1.27, ×1.23 (×1.19); 2ec218b ×1.35, ×1.30, ×1.16 (×1.12); c2f5973
×1.43, ×1.31, ×1.19 (×1.28), on the busier VM the start-up paragraph
describes (once watch's programs 1,516 ns per W2 open, the floor's
empty ones 317); 7acb3b4 ×1.47, ×1.36, ×1.20 (×1.25); 0f21a7d ×1.28,
×1.35, ×1.07 (×1.20); cc1bda5 ×1.34, ×1.26, ×1.14 (×1.23), the first
whose untraced runs waited for the kernel to let go of the once run
before them; d85c053 ×1.24, ×1.21, ×1.12 (×1.22). In 3853bd9's run
` + "`--stacks`" + `, which does all once run does and more, came out below
once run: its rounds ×1.32, ×1.29, ×1.38, ×1.45 and ×1.18 against once
run's ×1.27, ×1.27, ×1.44, ×1.57 and ×1.35. At this size W2's ratios
move by more than the targets' margins from run to run.

Keeping first calls without stacks too was tried and left out
(2026-12-06): once run would then send, as with ` + "`--stacks`" + `, only what
repeats, its first opens counted and their calls kept in the kernel. By
the kernel's statistics over one ` + "`cp -r`" + ` of the tree, three runs of
each build in turn, ` + "`exit_open`" + ` took 5.3-6.0 times ` + "`enter_openat`" + ` against
4.8-6.6 sending every open, and all of once's programs 10.4-11.7 times
` + "`enter_openat`" + `'s total against 9.7-11.6: the image's table and the kept
call cost the copy about what the send and the path walk they replace
do. once's reader got a tenth of the events (2,875 against 30,545 over
five copies), but the targets hold the traced program's cost, so once
run sends its first opens still.

Reading the stack word by word in the kernel would not have been
cheaper than copying it. A build whose keep made eight
` + "`bpf_probe_read_user`" + ` calls of 8 bytes each instead of the window's one
read cost ` + "`exit_open`" + ` as much as the copy (10.1-11.1 times
` + "`enter_openat`" + `, against 9.9-10.4), and one that read nothing 7.7-7.9:
about 50 ns a call, so an unwinder in the kernel that reads the
return addresses one at a time (about ten frames in cp) saves nothing
over the window.

Where ` + "`--stacks`" + `' cost per first open goes now, under once watch (its
first opens counted, not sent; kernel statistics over five ` + "`cp -r`" + ` of
the tree, 2026-12-07): ` + "`exit_open`" + ` 243-259 ns a call without ` + "`--stacks`" + `,
637-756 with it. Builds with parts taken out: without the window's read
(and the stack's top) 520-571; without the kept call too 365-399;
keeping nothing 300-309. So about 150 ns for the window, 150 for the
kept call (the name read again from the caller, the event copied), 65-100
for the kept slot and the image's reference to it, and 50 for the rest
of the path. The window's size again hardly matters (` + "`--stack-size 1024`" + `:
696), the window there being 2-4 KiB (SP to the initial stack's top, at
6,007 of cp's 6,039 opens). No one part is what stands between W2 and
its ×1.35. Since 1e04abe the kept call takes the name from the scratch
where the probe-end check has just read it (nearly always: every
image's loader leaves a failed name pending), not from the caller
again: once's programs 1,117 ns per cp open against 1,158 under
` + "`once watch --comm cp --stacks`" + ` (medians of five runs of each build in
turn, 2026-12-07).

Attaching elsewhere does not take the floor down. Empty programs on the
raw ` + "`sys_enter`" + ` and ` + "`sys_exit`" + ` tracepoints, which run for every
syscall and would pick the hooked ones by number, against empty
programs on ` + "`syscalls:sys_enter_openat`" + ` and ` + "`sys_exit_openat`" + ` (a
cilium/ebpf loader, 2026-12-05, two runs of three: 200,000 ` + "`openat`" + ` of
one tmpfs file, 1,000,000 one-byte reads of ` + "`/dev/zero`" + `): an openat cost
about the same either way (+140 to +200 ns in the steadier run), and
every other syscall paid +60 to +80 ns on the raw tracepoints against
+20 to +40 on the syscall ones. On a faster VM, where cp -r ran 28 ms
untraced, the kernel's statistics put ` + "`exit_open`" + ` at 500-520 ns per
open, ` + "`exit_lookup`" + ` at 210-220 ns and each entry at 115-125 ns: cp
makes two opens and three ` + "`newfstatat`" + ` per file (two of them
` + "`fstat`" + ` through ` + "`AT_EMPTY_PATH`" + `), about 2.2 µs of once's programs per
file against the floor's 0.5.

No one part of a sent open is the 0.84 µs per file that W2 would need
cut. A CPU profile (perf at 25 kHz on every CPU, 2026-12-06) of once run
over 300 processes, each opening 1,000 distinct files of one tmpfs
directory, split the samples in once's programs and the kernel functions
they call as: the ring buffer (the output, its reserve, and the fill
level that batched wakeups query) about 18%; the clock, read at the entry
and at the exit, about 16%; the path walk's own code about 21%, and the
kernel reads made through ` + "`bpf_probe_read_kernel`" + ` another 9%;
` + "`exit_open`" + `'s and ` + "`send_open`" + `'s own code about 24%; the
tracepoint's call into BPF 5%; the entry 4%; the task storage lookups 3%
(reading the name from the process's memory shares its kernel function
with the open's own copy of it, so it is left out).
Builds with one part left out, run alternately with main under the
kernel's statistics (each open's ` + "`exit_open`" + ` against its
` + "`enter_openat`" + `, which is the same in both, since the VM's speed
drifts between runs): the walk is about 170 ns of an open's 500 in cp -r,
whose paths take eight steps, and each component more about 15 ns (a
directory ten components deeper costs about 150 ns more per open); of
the walk, reading the names with a helper call is about 45 ns; one clock
read is about 30 ns (an entry without it, 67 ns against 99). Walking four
components per call instead of two, and reading the file's mode and the
cwd with loads instead of helper calls, made no difference these runs
could see. (The mode is read with a load since 4dd3942, for the event
stream, where the kernel's statistics did see it: below.)

Tried on 2026-12-07 and left out, each against main in alternating runs:
one exit program for opens and lookups (the bodies global functions
behind one dispatch on the call the entry recorded, so that cp's
alternating opens and stats share one copy of the table's and the
send's code) cost 50-60 ns more per cp open by the kernel's statistics,
and cp -r's wall time under once watch was the same within its noise;
build_path's steps as a plain loop rather than ` + "`bpf_loop`" + `'s callbacks
made once run's ` + "`exit_open`" + ` no cheaper over cp -r; the process's id kept
in the thread's slot at the exit, saving a helper call in each counted
repeat, showed nothing in the W5 stat loop. Builds without the image's
table, without its big tables, without the probe-end check, or without
the entry's clock read each moved cp -r under once watch by less than
the runs' own spread (cp's CPU time from ` + "`getrusage`" + `, 30 copies a build,
two rounds: about 1.5 ms between rounds of one build): no one part is
W2's cost. And untraced cp -r, run by a harness pinned to one vCPU, took
31 ms against 28 unpinned, where once run's copies took 37-39 and 36-37:
part of W2's ratio is what an untraced copy gains from the idle second
vCPU, which a traced one does not.

## The collector's CPU is the watched program's

On this VM a busy process on one vCPU slows a syscall loop on the other:
W1's open+close loop pinned to one vCPU took 754-823 ns per call alone,
1,041-1,254 with a shell's empty ` + "`while`" + ` loop pinned to the other, 826-1,081
with ` + "`dd`" + ` copying memory there (3 runs each, 2026-12-06). The two vCPUs
share a core, or its caches, on the host. So the collector's CPU per
event is paid by the program it watches, wherever the collector runs, and
W1 under ` + "`--events`" + ` paid it most: the collector spent 1.2-1.6 µs per
event (` + "`once watch --events --format json -o FILE`" + ` over 800,000 W1 opens,
its CPU time from ` + "`/proc`" + `), most of a vCPU while W1 ran, and W1's
opens took 2.2-2.5 µs in 4 of the 5 rounds of the full run before this
change, 1.5 in the fifth (untraced 0.8-0.9). By its Go profile: the JSON line 0.5 µs, the engine
0.35 (a string made at each repeat for the row's worst waste, and each
open's directories walked against the lookup chains pending), the write
0.2.

Now a line copies its task part (pid to start_ns) and its file part
(fname to the end) from the line before when what they are made of is
the same, and formats the date once per second; the worst waste's brief
is made with its row; and an open none of whose path's components is the
name of a pending chain skips the chains (a 64-bit mask of those names;
every image's loader leaves ` + "`ld.so.preload`" + ` pending). The collector's
CPU over the same 800,000 events: 44-45 ticks against 92-129 (0.55 µs
per event; the two builds alternated, 2026-12-06). In the two full runs
since, W1 under ` + "`--events`" + ` added +596 ns against its limit of 2 × the
floor's (+688), then +788 against +1.31 µs on a slower VM; then, in the two runs before e77e48a's, +640 against +492 and
+715 against +388, misses, the floor's empty programs adding their
least yet (+246 and +194; +344 and +657 in the two runs before those);
in e77e48a's run +601 against +780, met, the floor adding +390, in
5185798's +866 against +1.07 µs, met, the floor adding +533, in
923a02d's +475 against +362, a miss, on the fastest VM yet, the floor
adding +181 (once's programs 348 ns per open, ` + "`exit_open`" + ` 273 of it,
the floor's 70, aggregated once watch's 144), in ba5616a's +432
against +272, a miss, the floor adding +136 (once's programs 372 ns per
open, ` + "`exit_open`" + ` 294 of it, the floor's 62, aggregated once watch's 136);
in 7b81bdb's +474 against +252 and in 5e195fd's +478 against +321,
misses against the floor of programs that return at once (adding +126
and +161); in 0ce6932's run +438 against +231, a miss, the floor adding
+115 (once's programs 342 ns per open, ` + "`exit_open`" + ` 263 of it, the
floor's 71, aggregated once watch's 145). By the
kernel's statistics in the three runs before e77e48a's once's programs took 639, 571
and 480 ns per W1 open under ` + "`--events`" + `
(` + "`exit_open`" + ` 521, 366 and 383 of it) against the floor's 87, 86 and 88 and
aggregated once watch's 213, 184 and 188 (703, 563, 84 and 260 in 5185798's, on its slower VM): the stream's cost is mostly the
kernel's send of every open, not the collector. A perf profile of W1's CPU under
` + "`--events`" + ` (2026-12-06) has the path walk's step (` + "`repeat_step`" + `) as
its largest BPF part, then ` + "`exit_open`" + `'s own code, the clock reads at entry and exit, the name's copy and the ring. Builds
with one part taken out at a time (2026-12-06, ` + "`exit_open`" + ` by the
kernel's statistics over W1 under ` + "`--events`" + `, five alternations,
medians) weigh them: 408 ns per open whole; 302 without the path walk;
347 without the repeat's send to the ring; 373 without the name's
compare. What remains, about 200 ns, is what aggregated once watch's
` + "`exit_open`" + ` does as well (the thread's slot, the fd table, the file's
identity: 112 ns there) and the exit's clock read, the record's fields
and the repeat's compare of them. The walk is loads, a component at a
time: a file eight directories deeper cost 100-150 ns more, and the walk
as a bounded loop instead of ` + "`bpf_loop`" + `'s callbacks cost about the
same then (372 ns against 383); measured again on 2026-12-07 it was 250
against 264, lower in each of four alternations, and is the loop now
(f004cc9), with the file's mode read with a load (241, 4dd3942). Each repeat is checked so because a rename
changes a dentry's name in place and a freed dentry's memory can hold
another file's: only an exact answer to "is this the same path" lets a
repeat go without its strings.

Under once run over
100 copies of W2's tree, its CPU profile: 0.61-0.73 s against 0.77-0.86
(start-up included). Of what is left, the write's copy of 610 bytes per
line into the page cache is a third, the garbage collector a fifth of
once run's. The text table (` + "`--events`" + ` without ` + "`--format json`" + `) formatted
its clock in the local zone at each line, a quarter of its collector's
CPU by perf; it formats the second once now: 54-64 clock ticks over the
same events against 79-82, alternated.

## What keeps it cheap

- **once watch sends a file's first open only when a finding may need
  it.** Each process image has a table of the files it opened, in its
  group leader's task storage (deleted at exec); a first open is looked
  up, added and counted there, and only repeats, failures and an open
  that may end a probe chain (its basename failed before in the image)
  reach user space. The counts stay exact: each thread reports what its
  image counted.
- **Repeated opens are counted in the kernel.** Each thread remembers its
  last eight opens and lookups; past the first N of one kind (image, file, syscall,
  flags) a repeat is only counted, and the counts are read back as exact
  totals before the exit or exec that ends the image. A counted repeat is
  timed in a sample of one in 8.
- **With --events, an open that repeats the thread's last one is a
  48-byte record.** The kernel reads the name again into a small buffer
  and walks the path with plain loads, comparing each component's hash,
  length and bytes with the thread's last open sent in full; it compares
  the task's fields, the flags and the file too. When all match (and the
  thread is on the same CPU, so the same ring), it sends only the call,
  times, dirfd and result, naming that open by its exit time, and the
  collector gives it the rest of that open. Only names up to 63 bytes and
  paths of up to 16 components of up to 32 bytes are compared; any other
  open goes in full. A repeat whose open the collector did not decode is
  counted as a decode error, never printed with another open's fields.
  A reader that stops for a while loses nothing until the ring is full:
  an 8 MiB ring holds about 150,000 such repeats, against 45,000 full
  records. (An open's mode is kept only with O_CREAT or O_TMPFILE, the
  only calls that read it; else it is whatever its register held.)
- **The comm filter is asked once per comm**: a thread's slot keeps the
  verdict with the comms it was given for, its own and its process's
  (its group leader's), compared as two words each at every entry.
- **An exec's strings need no allocation**, and an argv that faults is
  read once: the entry sends filename and argv in a record of their own
  from per-CPU scratch, and the collector joins it to the exit's.
- **A process outside once run's tree pays one load per program**: one bit
  in a bitmap indexed by pid.
- **The reader is woken only when a sixteenth of the ring waits**, and
  polls on a short deadline otherwise: no interrupt per event.
- **The reader moves its positions in batches**: every program that
  reserves a record reads the ring's consumer position, so a reader that
  wrote it at each record it took (as cilium/ebpf's ringbuf.Reader does)
  cost the producer a cache miss per record. once's reader writes it
  after each 64 KiB (a 32nd of a smaller ring) and whenever it finds the
  ring empty, before it waits, and reads the producer position again
  only when the records it knew of are taken. Under ` + "`--events`" + ` over W1,
  alternated with the reader before it under the kernel's statistics
  (2026-12-06), ` + "`exit_open`" + ` ran 3.2-3.9 times the entry's time against
  3.8-4.5.
- **once's threads do not preempt the programs they watch**: once the
  command runs (under once run and check) or the programs are attached
  (once watch), once's threads move to SCHED_BATCH, which the kernel
  never lets preempt a normal task when it wakes, at the same share of
  CPU. Woken by its poll timer, a ring's wakeup or the Go runtime's
  garbage collector, the collector used to take the CPU ` + "`cp -r`" + ` was on:
  over 9 copies of W2 under once run, ` + "`cp`" + ` was switched out against its
  will 37-244 times before, 28-43 after (untraced 20-32; 2026-12-06).
  On the VM that day the wall clock was too noisy to show what that
  saves.
- **Start-up does not decode the kernel's BTF**: what the programs need of
  it is resolved once per kernel build and kept in the link cache.
- **User space keeps what findings need, bounded in bytes**: an image's
  per-file state lives while the image does; detail past the byte budgets
  is counted, not kept (see the README's limits).

` + "`ONCE_CPUPROFILE=FILE`" + ` writes a Go CPU profile of any once command.

`

// writePerfDoc writes the performance page for r.
func writePerfDoc(r *results, dir string) error {
	return os.WriteFile(filepath.Join(dir, "performance.md"), []byte(perfDoc(r)), 0o644)
}

func perfDoc(r *results) string {
	return perfDocHead + perfDocRings + "## The last full run\n\n" + demote(r.markdown())
}

// demote makes the results' headings one level deeper, under the page's.
func demote(md string) string {
	out := []byte{}
	atLineStart := true
	for i := 0; i < len(md); i++ {
		if atLineStart && md[i] == '#' {
			out = append(out, '#')
		}
		out = append(out, md[i])
		atLineStart = md[i] == '\n'
	}
	return string(out)
}
