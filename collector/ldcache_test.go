package collector_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oncetool/once/collector"
	"github.com/oncetool/once/internal/testprog"
	"github.com/oncetool/once/trace"
)

// TestLdCacheFind: ld.so misses libc.so.6 in each LD_LIBRARY_PATH entry,
// opens /etc/ld.so.cache and finds it there: the chain says so
// (ChainDetail.ViaCache), in every mode, including the one where the
// kernel counts first opens without sending them (once watch, once run
// --stacks): the cache's open, sent while probes pend, is what tells.
func TestLdCacheFind(t *testing.T) {
	testprog.RequireRoot(t)
	if _, err := os.Stat("/etc/ld.so.cache"); err != nil {
		t.Skip("no /etc/ld.so.cache")
	}
	for _, tc := range []struct {
		name string
		opts collector.Options
	}{
		{"every open sent", collector.Options{}},
		{"first opens unsent", collector.Options{SendOpensPerKind: 1, FirstOpensUnsent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			cmd := exec.Command("env", "LD_LIBRARY_PATH="+d+"/l1:"+d+"/l2", "/bin/true")
			r := traceCmd(t, cmd, tc.opts)
			var seen []string
			for _, f := range r.Findings {
				if f.Kind != trace.KindFailedOpenProbes || f.Target != "libc.so.6" || f.Comm != "true" {
					continue
				}
				seen = append(seen, f.Target+" via "+f.ViaCache)
			}
			if len(seen) != 1 || seen[0] != "libc.so.6 via /etc/ld.so.cache" {
				t.Errorf("libc.so.6 chains of true: %s; want one found via /etc/ld.so.cache", strings.Join(seen, "; "))
			}
		})
	}
}
