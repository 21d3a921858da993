//go:build ignore

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * once: every open and exec of the traced processes, with the file's
 * identity and absolute path resolved in the kernel.
 *
 * Syscall entries store only what the exit needs (pointers and flags) in a
 * per-thread map; the exit reads the strings, resolves the file and sends one
 * complete event. Strings are read at exit for opens because the kernel has
 * just copied the name (getname), so the page is resident: a name whose page
 * was not yet faulted in at entry is still read. Execs are read at entry
 * (a successful exec replaces the address space before the exit) and, where
 * that read faulted, again from the kernel's copy at sched_process_exec or
 * from the intact old memory at a failed exit.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "once.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Functions declared __noinline and not static are BPF global functions:
 * the verifier checks each once per program, knowing only its arguments'
 * types, and a caller sees an int it knows nothing of. Inlined, a
 * function is walked again with every state its callers reach it in, and
 * its branches multiply the states of what follows; verifying is most of
 * once's start-up. Where a function's outcomes branch (the counters, the
 * table of files, the tallies, argv), it is global. Its pointer arguments
 * may be NULL as far as the verifier knows: each is checked. A load of the
 * current task's group_leader has the verifier search the kernel's BTF by
 * name each time it checks one: the image's table, in the leader's task
 * storage, is reached through one global function (image_op), not from
 * each function that uses it.
 *
 * A plain bounded loop is walked step by step, and so is whatever its
 * steps reach: a branch in a step that both ways go on from (a wrap of an
 * index, a flag made a bool) doubles the step, and a count the code after
 * the loop uses has that code walked once for each step the loop can end
 * at. Each step then takes one way on, and what follows a loop reads
 * nothing the loop counted. A long loop whose steps most runs never reach
 * goes by bpf_loop past its first steps: the verifier checks a callback
 * until its states converge, and Linux inlines the call.
 */

/* The jobs, each in a header of its own; one object, one compilation unit. */
#include "maps.bpf.h"		/* the knobs, the maps and the structs they hold */
#include "emit.bpf.h"		/* the ring buffer and the counters */
#include "follow.bpf.h"		/* which tasks are traced */
#include "task.bpf.h"		/* a task's fields and identity, its fd table */
#include "path.bpf.h"		/* a file's identity and path; user names */
#include "image_files.bpf.h"	/* the files each image has opened */
#include "tally.bpf.h"		/* repeated opens counted in the kernel */
#include "stack.bpf.h"		/* the caller's stack at an open or exec */
#include "open.bpf.h"		/* open, openat, openat2, creat */
#include "stat.bpf.h"		/* stat, statx, access: lookups */
#include "exec.bpf.h"		/* execve, execveat */
#include "sched.bpf.h"		/* fork, exec, exit */
#include "uring.bpf.h"		/* io_uring: rings set up, opens submitted */

/*
 * bpf2go generates Go only for the types the object's BTF holds; the
 * enums only user space reads, and records built only on the stack, are
 * held here, in a constant nothing reads.
 */
struct shared_enums {
	struct open_repeat_event open_repeat;
	enum event_status status;
	enum stack_flags stack_flags;
	enum stack_bounds stack_bounds;
	enum miss_errno miss_errno;
	enum file_type file_type;
	enum probe_hold probe_hold;
	enum open_xstatus open_xstatus;
	enum generated_fs generated_fs;
};
const volatile struct shared_enums shared_enums_btf = {};
