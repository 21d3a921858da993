package report

import (
	"testing"

	"github.com/oncetool/once/trace"
)

// TestContainerLabel: a text line names a container by its pod and name,
// or, unnamed, by its short id: an engine's 64 hex digits cut to 12, any
// other id (runc run by hand: runc run c1test) whole, never "".
func TestContainerLabel(t *testing.T) {
	long := "3a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f9012"
	for _, tc := range []struct {
		c    trace.Container
		want string
	}{
		{trace.Container{ID: long, Name: "web", Pod: "shop", Namespace: "prod"}, "prod/shop/web"},
		{trace.Container{ID: long}, "3a4b5c6d7e8f"},
		{trace.Container{ID: "c1test", Runtime: "runc"}, "c1test"},
		{trace.Container{ID: "webserver-production", Runtime: "runc"}, "webserver-production"},
		{trace.Container{ID: "c1test", Pod: "p"}, "p/c1test"},
	} {
		c := tc.c
		if got := containerLabel(&c); got != tc.want {
			t.Errorf("containerLabel(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
