package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oncetool/once/collector"
)

// started is about when the process started: package main's variables
// are set after every package it imports is initialized.
var started = time.Now()

// tracesFirst says whether the command opens a tracer as its first
// work, so that decoding the BPF object can start at once (see
// collector.PrefetchSpec).
func tracesFirst(cmd string) bool {
	switch cmd {
	case "run", "check", "watch":
		return true
	}
	return false
}

// startupLine says where once's start-up went (-v): from the process's
// start to now, and each part of opening the tracer.
func startupLine(phases []collector.Phase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "once: start-up %s:", fmtMs(time.Since(started)))
	for i, p := range phases {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %s", p.Name, fmtMs(p.Took))
	}
	return b.String()
}

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}
