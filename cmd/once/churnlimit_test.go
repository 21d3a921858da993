package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/oncetool/once/internal/memlimit"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"
)

// churnBound is the peak RSS the README states for once watch under the
// unprivileged churn, in the DaemonSet's configuration: its Go limit
// (192 MiB) and what RSS holds besides, the binary's pages and the
// ring buffer's mapping (about 32 MiB).
const churnBound = 224 << 20

// daemonSetWatch is the once container's args and memory limit in
// deploy/daemonset.yaml: what the churn test runs, so that the test and
// the manifest cannot drift apart.
func daemonSetWatch(t *testing.T) (args []string, limit int64) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
						Env  []struct {
							Name      string `yaml:"name"`
							Value     string `yaml:"value"`
							ValueFrom any    `yaml:"valueFrom"`
						} `yaml:"env"`
						Resources struct {
							Limits map[string]string `yaml:"limits"`
						} `yaml:"resources"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &ds); err != nil || len(ds.Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("deploy/daemonset.yaml: %v", err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if limit, err = memlimit.Parse(c.Resources.Limits["memory"]); err != nil || limit == memlimit.None {
		t.Fatalf("deploy/daemonset.yaml: limits.memory %q: %v", c.Resources.Limits["memory"], err)
	}
	// $(NAME) is expanded as the kubelet does, from the variables
	// defined before; one from the downward API (the node's IP) is this
	// machine's loopback, where no OpenTelemetry agent listens: the
	// watch runs with its exporter failing, as on a node without one.
	env := map[string]string{}
	expand := func(v string) string {
		return kubeVar.ReplaceAllStringFunc(v, func(m string) string {
			if val, ok := env[m[2:len(m)-1]]; ok {
				return val
			}
			return m
		})
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			env[e.Name] = "127.0.0.1"
			continue
		}
		env[e.Name] = expand(e.Value)
	}
	for _, a := range c.Args {
		args = append(args, expand(a))
	}
	return args, limit
}

var kubeVar = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// TestUnprivilegedChurn: three minutes (ONCE_CHURN; make test: 20 s) of
// what uid 65534 can make without privileges, thousands of processes a
// second, each with a name no process had before, a duplicate open, a
// failed open of a new path and a failed PATH search, one in 16 execing
// a new image, leave once watch, run with the DaemonSet's args inside a
// memory cgroup of the DaemonSet's limit, alive and under the RSS the
// README states.
func TestUnprivilegedChurn(t *testing.T) {
	testprog.RequireRoot(t)
	setpriv := needTool(t, "setpriv")
	d := 20 * time.Second
	if v := os.Getenv("ONCE_CHURN"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 10*time.Second {
			t.Fatalf("ONCE_CHURN=%q: want a duration of at least 10s", v)
		}
	}
	args, limit := daemonSetWatch(t)
	if limit != floodMemoryLimit {
		t.Errorf("the DaemonSet's memory limit is %d MiB, the tests' %d MiB", limit>>20, floodMemoryLimit>>20)
	}
	row := reltest.Record(t, fmt.Sprintf("watch with the DaemonSet's args in a %d MiB memory cgroup: %v of uid 65534's churn (new comms, duplicate and failed opens, failed execs)", limit>>20, d))

	// The load's directory and binary: the unprivileged user's to use.
	dir, err := os.MkdirTemp("", "once-churn-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	churner := filepath.Join(dir, "churner")
	data, err := os.ReadFile(testprog.Build(t, testprog.Churner))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(churner, data, 0o755); err != nil {
		t.Fatal(err)
	}
	load := filepath.Join(dir, "load")
	for _, p := range []string{dir, load} {
		if err := os.MkdirAll(p, 0o777); err != nil || os.Chmod(p, 0o777) != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}

	out := filepath.Join(t.TempDir(), "once.jsonl")
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-o":
			args[i+1] = out
		case "--metrics":
			args[i+1] = "127.0.0.1:0"
		}
	}
	cg := memoryCgroup(t, limit)
	sh := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec "$@"`, cg)
	w := startWatchCmd(t, exec.Command("/bin/sh", append([]string{"-c", sh, "sh", buildOnce(t)}, args...)...))

	cmd := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", churner, strconv.FormatInt(d.Milliseconds(), 10), "2", load)
	var made strings.Builder
	cmd.Stdout = &made
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var samples []int64 // RSS each second, MiB
	var dead error
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(time.Second)
		// A process the kernel killed is a zombie until it is waited
		// for: no VmRSS then.
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
		m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
		if m == nil {
			dead = fmt.Errorf("no VmRSS: gone")
			break
		}
		kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
		samples = append(samples, kb>>10)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the churn: %v", err)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	oom, _ := os.ReadFile(filepath.Join(cg, "memory.oom_control"))
	if dead == nil {
		dead = w.cmd.Process.Signal(os.Interrupt)
	}
	if dead != nil {
		w.cmd.Process.Signal(syscall.SIGKILL)
		w.cmd.Wait()
	}
	row.Inputs = strings.TrimSpace(made.String()) + " processes"
	row.Seen = fmt.Sprintf("RSS MiB each second: %v", condense(samples, 20))
	t.Logf("%s processes; once watch RSS MiB each second: %v", strings.TrimSpace(made.String()), samples)
	if dead != nil {
		t.Fatalf("once watch died after %d s (OOM-killed? %q): %v", len(samples), strings.Fields(string(oom)), dead)
	}
	w.stop(t, nil)
	hwm := int64(-1)
	if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
		hwm, _ = strconv.ParseInt(string(m[1]), 10, 64)
		hwm <<= 10
	}
	sum := tailSummary(t, out)
	row.Lost = sum["events_lost"]
	t.Logf("peak RSS %d MiB (bound %d MiB); %v images evicted, %v events lost", hwm>>20, churnBound>>20,
		sum["evicted"], sum["events_lost"])
	if hwm < 0 || hwm > churnBound {
		t.Errorf("peak RSS %d MiB, bound %d MiB", hwm>>20, churnBound>>20)
	}
	if len(samples) > 0 && slices.Max(samples) > churnBound>>20 {
		t.Errorf("RSS reached %d MiB, bound %d MiB", slices.Max(samples), churnBound>>20)
	}
	if n, _ := sum["failed_opens"].(float64); n == 0 {
		t.Errorf("no failed opens in the last summary: the churn was not seen")
	}
}

