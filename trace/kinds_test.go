package trace

import (
	"reflect"
	"testing"
)

func TestKindsRegistry(t *testing.T) {
	seen := map[FindingKind]bool{}
	for _, ki := range Kinds {
		if seen[ki.Kind] {
			t.Errorf("%s registered twice", ki.Kind)
		}
		seen[ki.Kind] = true
		if ki.Title == "" || ki.Call == "" || ki.Amount == "" || ki.Avoidable == "" {
			t.Errorf("%s: incomplete descriptor %+v", ki.Kind, *ki)
		}
		// Every known kind says what to change; one that reuses a
		// file says what it passes on.
		if ki.Remedy == RemedyNone || (ki.Remedy == RemedyReuse) != (ki.Reuse != "") {
			t.Errorf("%s: remedy %d, reuse %q", ki.Kind, ki.Remedy, ki.Reuse)
		}
		if got := ki.Kind.Info(); got != ki {
			t.Errorf("%s.Info() is not its registered descriptor", ki.Kind)
		}
		if !ki.Kind.Known() {
			t.Errorf("%s not Known", ki.Kind)
		}
	}
	for _, k := range []FindingKind{KindDuplicateOpen, KindFailedExecProbes, KindFailedOpenProbes, KindExecShellFallback,
		KindFailedStatProbes, KindRepeatedMiss, KindDuplicateStat} {
		if !seen[k] {
			t.Errorf("%s has no descriptor", k)
		}
	}
	unknown := FindingKind("from_a_newer_producer")
	if unknown.Known() {
		t.Error("an unregistered kind is Known")
	}
	if ki := unknown.Info(); ki.Title != string(unknown) || ki.Shape != ShapeChain {
		t.Errorf("unknown kind described as %+v", *ki)
	}
}

func TestFindingHeader(t *testing.T) {
	found := "/usr/bin/ls"
	tests := []struct {
		name              string
		f                 Finding
		subject           string
		amount, avoidable int
	}{
		{"duplicate", Finding{Kind: KindDuplicateOpen, FileDetail: FileDetail{Path: "/etc/hosts", Count: 3}}, "/etc/hosts", 3, 2},
		{"duplicate without count", Finding{Kind: KindDuplicateOpen, FileDetail: FileDetail{Path: "/x"}}, "/x", 0, 0},
		{"exec chain", Finding{Kind: KindFailedExecProbes, ChainDetail: ChainDetail{Target: "ls", Failed: 6, Found: &found}}, "ls", 6, 6},
		{"shell fallback", Finding{Kind: KindExecShellFallback, ChainDetail: ChainDetail{Target: "./s", Failed: 1}}, "./s", 1, 1},
		{"repeated miss", Finding{Kind: KindRepeatedMiss, FileDetail: FileDetail{Path: "/etc/x.conf", Count: 100, Errno: 2}}, "/etc/x.conf", 100, 99},
		{"duplicate stat", Finding{Kind: KindDuplicateStat, FileDetail: FileDetail{Path: "/usr/bin/ls", Count: 3}}, "/usr/bin/ls", 3, 2},
		{"stat chain", Finding{Kind: KindFailedStatProbes, ChainDetail: ChainDetail{Target: "ls", Failed: 6, Found: &found}}, "ls", 6, 6},
		{"unknown kind", Finding{Kind: "new_kind", ChainDetail: ChainDetail{Target: "t", Failed: 4}}, "t", 4, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Subject(); got != tc.subject {
				t.Errorf("Subject = %q, want %q", got, tc.subject)
			}
			if got := tc.f.Amount(); got != tc.amount {
				t.Errorf("Amount = %d, want %d", got, tc.amount)
			}
			if got := tc.f.Avoidable(); got != tc.avoidable {
				t.Errorf("Avoidable = %d, want %d", got, tc.avoidable)
			}
		})
	}
}

func TestTotalsOf(t *testing.T) {
	fs := []Finding{
		{Kind: KindDuplicateOpen, WastedNs: 100, FileDetail: FileDetail{Count: 3}},
		{Kind: KindDuplicateOpen, WastedNs: 50, FileDetail: FileDetail{Count: 2}},
		{Kind: KindExecShellFallback, WastedNs: 7, ChainDetail: ChainDetail{Failed: 1}},
		{Kind: "new_kind", WastedNs: 1, ChainDetail: ChainDetail{Failed: 2}},
		{Kind: KindRepeatedMiss, WastedNs: 5, FileDetail: FileDetail{Count: 4, Chained: 2}},
	}
	got := TotalsOf(fs)
	want := []KindTotal{
		{Kind: KindDuplicateOpen, Findings: 2, Avoidable: 3, WastedNs: 150},
		{Kind: KindFailedExecProbes},
		{Kind: KindFailedOpenProbes},
		{Kind: KindExecShellFallback, Findings: 1, Avoidable: 1, WastedNs: 7},
		{Kind: KindFailedStatProbes},
		{Kind: KindRepeatedMiss, Findings: 1, Avoidable: 1, Chained: 2, WastedNs: 5},
		{Kind: KindDuplicateStat},
		{Kind: "new_kind", Findings: 1, Avoidable: 2, WastedNs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TotalsOf =\n%+v\nwant\n%+v", got, want)
	}
	r := Result{Findings: fs, Waste: got}
	if n := r.WastedNs(); n != 163 {
		t.Errorf("WastedNs = %d, want 163", n)
	}
	if kt := r.KindTotal(KindFailedOpenProbes); kt != (KindTotal{Kind: KindFailedOpenProbes}) {
		t.Errorf("KindTotal of a kind with no finding = %+v", kt)
	}
}
