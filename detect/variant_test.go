package detect

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/oncetool/once/trace"
)

// TestCacheAndVariants: a library ld.so found through its cache after
// missing in every search-path entry (ViaCache), and names of one stem
// tried in a row in one directory (Variants): neither a search whose
// order a report may advise on.
func TestCacheAndVariants(t *testing.T) {
	ld := task(70, 70, 970, 1, "main")
	other := ld
	other.Tid = 71
	const cache = "/etc/ld.so.cache"
	miss := func(s *seq, name string, dirs ...string) {
		for _, d := range dirs {
			s.open(ld, d+"/"+name, d+"/"+name, 0, 0, -2)
		}
	}
	ino := uint64(100)
	hit := func(s *seq, p string) {
		ino++
		s.open(ld, p, p, 1, ino, 3)
	}
	stat := func(s *seq, p string, ret int32) {
		ino++
		s.lookup(ld, trace.SysNewfstatat, p, 1, ino, ret, false)
	}
	tests := []struct {
		name string
		seq  func(s *seq)
		want map[string]string // kind and subject: failed, via, variants
	}{
		{"libraries through the cache, one in an entry", func(s *seq) {
			miss(s, "libm.so.6", "/a", "/b", "/c")
			s.open(ld, cache, cache, 1, 7, 3)
			hit(s, "/lib/libm.so.6")
			miss(s, "libz.so.1", "/a", "/b", "/c")
			hit(s, "/lib/libz.so.1") // the cache mapped since
			miss(s, "libfoo.so", "/a", "/b")
			hit(s, "/c/libfoo.so") // an entry's
			miss(s, "libq.so", "/a", "/b", "/c", "/opt/d")
			hit(s, "/opt/e/libq.so") // missed where no cached chain did
		}, map[string]string{
			"failed_open_probes libm.so.6": "3 failed, via /etc/ld.so.cache, 0 variant misses []",
			"failed_open_probes libz.so.1": "3 failed, via /etc/ld.so.cache, 0 variant misses []",
			"failed_open_probes libfoo.so": "2 failed, via , 0 variant misses []",
			"failed_open_probes libq.so":   "4 failed, via , 0 variant misses []"}},
		{"a miss after the cache", func(s *seq) {
			miss(s, "libx.so", "/a", "/b")
			s.open(ld, cache, cache, 1, 7, 3)
			miss(s, "libx.so", "/usr/lib")
			hit(s, "/lib/libx.so")
		}, map[string]string{"failed_open_probes libx.so": "3 failed, via , 0 variant misses []"}},
		{"the cache opened by another thread", func(s *seq) {
			miss(s, "libx.so", "/a", "/b")
			s.open(other, cache, cache, 1, 7, 3)
			hit(s, "/lib/libx.so")
		}, map[string]string{"failed_open_probes libx.so": "2 failed, via , 0 variant misses []"}},
		{"no cache", func(s *seq) {
			miss(s, "libx.so", "/a", "/b")
			hit(s, "/lib/libx.so")
		}, map[string]string{"failed_open_probes libx.so": "2 failed, via , 0 variant misses []"}},
		// Python's import of a package: __init__ with each extension
		// suffix, then __init__.py.
		{"a package's __init__ variants", func(s *seq) {
			for _, d := range []string{"/p/enc", "/p/json"} {
				stat(s, d+"/__init__.cpython-311-x86_64-linux-gnu.so", -2)
				stat(s, d+"/__init__.abi3.so", -2)
				stat(s, d+"/__init__.so", -2)
				stat(s, d+"/__init__.py", 0)
			}
		}, map[string]string{
			"failed_stat_probes __init__.cpython-311-x86_64-linux-gnu.so": "2 failed, via , 2 variant misses [__init__.abi3.so]",
			"failed_stat_probes __init__.abi3.so":                         "2 failed, via , 2 variant misses [__init__.cpython-311-x86_64-linux-gnu.so __init__.so]",
			"failed_stat_probes __init__.so":                              "2 failed, via , 2 variant misses [__init__.abi3.so __init__.py]"}},
		// gcc: x.h.gch stat-ed before each open of x.h.
		{"a precompiled header before the header", func(s *seq) {
			for _, d := range []string{"/i1", "/i2", "/i3"} {
				stat(s, d+"/x.h.gch", -2)
				if d == "/i3" {
					hit(s, d+"/x.h")
				} else {
					miss(s, "x.h", d)
				}
			}
		}, map[string]string{
			"failed_stat_probes x.h.gch": "3 failed, via , 3 variant misses [x.h]",
			"failed_open_probes x.h":     "2 failed, via , 2 variant misses [x.h.gch]"}},
		{"other stems, or another directory", func(s *seq) {
			for _, d := range []string{"/d1", "/d2"} {
				stat(s, d+"/a.so", -2)
				stat(s, d+"/b.so", -2)
			}
			stat(s, "/d3/c.py", -2)
			stat(s, "/d4/c.so", -2)
			stat(s, "/d5/c.py", -2)
		}, map[string]string{
			"failed_stat_probes a.so": "2 failed, via , 0 variant misses []",
			"failed_stat_probes b.so": "2 failed, via , 0 variant misses []",
			"failed_stat_probes c.py": "2 failed, via , 0 variant misses []"}},
		{"something else between", func(s *seq) {
			for _, d := range []string{"/d1", "/d2"} {
				stat(s, d+"/m.py", -2)
				hit(s, "/etc/other")
				stat(s, d+"/m.so", -2)
			}
		}, map[string]string{
			"failed_stat_probes m.py": "2 failed, via , 0 variant misses []",
			"failed_stat_probes m.so": "2 failed, via , 0 variant misses []"}},
	}
	for _, pol := range []Policy{KeepAll(""), Bounded(0, 0)} {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				s := &seq{}
				tc.seq(s)
				got := searches(pol, s, func(f trace.Finding) string {
					return fmt.Sprintf("%d failed, via %s, %d variant misses [%s]",
						f.Failed, f.ViaCache, f.VariantMisses, strings.Join(f.Variants, " "))
				})
				if !maps.Equal(got, tc.want) {
					t.Errorf("chains:\n%v\nwant:\n%v", got, tc.want)
				}
			})
		}
	}
}
