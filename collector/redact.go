package collector

import "github.com/oncetool/once/trace"

// RedactArg: see trace.RedactArg.
var RedactArg = trace.RedactArg

// RedactCommand: see trace.RedactCommand.
var RedactCommand = trace.RedactCommand

var (
	redactArgv = trace.RedactArgv
	sameArg    = trace.SameArg
)
