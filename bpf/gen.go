// Package bpf holds once's BPF programs and the Go bindings bpf2go generates
// for them. It exposes the loadable objects and the event types, nothing
// else: loading, attaching and decoding live in the collector.
package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type event_header -type task_info -type open_event -type open_repeat_event -type exec_event -type proc_event -type event_kind -type syscall_kind -type counter -type track_kind -type open_key -type open_tally -type uring_submit_event -type uring_complete_event -type stack_tail -type event_status -type stack_flags -type stack_bounds -type miss_errno -type file_type -type probe_hold -type open_xstatus -type generated_fs Once once.bpf.c
