package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/oncetool/once/collector"
)

func TestStartupLine(t *testing.T) {
	for _, tc := range []struct {
		phases []collector.Phase
		want   string
	}{
		{nil, `^once: start-up [0-9]+\.[0-9] ms:$`},
		{[]collector.Phase{{Name: "decode", Took: 5400 * time.Microsecond}, {Name: "programs", Took: 33*time.Millisecond + 49*time.Microsecond}},
			`^once: start-up [0-9]+\.[0-9] ms: decode 5\.4 ms, programs 33\.0 ms$`},
	} {
		if got := startupLine(tc.phases); !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("startupLine(%v) = %q, want %s", tc.phases, got, tc.want)
		}
	}
}
