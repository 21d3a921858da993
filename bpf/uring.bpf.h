/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * io_uring: sys_exit_io_uring_setup counts the rings traced processes set
 * up. Opens submitted through a ring are no syscalls: no syscall
 * tracepoint sees them, and user space says they may be missing.
 */
#ifndef ONCE_URING_BPF_H
#define ONCE_URING_BPF_H

#include "kernel.h"
#include "maps.bpf.h"
#include "emit.bpf.h"
#include "follow.bpf.h"

SEC("tracepoint/syscalls/sys_exit_io_uring_setup")
int exit_uring_setup(struct syscall_exit_ctx *ctx)
{
	if (ctx->ret >= 0 && traced(bpf_get_current_pid_tgid() >> 32))
		count(CNT_URING_SETUPS);
	return 0;
}

#endif /* ONCE_URING_BPF_H */
