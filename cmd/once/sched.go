package main

import (
	"fmt"
	"io"

	"github.com/oncetool/once/internal/schedbatch"
	"github.com/oncetool/once/report"
)

// batchThreads moves once's threads to SCHED_BATCH (internal/schedbatch):
// woken, they no longer preempt the programs being traced. Failing only
// costs that, and says so.
func batchThreads(stderr io.Writer) {
	if err := schedbatch.Process(); err != nil {
		fmt.Fprintf(stderr, "once: WARNING: once's threads stay in the normal scheduling policy (%s): waking, they may preempt traced programs\n", report.Escape(err.Error()))
	}
}
