package otlp

import (
	"path"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/oncetool/once/report"
	"github.com/oncetool/once/trace"
)

// The attributes of a finding's record that no semantic convention names.
// The process and its container are named by the conventions' own keys
// (process.*, container.*, k8s.*); what once found, by these.
const (
	keyKind       = attribute.Key("once.kind")
	keyComm       = attribute.Key("once.comm")
	keyParentComm = attribute.Key("once.parent_comm")
	keyLastComm   = attribute.Key("once.last_comm")
	keySubject    = attribute.Key("once.subject")
	keyCount      = attribute.Key("once.count")
	keyFailed     = attribute.Key("once.failed")
	keyAvoidable  = attribute.Key("once.avoidable")
	keyWastedNs   = attribute.Key("once.wasted_ns")
	keyErrno      = attribute.Key("once.errno")
	keyFound      = attribute.Key("once.found")
	keySuggestion = attribute.Key("once.suggestion")
	keyCallSites  = attribute.Key("once.call_sites")
	keyExecID     = attribute.Key("once.exec_id")
	keyStartNs    = attribute.Key("once.start_ns")
	keySide       = attribute.Key("once.side")
)

// eventName names every finding's record (the log record's event name).
const eventName = "once.finding"

// Severity grows with the time wasted: a finding that cost a millisecond
// or more is a warning, one that cost a second or more an error.
const (
	warnNs  = uint64(time.Millisecond)
	errorNs = uint64(time.Second)
)

func severity(wastedNs uint64) (log.Severity, string) {
	switch {
	case wastedNs >= errorNs:
		return log.SeverityError, "ERROR"
	case wastedNs >= warnNs:
		return log.SeverityWarn, "WARN"
	}
	return log.SeverityInfo, "INFO"
}

// maxSites is how many of a finding's call sites a record names, the
// most frequent first.
const maxSites = 3

// record is f's log record. Strings from the traced system are escaped
// (report.Escape): valid UTF-8, as OTLP's protobuf strings must be, with
// no control character a log viewer would act on.
func record(f *trace.Finding, now time.Time, src trace.StackSource, wall int64) log.Record {
	var r log.Record
	ki := f.Info()
	r.SetEventName(eventName)
	r.SetTimestamp(findingTime(f, now, wall))
	r.SetObservedTimestamp(now)
	sev, text := severity(f.WastedNs)
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	r.SetBody(attribute.StringValue(report.FindingLine(f)))
	kv := []attribute.KeyValue{
		keyKind.String(string(f.Kind)),
		keyComm.String(report.Escape(f.Comm)),
		keySubject.String(report.Escape(f.Subject())),
		keyAvoidable.Int(f.Avoidable()),
		keyWastedNs.Int64(int64(min(f.WastedNs, 1<<63-1))),
		keyExecID.Int64(int64(f.Key.ExecID)),
		keyStartNs.Int64(int64(min(f.Key.Start, 1<<63-1))),
		keySuggestion.String(report.Suggestion(f, src)),
		semconv.ProcessPID(int(f.Pid)),
		semconv.ProcessParentPID(int(f.PPid)),
	}
	// What the finding counts, under the key that says what it is: a
	// file's calls (once.count), a chain's failed attempts (once.failed),
	// a repeated miss's calls, every one failed (both); never a 0 that
	// only means the kind has no such figure.
	switch ki.Shape {
	case trace.ShapeChain:
		kv = append(kv, keyFailed.Int(f.Failed))
	case trace.ShapeMiss:
		kv = append(kv, keyCount.Int(f.Count), keyFailed.Int(f.Count))
	default:
		kv = append(kv, keyCount.Int(f.Count))
	}
	if f.ParentComm != "" {
		kv = append(kv, keyParentComm.String(report.Escape(f.ParentComm)))
	}
	if f.LastComm != "" && f.LastComm != f.Comm {
		// The name the process gave itself after it began (a
		// server's setproctitle): what top showed.
		kv = append(kv, keyLastComm.String(report.Escape(f.LastComm)))
	}
	if f.Errno != 0 {
		kv = append(kv, keyErrno.Int(int(f.Errno)), semconv.ErrorTypeKey.String(report.ErrnoName(f.Errno)))
	}
	if ki.Shape == trace.ShapeChain && f.Found != nil {
		kv = append(kv, keyFound.String(report.Escape(*f.Found)))
	}
	if p := f.Proc; p != nil {
		kv = append(kv, semconv.ProcessUserID(int(p.UID)))
		if p.Exe != "" {
			kv = append(kv, semconv.ProcessExecutablePath(report.Escape(p.Exe)),
				semconv.ProcessExecutableName(report.Escape(path.Base(p.Exe))))
		}
		if c := p.Container; c != nil {
			kv = appendContainer(kv, c)
		}
	}
	if src != nil && len(f.CallSites) > 0 {
		kv = append(kv, keyCallSites.Int(len(f.CallSites)), semconv.CodeStacktrace(sites(f, src)))
	}
	r.AddAttributes(kv...)
	return r
}

// appendContainer adds the container's and pod's attributes, those it
// has.
func appendContainer(kv []attribute.KeyValue, c *trace.Container) []attribute.KeyValue {
	for _, a := range []struct {
		k attribute.Key
		v string
	}{
		{semconv.ContainerIDKey, c.ID}, {semconv.ContainerNameKey, c.Name}, {semconv.ContainerRuntimeNameKey, c.Runtime},
		{semconv.K8SPodNameKey, c.Pod}, {semconv.K8SNamespaceNameKey, c.Namespace}, {semconv.K8SPodUIDKey, c.PodUID},
	} {
		if a.v != "" {
			kv = append(kv, a.k.String(report.Escape(a.v)))
		}
	}
	return kv
}

// sites is the finding's busiest call sites, one line each ("N× frames").
func sites(f *trace.Finding, src trace.StackSource) string {
	cs := f.CallSites
	top := make([]trace.CallSite, 0, maxSites)
	for _, c := range cs {
		i := len(top)
		for i > 0 && top[i-1].Count < c.Count {
			i--
		}
		if i < maxSites {
			if len(top) < maxSites {
				top = append(top, trace.CallSite{})
			}
			copy(top[i+1:], top[i:len(top)-1])
			top[i] = c
		}
	}
	var b []byte
	for i, c := range top {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, strconv.Itoa(c.Count)...)
		b = append(b, "× "...)
		b = append(b, report.SiteLine(src, c.Stack)...)
	}
	if len(cs) > len(top) {
		b = append(b, "\n… and "...)
		b = append(b, strconv.Itoa(len(cs)-len(top))...)
		b = append(b, " more call sites"...)
	}
	return string(b)
}

// findingTime is when f's last kept call started, by the wall clock; now
// when that is not known (a chain's attempts keep no time of their own).
func findingTime(f *trace.Finding, now time.Time, wall int64) time.Time {
	if wall == 0 {
		return now
	}
	var last uint64
	for i := range f.Calls {
		last = max(last, f.Calls[i].EnterNs)
	}
	if last == 0 {
		return now
	}
	return time.Unix(0, wall+int64(last))
}
