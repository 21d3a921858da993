package trace

import "testing"

func TestMarkGeneratedFS(t *testing.T) {
	devs := map[uint64]string{21: "proc", 22: "sysfs", 23: "tmpfs"}
	dup := func(k FindingKind, dev uint64) Finding {
		f := Finding{Kind: k}
		f.Dev = dev
		return f
	}
	miss := dup(KindRepeatedMiss, 21)
	miss.Errno = 2
	for _, tc := range []struct {
		name string
		f    Finding
		want string
	}{
		{"a duplicate open on procfs", dup(KindDuplicateOpen, 21), "proc"},
		{"a duplicate stat on sysfs", dup(KindDuplicateStat, 22), "sysfs"},
		{"a duplicate open on tmpfs", dup(KindDuplicateOpen, 23), ""},
		{"a device no mount has", dup(KindDuplicateOpen, 99), ""},
		{"a repeated miss: no file", miss, ""},
		{"a chain", dup(KindFailedOpenProbes, 21), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := []Finding{tc.f}
			MarkGeneratedFS(fs, devs)
			if got := fs[0].FSType; got != tc.want {
				t.Errorf("FSType %q, want %q", got, tc.want)
			}
		})
	}
}
