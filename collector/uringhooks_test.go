package collector

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// TestUringHooksOptional: where the io_uring tracepoints can't be attached
// (an older kernel, or one without io_uring), Open still succeeds, Hooks
// says so for each (one half alone is no open: the others are let go too),
// UringOpensSeen is false for the command layer to warn, and the rings a
// traced process sets up are still counted.
func TestUringHooksOptional(t *testing.T) {
	testprog.RequireRoot(t)
	bin := testprog.Build(t, testprog.Uringopen)
	for _, missing := range []string{"raw_tp:io_uring_submit_req", "raw_tp:io_uring_req_failed", "raw_tp:io_uring_complete"} {
		t.Run(missing, func(t *testing.T) {
			withAttachHook(t, func(n string) error {
				if n == missing {
					return os.ErrNotExist
				}
				return nil
			})
			tr, err := Open(Options{Tracked: true})
			if err != nil {
				t.Fatalf("Open without %s: %v", missing, err)
			}
			defer tr.Close()
			if tr.UringOpensSeen() {
				t.Error("UringOpensSeen with a hook missing")
			}
			n := 0
			for _, h := range tr.Hooks() {
				if strings.HasPrefix(h.Name, "raw_tp:io_uring_") {
					n++
					if h.Attached || h.Err == nil {
						t.Errorf("hook %s: attached %v, err %v", h.Name, h.Attached, h.Err)
					}
					if h.Name == missing && !errors.Is(h.Err, os.ErrNotExist) {
						t.Errorf("hook %s: err %v, want the attach error", h.Name, h.Err)
					}
				}
			}
			if n != 3 {
				t.Errorf("%d io_uring hooks listed, want 3: %+v", n, tr.Hooks())
			}
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := RunForTest(ctx, tr, exec.Command(bin, file, filepath.Join(filepath.Dir(file), "missing")), time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode == 77 {
				testprog.Skip(t, "no io_uring here")
			}
			if r.ExitCode != 0 {
				t.Fatalf("uringopen exited %d", r.ExitCode)
			}
			if r.Opens != 0 {
				t.Errorf("%d opens seen without the io_uring hooks, want 0", r.Opens)
			}
			if r.Counters.UringSetups != 1 {
				t.Errorf("UringSetups = %d, want 1", r.Counters.UringSetups)
			}
		})
	}
}