// tailSummary is the last summary line of a JSON lines file, read from
// its last MiBs: the churn's findings make the file too big to read whole.
func tailSummary(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	off := max(fi.Size()-8<<20, 0)
	data := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil {
		t.Fatal(err)
	}
	if off > 0 {
		data = data[bytes.IndexByte(data, '\n')+1:]
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	}
	var last map[string]any
	for _, m := range jsonLines(t, data) {
		if m["type"] == "summary" {
			last = m
		}
	}
	if last == nil {
		t.Fatalf("no summary line at the end of %s", path)
	}
	return last
}

// TestMemoryLimit: once watch's Go soft limit, as its metrics show it:
// the memory cgroup's limit less the headroom, a larger ring's pages
// less too, GOMEMLIMIT when set, and --memory-limit over both.
func TestMemoryLimit(t *testing.T) {
	testprog.RequireRoot(t)
	cg := memoryCgroup(t, floodMemoryLimit)
	bin := buildOnce(t)
	for _, c := range []struct {
		name string
		env  string
		args []string
		want int64
	}{
		{name: "the cgroup's", want: floodMemoryLimit - memlimit.Headroom},
		{name: "a larger ring", args: []string{"--ring-size", "33554432"}, want: floodMemoryLimit - memlimit.Headroom - 24<<20},
		{name: "GOMEMLIMIT", env: "150MiB", want: 150 << 20},
		{name: "the flag", env: "150MiB", args: []string{"--memory-limit", "100M"}, want: 100 << 20},
		{name: "none", args: []string{"--memory-limit", "none"}, want: memlimit.None},
	} {
		t.Run(c.name, func(t *testing.T) {
			sh := fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec "$@"`, cg)
			args := append([]string{"-c", sh, "sh", bin, "watch", "--format", "json", "-o", filepath.Join(t.TempDir(), "w.jsonl"),
				"--metrics", "127.0.0.1:0", "--comm", "nothing-at-all"}, c.args...)
			cmd := exec.Command("/bin/sh", args...)
			cmd.Env = append(os.Environ(), "GOMEMLIMIT="+c.env)
			w := startWatchCmd(t, cmd)
			body := scrape(t, metricsURL(t, w))
			w.stop(t, os.Interrupt)
			m := regexp.MustCompile(`(?m)^go_gc_gomemlimit_bytes (\S+)$`).FindStringSubmatch(body)
			if m == nil {
				t.Fatal("no go_gc_gomemlimit_bytes in the metrics")
			}
			got, err := strconv.ParseFloat(m[1], 64)
			if err != nil || int64(got) != c.want && !(c.want == memlimit.None && got >= float64(memlimit.None)) {
				t.Errorf("the Go memory limit is %s, want %d", m[1], c.want)
			}
		})
	}
}
