package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

// containerLoop opens /etc/hostname twice every 200 ms.
const containerLoop = "while true; do /bin/busybox cat /etc/hostname /etc/hostname >/dev/null; /bin/busybox sleep 0.2; done"

// runcContainer starts a runc container, id, in cgroup /docker/ID (what
// Docker's cgroupfs driver makes), whose process opens /etc/hostname
// twice every 200 ms; stop removes it.
func runcContainer(t *testing.T, id string) (stop func()) {
	t.Helper()
	return runcContainerAt(t, id, "/docker/"+id, nil, containerLoop)
}

// runcContainerAt starts runc container id in cgroupsPath, with the OCI
// annotations given, running script under busybox sh; /bin/true is
// busybox too.
// containerID is a new runc container id, 64 hex digits as runtimes make
// them: random, so that a container a killed run left behind (runc keeps
// its state) never takes the id of the next run's.
func containerID(t *testing.T) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// podUID is a new pod UID, as Kubernetes makes them (a version 4 UUID).
func podUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func runcContainerAt(t *testing.T, id, cgroupsPath string, annotations map[string]string, script string) (stop func()) {
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
	if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", "true")); err != nil {
		t.Fatal(err)
	}
	// /bin/pathsearch: glibc's execvp of its arguments, static (busybox's
	// env runs its own applets without an exec).
	src := filepath.Join(dir, "pathsearch.c")
	if err := os.WriteFile(src, []byte("#include <unistd.h>\nint main(int c, char **v) { execvp(v[1], v + 1); return 127; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", filepath.Join(rootfs, "bin", "pathsearch"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
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
	proc["args"] = []string{"/bin/busybox", "sh", "-c", script}
	spec["linux"].(map[string]any)["cgroupsPath"] = cgroupsPath
	if annotations != nil {
		spec["annotations"] = annotations
	}
	raw, _ = json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(runc, "run", "--bundle", dir, id)
	var runcOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &runcOut, &runcOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		exec.Command(runc, "kill", id, "KILL").Run()
		cmd.Wait()
		exec.Command(runc, "delete", "-f", id).Run()
		if s := runcOut.String(); s != "" && t.Failed() {
			t.Logf("runc %s: %s", id[:12], s)
		}
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

	for _, when := range []string{"before", "after"} {
		t.Run("container started "+when+" once", func(t *testing.T) {
			id := containerID(t)
			out := filepath.Join(t.TempDir(), "w.jsonl")
			var stop func()
			if when == "before" {
				stop = runcContainer(t, id)
				runc := needTool(t, "runc")
				testprog.Eventually(t, 10*time.Second, "runc container "+id[:12]+" running", func() bool {
					out, err := exec.Command(runc, "state", id).Output()
					return err == nil && bytes.Contains(out, []byte(`"status": "running"`))
				})
			}
			w := startWatch(t, "--container", id[:12], "--format", "json", "-o", out, "--interval", "500ms")
			if when == "after" {
				stop = runcContainer(t, id)
			}
			// ours counts the container's duplicates, others every
			// finding outside it.
			var ours, others int
			var outside []string
			tally := func() {
				ours, others, outside = 0, 0, nil
				for _, v := range readFindings(t, out) {
					if v.ContainerID == id && v.Kind == "duplicate_open" && v.Path == "/etc/hostname" {
						ours++
					} else if v.ContainerID != id {
						others++
						outside = append(outside, v.Line)
					}
				}
			}
			testprog.WaitFor(30*time.Second, func() bool { tally(); return ours >= 3 })
			stop()
			w.stop(t, os.Interrupt)
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			tally()
			for _, l := range outside {
				t.Errorf("a finding outside the container: %s", l)
			}
			if ours < 3 {
				t.Errorf("%d duplicate_open findings of /etc/hostname in container %s, want one per loop (at least 3):\n%s\n%s", ours, id[:12], raw, w.stderr.buf.String())
			}
			t.Logf("%d findings in the container, %d outside", ours, others)
		})
	}
}

// TestWatchContainers: two runc containers, one with containerd's CRI
// annotations in the kubepods layout and one with CRI-O's, each running
// cat f f and an env PATH search, beside a host process doing the same.
// once watch names each finding's container, pod and namespace (empty
// for the host's), the metrics carry the pod's labels, and --pod selects
// one pod's findings only.
func TestWatchContainers(t *testing.T) {
	testprog.RequireRoot(t)
	uidA, uidB := podUID(t), podUID(t)
	idA, idB := containerID(t), containerID(t)
	script := "while true; do /bin/busybox cat /etc/hostname /etc/hostname >/dev/null; PATH=/nope1:/nope2:/bin /bin/pathsearch true; /bin/busybox sleep 0.3; done"
	host := t.TempDir()
	f := filepath.Join(host, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	loop := exec.Command("/bin/sh", "-c", fmt.Sprintf("while :; do cat %s %s >/dev/null; sleep 0.3; done", f, f))
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { loop.Process.Kill(); loop.Wait() }()

	// watch runs once watch with args beside the two containers until
	// the findings it wrote are enough, and the metrics hold every
	// string of metricsWant.
	watch := func(t *testing.T, enough func([]finding) bool, metricsWant []string, args ...string) ([]finding, string) {
		out := filepath.Join(t.TempDir(), "w.jsonl")
		w := startWatch(t, append(args, "--format", "json", "-o", out, "--interval", "500ms", "--metrics", "127.0.0.1:0")...)
		url := metricsURL(t, w)
		stopA := runcContainerAt(t, idA, "/kubepods/burstable/pod"+uidA+"/"+idA, map[string]string{
			"io.kubernetes.cri.container-type":    "container",
			"io.kubernetes.cri.container-name":    "web",
			"io.kubernetes.cri.sandbox-id":        containerID(t),
			"io.kubernetes.cri.sandbox-name":      "shop-7d9f",
			"io.kubernetes.cri.sandbox-namespace": "prod",
			"io.kubernetes.cri.sandbox-uid":       uidA,
		}, script)
		stopB := runcContainerAt(t, idB, "/kubepods/besteffort/pod"+uidB+"/crio-"+idB, map[string]string{
			"io.kubernetes.container.name": "cache",
			"io.kubernetes.pod.name":       "redis-0",
			"io.kubernetes.pod.namespace":  "infra",
			"io.kubernetes.pod.uid":        uidB,
		}, script)
		testprog.WaitFor(30*time.Second, func() bool { return enough(readFindings(t, out)) })
		var metrics string
		testprog.WaitFor(10*time.Second, func() bool {
			metrics = scrape(t, url)
			for _, m := range metricsWant {
				if !strings.Contains(metrics, m) {
					return false
				}
			}
			return true
		})
		stopA()
		stopB()
		w.stop(t, os.Interrupt)
		return readFindings(t, out), metrics
	}
	count := func(fs []finding, keep func(finding) bool) int {
		n := 0
		for _, f := range fs {
			if keep(f) {
				n++
			}
		}
		return n
	}

	pods := []struct{ id, name, pod, ns string }{
		{idA, "web", "shop-7d9f", "prod"}, {idB, "cache", "redis-0", "infra"},
	}
	t.Run("all", func(t *testing.T) {
		var metricsWant []string
		for _, c := range pods {
			metricsWant = append(metricsWant, fmt.Sprintf(`namespace="%s",pod="%s"`, c.ns, c.pod))
		}
		// Enough once three of each kind carry the container's names:
		// a container's first findings may come before its runtime has
		// named it (findings go out at every poll).
		enough := func(fs []finding) bool {
			for _, c := range pods {
				for _, kind := range []string{"duplicate_open", "failed_exec_probes"} {
					if count(fs, func(f finding) bool {
						return f.Kind == kind && f.ContainerID == c.id && f.ContainerName == c.name && f.Pod == c.pod && f.Namespace == c.ns
					}) < 3 {
						return false
					}
				}
			}
			return count(fs, func(f finding) bool { return f.Kind == "duplicate_open" && f.Path == filepath.Join(host, "f") }) >= 3
		}
		fs, metrics := watch(t, enough, metricsWant)
		for _, c := range pods {
			of := func(kind string) func(finding) bool {
				return func(f finding) bool {
					return f.Kind == kind && f.ContainerID == c.id && f.ContainerName == c.name && f.Pod == c.pod && f.Namespace == c.ns
				}
			}
			if n := count(fs, of("duplicate_open")); n < 3 {
				t.Errorf("pod %s: %d duplicate_open findings with its container, pod and namespace; want one per loop", c.pod, n)
			}
			if n := count(fs, of("failed_exec_probes")); n < 3 {
				t.Errorf("pod %s: %d failed_exec_probes findings with its names; want one per loop", c.pod, n)
			}
			if want := fmt.Sprintf(`namespace="%s",pod="%s"`, c.ns, c.pod); !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "once_duplicate_opens_total"))
			}
		}
		if t.Failed() {
			seen := map[string]int{}
			for _, f := range fs {
				seen[f.Kind+" "+f.Pod+"/"+f.ContainerName+" "+f.Cgroup]++
			}
			t.Logf("findings: %v", seen)
		}
		hostDup := count(fs, func(f finding) bool {
			return f.Kind == "duplicate_open" && f.Path == filepath.Join(host, "f") && f.ContainerID == "" && f.Pod == "" && f.Namespace == "" && f.ContainerName == ""
		})
		if hostDup < 3 {
			t.Errorf("host process: %d duplicate_open findings of %s with every container field empty; want one per loop", hostDup, f)
		}
	})
	t.Run("--pod", func(t *testing.T) {
		enough := func(fs []finding) bool {
			return count(fs, func(f finding) bool { return f.Pod == "shop-7d9f" }) >= 6
		}
		fs, _ := watch(t, enough, nil, "--pod", "shop-7d9f")
		if n := count(fs, func(f finding) bool { return f.Pod == "shop-7d9f" }); n < 6 {
			t.Errorf("--pod shop-7d9f: %d of its findings, want its duplicates and PATH searches", n)
		}
		if n := count(fs, func(f finding) bool { return f.Pod != "shop-7d9f" }); n != 0 {
			t.Errorf("--pod shop-7d9f: %d findings of others: %+v", n, fs)
		}
	})
}

// finding is what the container tests read of a finding line.
type finding struct {
	Type, Kind, Path, Target              string
	ContainerID                           string `json:"container_id"`
	ContainerName                         string `json:"container_name"`
	Pod, Namespace, Runtime, Comm, Cgroup string
	ParentComm                            string `json:"parent_comm"`
	Line                                  string `json:"-"`
}

// readFindings is the findings in the JSON lines file path so far: only
// whole lines, since once watch may be appending to it.
func readFindings(t *testing.T, path string) []finding {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(raw, '\n'); i >= 0 {
		raw = raw[:i]
	} else {
		return nil
	}
	var fs []finding
	for _, l := range strings.Split(string(raw), "\n") {
		var v finding
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		if v.Type == "finding" {
			v.Line = l
			fs = append(fs, v)
		}
	}
	return fs
}
