// Package metrics exports once's counters in the Prometheus text exposition
// format for `once watch --metrics ADDR`.
//
// # Dependency
//
// The package uses github.com/prometheus/client_golang. The Prometheus text
// exposition format, registry and HTTP handler are what operators' scrapers
// expect, and client_golang is the reference implementation; writing it
// ourselves would be error-prone (escaping, content negotiation, compression,
// HELP/TYPE metadata, OpenMetrics, consistency of concurrent scrapes).
//
// # Metrics
//
// The names and labels below are a contract; dashboards and alerts depend on
// them. Every Exporter uses its own registry, never the global one.
//
//	once_opens_total{W,result}              counter  open-family syscalls and io_uring opens; result is "ok" or "failed"
//	once_lookups_total{W,result}            counter  lookups (stat, access and kin naming a file, io_uring statx); result as above
//	once_execs_total{W,result}              counter  execve/execveat calls; result is "ok" or "failed"; a failed
//	                                                    one under its caller's comm, a successful one under the comm
//	                                                    it gives (as execsnoop shows it; once run counts it in the
//	                                                    image it replaced)
//	once_duplicate_opens_total{W}           counter  extra opens of a file the same process image already opened
//	once_exec_probes_failed_total{W}        counter  failed exec attempts during PATH searches
//	once_exec_probe_wasted_seconds_total{W} counter  time spent in those failed attempts, in seconds
//	once_findings_total{W,kind}             counter  findings, by kind (the registered kinds of report/SCHEMA.md)
//	once_avoidable_calls_total{W,kind}      counter  the findings' avoidable calls (waste_by_kind's avoidable)
//	once_wasted_seconds_total{W,kind}       counter  what those calls cost (the findings' wasted_ns), in seconds
//	once_events_lost_total{kind}               counter  events lost, by kind (see below)
//	once_ring_dropped_total{ring}              counter  with more than one ring (--rings): records not reserved, by ring;
//	                                                    they add up to once_events_lost_total{kind="ringbuf_full"}
//	once_events_processed_total                counter  events read from the ring buffer
//	once_processes                             gauge    size of the process table
//	once_processes_evicted_total               counter  processes evicted from the table under its cap
//	once_opens_untimed_total                   counter  opens seen without their latency (counted; their time is missing)
//	once_compat_images_total                   counter  32-bit program images started, whose syscalls no syscall tracepoint sees
//	once_files_capped_total                    counter  opens of files past what once tells apart per image (their repeats are not found)
//	once_detail_dropped_total                  counter  pieces of detail not kept because of the byte budgets (counts stay exact)
//	once_comm_labels_folded_total              counter  distinct comm values counted under comm="other" (the label cap)
//	once_workload_labels_folded_total          counter  distinct (namespace, pod, container) values counted under "other" (the cap)
//	once_label_sets_folded_total               counter  distinct label sets of an admitted comm and workload counted under
//	                                                    "other" for all four labels (the cap on their pairings)
//	once_output_records_dropped_total          counter  records not written to the -o file (full, a quota, an I/O error): watch goes on
//	once_output_bytes_dropped_total            counter  their bytes
//	once_<key>_total                           counter  every other counter of trace.Shown, by its JSON key
//	                                                    (once_events_sent_total, once_stacks_dropped_total, ...)
//
// Every counter the reports show (trace.Shown) is exported: the lost ones
// as once_events_lost_total{kind}, events_received, evicted and
// output_dropped under the names above (kept: they are older than the
// rule), reader_stalls from SetProgress, and each of the rest as
// once_<its JSON key>_total, one unlabelled series each.
//
// With SetProgress (once watch --metrics), the reader's heartbeat, read at
// each scrape, so that it moves while the reader is stuck:
//
//	once_reader_last_progress_timestamp_seconds gauge   when the drain loop last completed a poll (events or none)
//	once_reader_progress_age_seconds            gauge   seconds since then
//	once_reader_events_read_total               counter events read as of that poll
//	once_reader_stalls_total                    counter times the loop was seen not to poll within --stall-timeout
//
// Serve answers /healthz from Health: 200 while the reader polls, 503 and
// a one-line reason once it has not for --stall-timeout.
//
// W is comm, namespace, pod, container: the process's comm (the name of
// its image, trace.Process.Comm, as its findings carry it: never a
// thread's own name, nor one the process took after its exec) and, for a
// process in a container, the pod's namespace and name and the container's
// name (for a container without a pod, its runtime's name or the first 12
// digits of its ID). Outside containers the three are empty, which
// Prometheus reads as absent.
//
// once watch (without --events) has the kernel count a file's first open
// in an image instead of sending it; each thread reports that count with
// its next event, its exec or its exit. Those opens reach
// once_opens_total{result="ok"} then, under the comm of the image that
// made them: a thread that only opens new files lags by at most 255.
//
// once_events_lost_total has one series per kind, all present from the start
// (at 0): "ringbuf_full", "enter_map_full", "missed_enter", "decode_error",
// "tracked_full", "tally_evicted" and "counts_lost". Other kinds passed to SetLoss are exported too if they
// are lower-case identifiers ([a-z][a-z0-9_]*, at most 32 bytes), and under
// kind="invalid" otherwise; kinds are chosen by once's code, never by traced
// processes.
//
// The standard Go runtime (go_*) and process (process_*, for example
// process_resident_memory_bytes) collectors are registered as well.
//
// # Cumulative totals
//
// SetCounters, SetLoss, SetProcessed, SetEvicted, SetOpensUntimed and
// SetCompatImages take cumulative totals read from the kernel or the collector. The
// exported counters never go backwards: each call adds the increase since
// the previous total. A total smaller than the previous one is treated as a
// reset of the source (for example a reloaded BPF program whose counters
// restarted from zero), so the whole new total is added. Counters are
// float64 in Prometheus and exact up to 2^53.
//
// # The comm label
//
// comm values come from the traced processes (prctl(PR_SET_NAME) sets any
// bytes), so they are attacker-controlled. Prometheus label values must be
// valid UTF-8, and a label's values must stay few. Each comm is turned into a
// label value as follows:
//
//  1. The comm is cut at its first NUL byte and to at most 15 bytes
//     (TASK_COMM_LEN-1, what the kernel keeps anyway).
//  2. Each byte that is not valid UTF-8, each control character (bytes
//     0x00-0x1f and 0x7f, and non-printable runes such as U+0085 or U+202E, by
//     their UTF-8 bytes) and each backslash is written as the four characters
//     \xNN (lower-case hex). Because a backslash is always escaped, a label
//     value is unambiguous: "\x5c" in a label always stands for one
//     backslash byte, and any other \xNN for the byte 0xNN.
//  3. The result is cut to at most 16 bytes, never inside an escape or a
//     UTF-8 sequence. Only comms with escapes can lose bytes here, so two
//     such comms that differ only in their tail share a label.
//  4. "other" names the overflow bucket (below) and an empty value would
//     look like a missing label, so values matching ^(other)?_*$ get one
//     more "_": a process named "other" is counted under "other_", one named
//     "other_" under "other__", an empty comm under "_", one named "_" under
//     "__". This is one-to-one, and never yields "other" or "".
//
// The first maxComms distinct label values (see New) get their own series;
// events of every later comm are counted under comm="other". A comm admitted
// once keeps its series for the life of the Exporter. All seven per-comm
// series of an admitted comm are created at once, at 0.
//
// # The workload labels
//
// Namespace, pod and container names come from the container runtime's
// state and the kubelet's, which the pods' owners choose. They are escaped
// as comm is, cut to 128 bytes, and an empty value stays empty (no
// container). The first maxComms distinct (namespace, pod, container)
// triples get their own series, later ones are counted with all three set
// to "other"; and at most 4*maxComms (comm, workload) pairings get series,
// later pairings under "other" for all four labels. Folding never loses a
// count, it only merges series.
//
// Each fold is counted: once_comm_labels_folded_total,
// once_workload_labels_folded_total and once_label_sets_folded_total
// count the distinct values folded, each once however many events it
// makes. They remember the first 4096 of each exactly (by a 64-bit hash);
// past them a 32 KiB bitmap estimates the rest (linear counting: within
// about 1% up to a few hundred thousand, and never counting a value's
// events as more values).
//
// # Listening address
//
// Serve and NormalizeAddr bind loopback unless asked otherwise: a bare port
// "9469" means "127.0.0.1:9469"; "host:port" is used as given, with host an
// IP literal (IPv6 in brackets) or a host name such as localhost; an empty
// host (":9469"), which would mean all interfaces, is refused unless allowAll
// is set. Writing an unspecified address such as "0.0.0.0:9469" or
// "[::]:9469" explicitly counts as asking for all interfaces and is allowed.
// Ports are decimal, 0 to 65535; port 0 picks a free port, which Serve
// returns.
package metrics
