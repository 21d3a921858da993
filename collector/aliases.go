package collector

import "github.com/oncetool/once/trace"

// The domain types moved to package trace; these names keep the
// collector's own code reading as it did.
type (
	Event       = trace.Event
	EventKind   = trace.EventKind
	Task        = trace.Task
	ImageKey    = trace.ImageKey
	OpenRecord  = trace.OpenRecord
	ExecRecord  = trace.ExecRecord
	ProcRecord  = trace.ProcRecord
	TallyRecord = trace.TallyRecord
	Syscall     = trace.Syscall
	Counters    = trace.Counters
	FindingKind = trace.FindingKind
	Finding     = trace.Finding
	Attempt     = trace.Attempt
	Result      = trace.Result
	Process     = trace.Process
	FileOpens   = trace.FileOpens
	FailedOpen  = trace.FailedOpen
	OpenCall    = trace.OpenCall
	CallKind    = trace.CallKind
	ExecAttempt = trace.ExecAttempt
)

const (
	EventOpen     = trace.EventOpen
	EventExec     = trace.EventExec
	EventFork     = trace.EventFork
	EventExit     = trace.EventExit
	EventImage    = trace.EventImage
	EventUnsent   = trace.EventUnsent
	EventExecArgs = trace.EventExecArgs
	EventTally    = trace.EventTally

	StFnameTruncated  = trace.StFnameTruncated
	StFnameUnreadable = trace.StFnameUnreadable
	StPathTruncated   = trace.StPathTruncated
	StPathUnresolved  = trace.StPathUnresolved
	StArgvTruncated   = trace.StArgvTruncated
	StArgvUnreadable  = trace.StArgvUnreadable
	StFnameReread     = trace.StFnameReread
	StPathIsBase      = trace.StPathIsBase
	StTallyNext       = trace.StTallyNext
	StUntimed         = trace.StUntimed
	StCompat          = trace.StCompat
	StSeenBefore      = trace.StSeenBefore
	StArgsSent        = trace.StArgsSent

	SysUnknown  = trace.SysUnknown
	SysOpen     = trace.SysOpen
	SysOpenat   = trace.SysOpenat
	SysOpenat2  = trace.SysOpenat2
	SysCreat    = trace.SysCreat
	SysExecve   = trace.SysExecve
	SysExecveat = trace.SysExecveat

	KindDuplicateOpen     = trace.KindDuplicateOpen
	KindFailedExecProbes  = trace.KindFailedExecProbes
	KindFailedOpenProbes  = trace.KindFailedOpenProbes
	KindExecShellFallback = trace.KindExecShellFallback
)

// MaxCalls bounds the calls kept per file or failed spelling.
const MaxCalls = 256

var exitStatus = trace.ExitStatus
