package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncetool/once/internal/testprog"
)

// runcContainer starts a runc container, id, in cgroup /docker/ID (what
// Docker's cgroupfs driver makes), whose process opens /etc/hostname
// twice every 200 ms; stop removes it.
func runcContainer(t *testing.T, id string) (stop func()) {
	t.Helper()
	runc := needTool(t, "runc")
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		busybox = needTool(t, "busybox")
	}
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "etc", "proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc", "hostname"), []byte("box\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(runc, "spec", "--bundle", dir).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v: %s", err, out)
	}
	var spec map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	proc := spec["process"].(map[string]any)
	proc["terminal"] = false
	proc["args"] = []string{"/bin/busybox", "sh", "-c",
		"while true; do /bin/busybox cat /etc/hostname /etc/hostname >/dev/null; /bin/busybox sleep 0.2; done"}
	spec["linux"].(map[string]any)["cgroupsPath"] = "/docker/" + id
	raw, _ = json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(runc, "run", "--bundle", dir, id)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		exec.Command(runc, "kill", id, "KILL").Run()
		cmd.Wait()
		exec.Command(runc, "delete", "-f", id).Run()
	}
	t.Cleanup(stop)
	return stop
}

// TestWatchContainerFilter: once watch --container selects, in the
// kernel, one runc container's processes, whether the container started
// before once or after it: its duplicate opens are reported with its id,
// and nothing of the host's own loop doing the same is.
func TestWatchContainerFilter(t *testing.T) {
	testprog.RequireRoot(t)
	host := t.TempDir()
	f := filepath.Join(host, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := exec.Command("/bin/sh", "-c", fmt.Sprintf("while :; do cat %s %s >/dev/null; sleep 0.2; done", f, f))
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { loop.Process.Kill(); loop.Wait() }()

	for i, when := range []string{"before", "after"} {
		t.Run("container started "+when+" once", func(t *testing.T) {
			id := fmt.Sprintf("%064x", 0xc0ffee00+i)
			out := filepath.Join(t.TempDir(), "w.jsonl")
			var stop func()
			if when == "before" {
				stop = runcContainer(t, id)
				time.Sleep(500 * time.Millisecond)
			}
			w := startWatch(t, "--container", id[:12], "--format", "json", "-o", out, "--interval", "500ms")
			if when == "after" {
				stop = runcContainer(t, id)
			}
			time.Sleep(3 * time.Second)
			stop()
			w.stop(t, os.Interrupt)
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			ours, others := 0, 0
			for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
				var v struct {
					Type        string `json:"type"`
					Kind        string `json:"kind"`
					Path        string `json:"path"`
					ContainerID string `json:"container_id"`
				}
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("%v: %q", err, l)
				}
				if v.Type != "finding" {
					continue
				}
				if v.ContainerID == id && v.Kind == "duplicate_open" && v.Path == "/etc/hostname" {
					ours++
				} else if v.ContainerID != id {
					others++
					t.Errorf("a finding outside the container: %s", l)
				}
			}
			if ours < 3 {
				t.Errorf("%d duplicate_open findings of /etc/hostname in container %s, want one per loop (at least 3):\n%s\n%s", ours, id[:12], raw, w.stderr.buf.String())
			}
			t.Logf("%d findings in the container, %d outside", ours, others)
		})
	}
}
