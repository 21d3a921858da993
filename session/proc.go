package session

import (
	"bytes"
	"os"
	"strconv"
)

// ProcComm is the comm of process pid from /proc/PID/comm ("" if it is
// gone or unreadable): detect.Options.ParentComm, for the parents that
// predate the trace. The pid is the kernel's, so once reads the host's
// /proc (as it does in its DaemonSet, hostPID). The read is bounded: a
// comm is at most 15 bytes.
func ProcComm(pid uint32) string {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return ""
	}
	defer f.Close()
	var b [64]byte
	n, _ := f.Read(b[:])
	return string(bytes.TrimSuffix(b[:n], []byte("\n")))
}
