// Package deploy holds the Kubernetes manifests (namespace.yaml,
// daemonset.yaml) and the Dockerfile that run `once watch` on every node;
// docs/deploy.md explains them. This test keeps their security properties
// from drifting: any change that widens what the pod may do fails here
// first, and has to be made here too, deliberately.
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/oncetool/once/internal/memlimit"
)

const (
	namespace = "once-system"
	dsName    = "once"
	// logDir is the one hostPath the pod may write: the JSON lines.
	logDir = "/var/log/once"
)

// allowedCaps is the allow-list of capabilities a container may add,
// without the CAP_ prefix. once needs both (its preflight refuses to start
// otherwise): BPF for bpf(), PERFMON for loading tracing programs and
// opening the tracepoints. Widening it is a security decision: explain it
// in daemonset.yaml and docs/deploy.md.
var allowedCaps = []string{"BPF", "PERFMON"}

// requiredHostPaths are the node paths once needs and where it expects
// them in the container (the same place: that is where once and
// cilium/ebpf look).
var requiredHostPaths = map[string]string{
	"/sys/kernel/btf":     "/sys/kernel/btf",
	"/sys/kernel/tracing": "/sys/kernel/tracing",
	"/sys/fs/cgroup":      "/sys/fs/cgroup",
	logDir:                logDir,
}

// fixture is what the checks read: every YAML file of the directory by
// name, and the Dockerfile.
type fixture struct {
	yaml       map[string][]byte
	dockerfile []byte
}

func loadFixture(t *testing.T, dir string) fixture {
	t.Helper()
	fx := fixture{yaml: map[string][]byte{}}
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		names, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			fx.yaml[filepath.Base(name)] = data
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	fx.dockerfile = data
	return fx
}

// TestManifests checks the files as committed.
func TestManifests(t *testing.T) {
	fx := loadFixture(t, ".")
	for _, want := range []string{"namespace.yaml", "daemonset.yaml"} {
		if _, ok := fx.yaml[want]; !ok {
			t.Errorf("deploy/%s is missing", want)
		}
	}
	for _, p := range check(fx) {
		t.Error(p)
	}
}

// doc is one YAML document of a file.
type doc struct {
	file  string
	index int // 1-based, within the file
	obj   map[string]any
}

func (d doc) String() string { return fmt.Sprintf("%s (document %d)", d.file, d.index) }

// splitDocs parses every document of a multi-document YAML file. Empty
// documents (only comments, a trailing ---) are skipped.
func splitDocs(file string, data []byte) ([]doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []doc
	for i := 1; ; i++ {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if obj != nil {
			docs = append(docs, doc{file: file, index: i, obj: obj})
		}
	}
}

type problems []string

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Sprintf(format, a...)) }

// check returns everything wrong with fx, one line each; none is good.
func check(fx fixture) []string {
	var p problems
	var docs []doc
	names := make([]string, 0, len(fx.yaml))
	for name := range fx.yaml {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d, err := splitDocs(name, fx.yaml[name])
		if err != nil {
			p.add("%v", err)
			continue
		}
		if len(d) == 0 {
			p.add("%s: no YAML document", name)
		}
		docs = append(docs, d...)
	}

	var daemonSets []doc
	haveNamespace := false
	for _, d := range docs {
		apiVersion, _ := d.obj["apiVersion"].(string)
		kind, _ := d.obj["kind"].(string)
		meta, _ := d.obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		ns, _ := meta["namespace"].(string)
		if apiVersion == "" {
			p.add("%v: no apiVersion", d)
		}
		if kind == "" {
			p.add("%v: no kind", d)
		}
		if name == "" {
			p.add("%v: no metadata.name", d)
		}
		switch {
		case kind == "Namespace":
			haveNamespace = haveNamespace || name == namespace
		case ns != namespace:
			p.add("%v: %s %q is in namespace %q, want %q", d, kind, name, ns, namespace)
		}
		// Nothing anywhere may be privileged, whatever the kind or field
		// path (containers, initContainers, ephemeral containers...).
		walk(d.obj, "", func(where string, key string, v any) {
			if key == "privileged" && v != false {
				p.add("%v: %s: privileged is %v, must be false or absent", d, where, v)
			}
		})
		if kind == "DaemonSet" {
			daemonSets = append(daemonSets, d)
		}
	}
	if !haveNamespace {
		p.add("no Namespace %q among the manifests", namespace)
	}
	if len(daemonSets) != 1 {
		p.add("want exactly one DaemonSet, found %d", len(daemonSets))
	}
	for _, d := range daemonSets {
		checkDaemonSet(&p, d)
	}
	checkDockerfile(&p, fx.dockerfile)
	return p
}

// walk calls f for every key of every mapping under v, with the path to it.
func walk(v any, where string, f func(where, key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			f(where, k, x)
			walk(x, where+"."+k, f)
		}
	case []any:
		for i, x := range v {
			walk(x, fmt.Sprintf("%s[%d]", where, i), f)
		}
	}
}

// The parts of a DaemonSet the checks read. yaml.v3 would lower-case
// untagged field names, so every field is tagged.
type daemonSet struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type objectMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type podSpec struct {
	HostPID                       *bool               `yaml:"hostPID"`
	HostNetwork                   *bool               `yaml:"hostNetwork"`
	HostIPC                       *bool               `yaml:"hostIPC"`
	TerminationGracePeriodSeconds *int64              `yaml:"terminationGracePeriodSeconds"`
	Tolerations                   []toleration        `yaml:"tolerations"`
	SecurityContext               *podSecurityContext `yaml:"securityContext"`
	InitContainers                []container         `yaml:"initContainers"`
	Containers                    []container         `yaml:"containers"`
	Volumes                       []volume            `yaml:"volumes"`
}

type toleration struct {
	Key      string `yaml:"key"`
	Operator string `yaml:"operator"`
	Effect   string `yaml:"effect"`
}

type podSecurityContext struct {
	RunAsUser      *int64          `yaml:"runAsUser"`
	SeccompProfile *seccompProfile `yaml:"seccompProfile"`
}

type seccompProfile struct {
	Type string `yaml:"type"`
}

type securityContext struct {
	Privileged               *bool           `yaml:"privileged"`
	AllowPrivilegeEscalation *bool           `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool           `yaml:"readOnlyRootFilesystem"`
	RunAsUser                *int64          `yaml:"runAsUser"`
	SeccompProfile           *seccompProfile `yaml:"seccompProfile"`
	Capabilities             *struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type container struct {
	Name           string          `yaml:"name"`
	Image          string          `yaml:"image"`
	Command        []string        `yaml:"command"`
	Args           []string        `yaml:"args"`
	Ports          []containerPort `yaml:"ports"`
	LivenessProbe  *probe          `yaml:"livenessProbe"`
	ReadinessProbe *probe          `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]any `yaml:"requests"`
		Limits   map[string]any `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *securityContext `yaml:"securityContext"`
	VolumeMounts    []volumeMount    `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a number or a port name
	} `yaml:"httpGet"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
	HostPort      int    `yaml:"hostPort"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type volume struct {
	Name     string `yaml:"name"`
	HostPath *struct {
		Path string `yaml:"path"`
		Type string `yaml:"type"`
	} `yaml:"hostPath"`
}

func checkDaemonSet(p *problems, d doc) {
	// Round-trip the generic document into the typed view.
	var ds daemonSet
	if data, err := yaml.Marshal(d.obj); err != nil {
		p.add("%v: %v", d, err)
		return
	} else if err := yaml.Unmarshal(data, &ds); err != nil {
		p.add("%v: %v", d, err)
		return
	}
	if ds.Metadata.Name != dsName {
		p.add("%v: DaemonSet is named %q, want %q", d, ds.Metadata.Name, dsName)
	}
	tmpl := ds.Spec.Template
	if len(ds.Spec.Selector.MatchLabels) == 0 {
		p.add("%v: spec.selector.matchLabels is empty", d)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if tmpl.Metadata.Labels[k] != v {
			p.add("%v: the pod template lacks the selector's label %s=%s", d, k, v)
		}
	}

	spec := tmpl.Spec
	if spec.HostPID == nil || !*spec.HostPID {
		p.add("%v: hostPID must be true (reports carry host pids)", d)
	}
	if spec.HostNetwork != nil && *spec.HostNetwork {
		p.add("%v: hostNetwork must be false or absent", d)
	}
	if spec.HostIPC != nil && *spec.HostIPC {
		p.add("%v: hostIPC must be false or absent", d)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= 0 {
		p.add("%v: terminationGracePeriodSeconds must be set (once flushes its summary on SIGTERM)", d)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(t toleration) bool {
		return t.Operator == "Exists" && t.Key == "" && t.Effect == ""
	}) {
		p.add("%v: no toleration {operator: Exists}: the DaemonSet would skip tainted nodes", d)
	}

	volumes := map[string]volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var podRunAsUser *int64
	var podSeccomp *seccompProfile
	if sc := spec.SecurityContext; sc != nil {
		podRunAsUser, podSeccomp = sc.RunAsUser, sc.SeccompProfile
	}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for _, c := range all {
		checkContainerSecurity(p, d, c, podRunAsUser, podSeccomp)
		checkMounts(p, d, c, volumes)
	}

	i := slices.IndexFunc(spec.Containers, func(c container) bool { return c.Name == dsName })
	if i < 0 {
		p.add("%v: no container named %q", d, dsName)
		return
	}
	checkOnce(p, d, spec.Containers[i], tmpl.Metadata.Annotations, volumes)
}

// normCap spells a capability as the allow-list does: upper case, no CAP_.
func normCap(c string) string {
	return strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
}

func checkContainerSecurity(p *problems, d doc, c container, podRunAsUser *int64, podSeccomp *seccompProfile) {
	sc := c.SecurityContext
	if sc == nil {
		p.add("%v: container %q has no securityContext", d, c.Name)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		p.add("%v: container %q: allowPrivilegeEscalation must be false", d, c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p.add("%v: container %q: readOnlyRootFilesystem must be true", d, c.Name)
	}
	seccomp := podSeccomp
	if sc.SeccompProfile != nil {
		seccomp = sc.SeccompProfile
	}
	switch {
	case seccomp == nil:
		p.add("%v: container %q: no seccompProfile (the kubelet's default is Unconfined); want RuntimeDefault or Localhost", d, c.Name)
	case seccomp.Type != "RuntimeDefault" && seccomp.Type != "Localhost":
		p.add("%v: container %q: seccompProfile %q, want RuntimeDefault or Localhost", d, c.Name, seccomp.Type)
	}
	if sc.Capabilities == nil {
		p.add("%v: container %q: no capabilities (drop ALL, add the allow-list)", d, c.Name)
		return
	}
	if !slices.ContainsFunc(sc.Capabilities.Drop, func(s string) bool { return normCap(s) == "ALL" }) {
		p.add("%v: container %q: capabilities.drop must contain ALL", d, c.Name)
	}
	for _, a := range sc.Capabilities.Add {
		if !slices.Contains(allowedCaps, normCap(a)) {
			p.add("%v: container %q: capability %s is not in the allow-list %v", d, c.Name, a, allowedCaps)
		}
	}
	if len(sc.Capabilities.Add) > 0 {
		// Added capabilities are only effective for uid 0 (see
		// daemonset.yaml).
		uid := podRunAsUser
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if uid == nil || *uid != 0 {
			p.add("%v: container %q adds capabilities, so it must run as uid 0 (runAsUser: 0)", d, c.Name)
		}
	}
}

// checkMounts: every hostPath is mounted read-only, except the log
// directory.
func checkMounts(p *problems, d doc, c container, volumes map[string]volume) {
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			p.add("%v: container %q mounts %q, which is not a volume", d, c.Name, m.Name)
			continue
		}
		if v.HostPath == nil {
			continue
		}
		if path.Clean(v.HostPath.Path) == logDir {
			continue
		}
		if !m.ReadOnly {
			p.add("%v: container %q: hostPath %s (at %s) must be readOnly: only %s may be written",
				d, c.Name, v.HostPath.Path, m.MountPath, logDir)
		}
		hp := path.Clean(v.HostPath.Path)
		for _, sock := range runtimeSockets {
			if hp == sock || strings.HasPrefix(sock, hp+"/") || hp == "/" {
				p.add("%v: container %q: hostPath %s holds %s: a read-only mount does not stop connect() on a socket", d, c.Name, hp, sock)
				break
			}
		}
		if m.MountPath != v.HostPath.Path && slices.Contains(runtimeState, hp) {
			p.add("%v: container %q: runtime state %s mounted at %s: once looks for it at the node's own path", d, c.Name, hp, m.MountPath)
		}
	}
	for _, want := range runtimeState {
		found := false
		for _, m := range c.VolumeMounts {
			if v, ok := volumes[m.Name]; ok && v.HostPath != nil && path.Clean(v.HostPath.Path) == want {
				found = true
			}
		}
		if !found && c.Name == "once" {
			p.add("%v: container %q: the runtime state %s is not mounted: containers of that runtime would have no name", d, c.Name, want)
		}
	}
}

// runtimeSockets are the runtimes' API sockets: root on the node to
// whoever connects, so no hostPath may contain one.
var runtimeSockets = []string{
	"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
	"/run/docker.sock", "/var/run/docker.sock",
	"/run/crio/crio.sock", "/var/run/crio/crio.sock",
	"/run/podman/podman.sock",
}

// runtimeState are the state directories the container resolver reads
// (container.Default*Roots, narrowed to what it opens under each).
var runtimeState = []string{
	"/run/containerd/io.containerd.runtime.v2.task",
	"/run/containerd/runc",
	"/run/runc",
	"/run/crun",
	"/run/containers/storage/overlay-containers",
	"/var/lib/containers/storage/overlay-containers",
	"/var/lib/docker/containers",
}

// checkOnce checks the once container: its command line, that the metrics
// port is the same everywhere, its probe, resources and mounts.
func checkOnce(p *problems, d doc, c container, annotations map[string]string, volumes map[string]volume) {
	if c.Image == "" {
		p.add("%v: container %q has no image", d, c.Name)
	}
	if len(c.Command) > 0 && !slices.Equal(c.Command, []string{"/once"}) {
		p.add("%v: container %q: command %q overrides the image's /once entrypoint", d, c.Name, c.Command)
	}
	sc := c.SecurityContext
	if sc != nil && sc.Capabilities != nil {
		for _, want := range allowedCaps {
			if !slices.ContainsFunc(sc.Capabilities.Add, func(s string) bool { return normCap(s) == want }) {
				p.add("%v: container %q does not add %s, which once needs", d, c.Name, want)
			}
		}
	}

	args := c.Args
	if len(args) == 0 || args[0] != "watch" {
		p.add("%v: container %q: args must start with watch, got %q", d, c.Name, args)
	} else {
		args = args[1:]
	}
	if f, ok := flagValue(args, "format"); !ok || f != "json" {
		p.add("%v: container %q: args need --format json", d, c.Name)
	}

	// The output file must be on the writable log mount: the root
	// filesystem is read-only.
	if out, ok := flagValue(args, "o"); !ok {
		p.add("%v: container %q: args need -o %s/FILE", d, c.Name, logDir)
	} else if !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool {
		v := volumes[m.Name]
		return !m.ReadOnly && v.HostPath != nil && path.Clean(v.HostPath.Path) == logDir &&
			strings.HasPrefix(path.Clean(out), path.Clean(m.MountPath)+"/")
	}) {
		p.add("%v: container %q: -o %s is not under the writable hostPath mount of %s", d, c.Name, out, logDir)
	}

	for host, at := range requiredHostPaths {
		if !slices.ContainsFunc(c.VolumeMounts, func(m volumeMount) bool {
			v := volumes[m.Name]
			return v.HostPath != nil && path.Clean(v.HostPath.Path) == host && path.Clean(m.MountPath) == at
		}) {
			p.add("%v: container %q: the node's %s is not mounted at %s", d, c.Name, host, at)
		}
	}

	// One metrics port everywhere: flag, container port, annotation, probe.
	port := -1
	if addr, ok := flagValue(args, "metrics"); !ok {
		p.add("%v: container %q: args need --metrics", d, c.Name)
	} else if _, ps, err := net.SplitHostPort(addr); err != nil {
		p.add("%v: container %q: --metrics %q: %v", d, c.Name, addr, err)
	} else if port, err = strconv.Atoi(ps); err != nil || port <= 0 {
		p.add("%v: container %q: --metrics %q: bad port", d, c.Name, addr)
		port = -1
	}
	portName := ""
	if i := slices.IndexFunc(c.Ports, func(cp containerPort) bool { return cp.ContainerPort == port }); i < 0 {
		p.add("%v: container %q: no containerPort %d (the --metrics port)", d, c.Name, port)
	} else {
		portName = c.Ports[i].Name
	}
	for _, cp := range c.Ports {
		if cp.HostPort != 0 {
			p.add("%v: container %q: hostPort %d exposes the node's interfaces", d, c.Name, cp.HostPort)
		}
	}
	if v := annotations["prometheus.io/scrape"]; v != "true" {
		p.add(`%v: pod annotation prometheus.io/scrape is %q, want "true"`, d, v)
	}
	if v := annotations["prometheus.io/path"]; v != "/metrics" {
		p.add(`%v: pod annotation prometheus.io/path is %q, want "/metrics"`, d, v)
	}
	if v := annotations["prometheus.io/port"]; v != strconv.Itoa(port) {
		p.add("%v: pod annotation prometheus.io/port is %q, but --metrics and the containerPort say %d", d, v, port)
	}
	// /healthz, not /metrics: the metrics answer while the reader is
	// stuck, /healthz fails once it has not polled for --stall-timeout.
	for _, pr := range []struct {
		what string
		p    *probe
	}{{"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}} {
		switch lp := pr.p; {
		case lp == nil || lp.HTTPGet == nil:
			p.add("%v: container %q: no httpGet %s probe", d, c.Name, pr.what)
		default:
			if lp.HTTPGet.Path != "/healthz" {
				p.add("%v: container %q: %s probe path %q, want /healthz", d, c.Name, pr.what, lp.HTTPGet.Path)
			}
			if pp := lp.HTTPGet.Port; pp != port && (portName == "" || pp != portName) {
				p.add("%v: container %q: %s probe port %v is not the metrics port %d", d, c.Name, pr.what, pp, port)
			}
		}
	}

	for _, r := range []struct {
		what string
		m    map[string]any
		key  string
	}{
		{"limits", c.Resources.Limits, "memory"},
		{"requests", c.Resources.Requests, "memory"},
		{"requests", c.Resources.Requests, "cpu"},
	} {
		if v, ok := r.m[r.key]; !ok || fmt.Sprint(v) == "" {
			p.add("%v: container %q: resources.%s.%s must be set", d, c.Name, r.what, r.key)
		}
	}

	// The Go soft limit: set (the cgroup's own limit is not readable
	// through the node's /sys/fs/cgroup under cgroup v2), and below the
	// hard one by the headroom once measured for what is not Go's.
	hard, err := memlimit.Parse(fmt.Sprint(c.Resources.Limits["memory"]))
	if soft, ok := flagValue(args, "memory-limit"); !ok {
		p.add("%v: container %q: args need --memory-limit (resources.limits.memory less %d MiB)", d, c.Name, memlimit.Headroom>>20)
	} else if n, perr := memlimit.Parse(soft); perr != nil || err != nil || n > hard-memlimit.Headroom {
		p.add("%v: container %q: --memory-limit %s is not %d MiB below resources.limits.memory %v", d, c.Name, soft, memlimit.Headroom>>20, c.Resources.Limits["memory"])
	}
}

// flagValue returns the value of flag name in args as Go's flag package
// reads it (-name V, --name V, -name=V, --name=V; the last one wins).
func flagValue(args []string, name string) (string, bool) {
	var val string
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue // the value of a flag not asked about
		}
		n := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if k, v, ok := strings.Cut(n, "="); ok {
			if k == name {
				val, found = v, true
			}
			continue
		}
		if n == name && i+1 < len(args) {
			val, found = args[i+1], true
			i++
		}
	}
	return val, found
}

// dockerInstructions splits a Dockerfile into instructions: comments
// dropped, continuation lines joined.
func dockerInstructions(data []byte) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if strings.HasPrefix(t, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(t, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func checkDockerfile(p *problems, data []byte) {
	var stages [][]string // instructions by stage, FROM first
	for _, ins := range dockerInstructions(data) {
		if strings.HasPrefix(strings.ToUpper(ins), "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], ins)
		}
	}
	if len(stages) < 2 {
		p.add("Dockerfile: want a multi-stage build (builder, runtime), found %d stage(s)", len(stages))
		return
	}
	if !strings.Contains(stages[0][0], "golang:1.26") {
		p.add("Dockerfile: the builder is %q, want golang:1.26", stages[0][0])
	}
	built := false
	for _, stage := range stages[:len(stages)-1] {
		for _, ins := range stage {
			f := strings.Fields(ins)
			if strings.ToUpper(f[0]) == "RUN" && strings.Contains(ins, "go build") &&
				slices.Contains(f, "./cmd/once") && slices.Contains(f, "CGO_ENABLED=0") {
				built = true
			}
		}
	}
	if !built {
		p.add("Dockerfile: no builder step runs CGO_ENABLED=0 go build ... ./cmd/once")
	}

	final := stages[len(stages)-1]
	if from := final[0]; !strings.Contains(from, "distroless/static") &&
		!(strings.Contains(from, "debian") && strings.Contains(from, "slim")) {
		p.add("Dockerfile: the runtime image is %q, want distroless/static or debian slim", from)
	}
	var copies []string
	entrypoint := ""
	for _, ins := range final[1:] {
		switch f := strings.Fields(ins); strings.ToUpper(f[0]) {
		case "COPY", "ADD":
			copies = append(copies, ins)
		case "ENTRYPOINT":
			entrypoint = strings.TrimSpace(ins[len(f[0]):])
		}
	}
	if len(copies) != 1 || !strings.HasPrefix(copies[0], "COPY --from=") || !strings.HasSuffix(copies[0], " /once") {
		p.add("Dockerfile: the runtime stage must copy only the binary to /once, found %q", copies)
	}
	if entrypoint != `["/once"]` {
		p.add(`Dockerfile: ENTRYPOINT is %q, want ["/once"]`, entrypoint)
	}
}

// TestChecksCatchBreakage breaks the committed files one way at a time and
// expects check to say so: a check that cannot fail checks nothing.
func TestChecksCatchBreakage(t *testing.T) {
	type mutation struct {
		name string
		ds   func(t *testing.T, ds map[string]any) // edits the DaemonSet document
		text func(t *testing.T, fx *fixture)       // or edits files as text
		want string                                // a problem must contain it
	}
	pod := func(t *testing.T, ds map[string]any) map[string]any {
		return at(t, ds, "spec", "template", "spec")
	}
	once := func(t *testing.T, ds map[string]any) map[string]any {
		return at(t, ds, "spec", "template", "spec", "containers", 0)
	}
	secCtx := func(t *testing.T, ds map[string]any) map[string]any {
		return at(t, once(t, ds), "securityContext")
	}
	caps := func(t *testing.T, ds map[string]any) map[string]any {
		return at(t, secCtx(t, ds), "capabilities")
	}
	annotations := func(t *testing.T, ds map[string]any) map[string]any {
		return at(t, ds, "spec", "template", "metadata", "annotations")
	}
	mount := func(t *testing.T, ds map[string]any, name string) map[string]any {
		for _, m := range once(t, ds)["volumeMounts"].([]any) {
			if m := m.(map[string]any); m["name"] == name {
				return m
			}
		}
		t.Fatalf("no volume mount %q", name)
		return nil
	}
	setArg := func(t *testing.T, ds map[string]any, old, new string) {
		args := once(t, ds)["args"].([]any)
		i := slices.Index(args, any(old))
		if i < 0 {
			t.Fatalf("args %q have no %q", args, old)
		}
		args[i] = new
	}

	mutations := []mutation{
		{name: "hostPID false", want: "hostPID must be true",
			ds: func(t *testing.T, ds map[string]any) { pod(t, ds)["hostPID"] = false }},
		{name: "hostPID absent", want: "hostPID must be true",
			ds: func(t *testing.T, ds map[string]any) { delete(pod(t, ds), "hostPID") }},
		{name: "hostNetwork", want: "hostNetwork must be false",
			ds: func(t *testing.T, ds map[string]any) { pod(t, ds)["hostNetwork"] = true }},
		{name: "hostIPC", want: "hostIPC must be false",
			ds: func(t *testing.T, ds map[string]any) { pod(t, ds)["hostIPC"] = true }},
		{name: "privileged", want: "privileged is true",
			ds: func(t *testing.T, ds map[string]any) { secCtx(t, ds)["privileged"] = true }},
		{name: "privileged init container", want: "initContainers[0].securityContext: privileged is true",
			ds: func(t *testing.T, ds map[string]any) {
				pod(t, ds)["initContainers"] = []any{map[string]any{
					"name": "setup", "image": "busybox",
					"securityContext": map[string]any{"privileged": true},
				}}
			}},
		{name: "drop ALL removed", want: "drop must contain ALL",
			ds: func(t *testing.T, ds map[string]any) { caps(t, ds)["drop"] = []any{"NET_RAW"} }},
		{name: "add SYS_ADMIN", want: "SYS_ADMIN is not in the allow-list",
			ds: func(t *testing.T, ds map[string]any) {
				caps(t, ds)["add"] = append(caps(t, ds)["add"].([]any), "SYS_ADMIN")
			}},
		{name: "add CAP_SYS_PTRACE", want: "CAP_SYS_PTRACE is not in the allow-list",
			ds: func(t *testing.T, ds map[string]any) {
				caps(t, ds)["add"] = append(caps(t, ds)["add"].([]any), "CAP_SYS_PTRACE")
			}},
		{name: "add SYS_RESOURCE", want: "SYS_RESOURCE is not in the allow-list",
			ds: func(t *testing.T, ds map[string]any) {
				caps(t, ds)["add"] = append(caps(t, ds)["add"].([]any), "SYS_RESOURCE")
			}},
		{name: "PERFMON missing", want: "does not add PERFMON",
			ds: func(t *testing.T, ds map[string]any) { caps(t, ds)["add"] = []any{"BPF"} }},
		{name: "no capabilities", want: "no capabilities",
			ds: func(t *testing.T, ds map[string]any) { delete(secCtx(t, ds), "capabilities") }},
		{name: "allowPrivilegeEscalation", want: "allowPrivilegeEscalation must be false",
			ds: func(t *testing.T, ds map[string]any) { secCtx(t, ds)["allowPrivilegeEscalation"] = true }},
		{name: "readOnlyRootFilesystem absent", want: "readOnlyRootFilesystem must be true",
			ds: func(t *testing.T, ds map[string]any) { delete(secCtx(t, ds), "readOnlyRootFilesystem") }},
		{name: "seccomp Unconfined", want: `seccompProfile "Unconfined"`,
			ds: func(t *testing.T, ds map[string]any) {
				at(t, pod(t, ds), "securityContext", "seccompProfile")["type"] = "Unconfined"
			}},
		{name: "seccomp Unconfined in the container", want: `seccompProfile "Unconfined"`,
			ds: func(t *testing.T, ds map[string]any) {
				secCtx(t, ds)["seccompProfile"] = map[string]any{"type": "Unconfined"}
			}},
		{name: "seccomp absent", want: "no seccompProfile",
			ds: func(t *testing.T, ds map[string]any) { delete(pod(t, ds), "securityContext") }},
		{name: "non-root with capabilities", want: "must run as uid 0",
			ds: func(t *testing.T, ds map[string]any) { secCtx(t, ds)["runAsUser"] = 1000 }},
		{name: "port annotation", want: `prometheus.io/port is "9470"`,
			ds: func(t *testing.T, ds map[string]any) { annotations(t, ds)["prometheus.io/port"] = "9470" }},
		{name: "scrape annotation absent", want: "prometheus.io/scrape",
			ds: func(t *testing.T, ds map[string]any) { delete(annotations(t, ds), "prometheus.io/scrape") }},
		{name: "path annotation", want: "prometheus.io/path",
			ds: func(t *testing.T, ds map[string]any) { annotations(t, ds)["prometheus.io/path"] = "/" }},
		{name: "--metrics port", want: "no containerPort 9470",
			ds: func(t *testing.T, ds map[string]any) { setArg(t, ds, "0.0.0.0:9469", "0.0.0.0:9470") }},
		{name: "--metrics absent", want: "args need --metrics",
			ds: func(t *testing.T, ds map[string]any) {
				c := once(t, ds)
				args := c["args"].([]any)
				i := slices.Index(args, any("--metrics"))
				c["args"] = slices.Delete(args, i, i+2)
			}},
		{name: "container port", want: "no containerPort 9469",
			ds: func(t *testing.T, ds map[string]any) {
				at(t, once(t, ds), "ports", 0)["containerPort"] = 9470
			}},
		{name: "hostPort", want: "hostPort 9469",
			ds: func(t *testing.T, ds map[string]any) { at(t, once(t, ds), "ports", 0)["hostPort"] = 9469 }},
		{name: "liveness port", want: "liveness probe port 8080",
			ds: func(t *testing.T, ds map[string]any) {
				at(t, once(t, ds), "livenessProbe", "httpGet")["port"] = 8080
			}},
		{name: "liveness absent", want: "no httpGet liveness probe",
			ds: func(t *testing.T, ds map[string]any) { delete(once(t, ds), "livenessProbe") }},
		{name: "liveness on /metrics", want: `liveness probe path "/metrics", want /healthz`,
			ds: func(t *testing.T, ds map[string]any) {
				at(t, once(t, ds), "livenessProbe", "httpGet")["path"] = "/metrics"
			}},
		{name: "readiness absent", want: "no httpGet readiness probe",
			ds: func(t *testing.T, ds map[string]any) { delete(once(t, ds), "readinessProbe") }},
		{name: "readiness port", want: "readiness probe port 8080",
			ds: func(t *testing.T, ds map[string]any) {
				at(t, once(t, ds), "readinessProbe", "httpGet")["port"] = 8080
			}},
		{name: "tracefs writable", want: "hostPath /sys/kernel/tracing (at /sys/kernel/tracing) must be readOnly",
			ds: func(t *testing.T, ds map[string]any) { mount(t, ds, "tracefs")["readOnly"] = false }},
		{name: "btf readOnly absent", want: "hostPath /sys/kernel/btf (at /sys/kernel/btf) must be readOnly",
			ds: func(t *testing.T, ds map[string]any) { delete(mount(t, ds, "btf"), "readOnly") }},
		{name: "cgroup writable", want: "hostPath /sys/fs/cgroup (at /sys/fs/cgroup) must be readOnly",
			ds: func(t *testing.T, ds map[string]any) { delete(mount(t, ds, "cgroup"), "readOnly") }},
		{name: "new writable hostPath", want: "hostPath / (at /host) must be readOnly",
			ds: func(t *testing.T, ds map[string]any) {
				p := pod(t, ds)
				p["volumes"] = append(p["volumes"].([]any), map[string]any{
					"name": "root", "hostPath": map[string]any{"path": "/"}})
				c := once(t, ds)
				c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{
					"name": "root", "mountPath": "/host"})
			}},
		{name: "runtime root mounted", want: "hostPath /run/containerd holds /run/containerd/containerd.sock",
			ds: func(t *testing.T, ds map[string]any) {
				p := pod(t, ds)
				p["volumes"] = append(p["volumes"].([]any), map[string]any{
					"name": "ctrd", "hostPath": map[string]any{"path": "/run/containerd"}})
				c := once(t, ds)
				c["volumeMounts"] = append(c["volumeMounts"].([]any), map[string]any{
					"name": "ctrd", "mountPath": "/run/containerd", "readOnly": true})
			}},
		{name: "docker state not mounted", want: "the runtime state /var/lib/docker/containers is not mounted",
			ds: func(t *testing.T, ds map[string]any) {
				c := once(t, ds)
				var keep []any
				for _, m := range c["volumeMounts"].([]any) {
					if m.(map[string]any)["name"] != "docker-containers" {
						keep = append(keep, m)
					}
				}
				c["volumeMounts"] = keep
			}},
		{name: "runtime state elsewhere", want: "runtime state /run/runc mounted at /host/run/runc",
			ds: func(t *testing.T, ds map[string]any) { mount(t, ds, "runc")["mountPath"] = "/host/run/runc" }},
		{name: "cgroup not mounted", want: "the node's /sys/fs/cgroup is not mounted",
			ds: func(t *testing.T, ds map[string]any) {
				c := once(t, ds)
				c["volumeMounts"] = slices.DeleteFunc(c["volumeMounts"].([]any), func(m any) bool {
					return m.(map[string]any)["name"] == "cgroup"
				})
			}},
		{name: "output off the log mount", want: "is not under the writable hostPath mount",
			ds: func(t *testing.T, ds map[string]any) {
				setArg(t, ds, "/var/log/once/once.jsonl", "/tmp/once.jsonl")
			}},
		{name: "log mount read-only", want: "is not under the writable hostPath mount",
			ds: func(t *testing.T, ds map[string]any) { mount(t, ds, "log")["readOnly"] = true }},
		{name: "memory limit absent", want: "resources.limits.memory",
			ds: func(t *testing.T, ds map[string]any) {
				delete(at(t, once(t, ds), "resources", "limits"), "memory")
			}},
		{name: "memory-limit absent", want: "args need --memory-limit",
			ds: func(t *testing.T, ds map[string]any) {
				c := once(t, ds)
				args := c["args"].([]any)
				i := slices.Index(args, any("--memory-limit"))
				c["args"] = slices.Delete(args, i, i+2)
			}},
		{name: "memory-limit at the hard limit", want: "--memory-limit 256Mi is not 64 MiB below",
			ds: func(t *testing.T, ds map[string]any) { setArg(t, ds, "192Mi", "256Mi") }},
		{name: "memory-limit none", want: "--memory-limit none is not 64 MiB below",
			ds: func(t *testing.T, ds map[string]any) { setArg(t, ds, "192Mi", "none") }},
		{name: "cpu request absent", want: "resources.requests.cpu",
			ds: func(t *testing.T, ds map[string]any) {
				delete(at(t, once(t, ds), "resources", "requests"), "cpu")
			}},
		{name: "not watch", want: "args must start with watch",
			ds: func(t *testing.T, ds map[string]any) { setArg(t, ds, "watch", "run") }},
		{name: "format text", want: "args need --format json",
			ds: func(t *testing.T, ds map[string]any) { setArg(t, ds, "json", "text") }},
		{name: "command override", want: "overrides the image's /once entrypoint",
			ds: func(t *testing.T, ds map[string]any) { once(t, ds)["command"] = []any{"/bin/sh", "-c"} }},
		{name: "no tolerations", want: "no toleration {operator: Exists}",
			ds: func(t *testing.T, ds map[string]any) { delete(pod(t, ds), "tolerations") }},
		{name: "grace period absent", want: "terminationGracePeriodSeconds",
			ds: func(t *testing.T, ds map[string]any) { delete(pod(t, ds), "terminationGracePeriodSeconds") }},
		{name: "selector", want: "lacks the selector's label",
			ds: func(t *testing.T, ds map[string]any) {
				at(t, ds, "spec", "selector", "matchLabels")["app.kubernetes.io/name"] = "other"
			}},
		{name: "other namespace", want: `is in namespace "default"`,
			ds: func(t *testing.T, ds map[string]any) { at(t, ds, "metadata")["namespace"] = "default" }},
		{name: "DaemonSet without apiVersion", want: "daemonset.yaml (document 1): no apiVersion",
			ds: func(t *testing.T, ds map[string]any) { delete(ds, "apiVersion") }},

		{name: "second document without apiVersion", want: "namespace.yaml (document 2): no apiVersion",
			text: func(t *testing.T, fx *fixture) {
				fx.yaml["namespace.yaml"] = append(fx.yaml["namespace.yaml"],
					"---\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: once-system\n"...)
			}},
		{name: "second document without kind", want: "namespace.yaml (document 2): no kind",
			text: func(t *testing.T, fx *fixture) {
				fx.yaml["namespace.yaml"] = append(fx.yaml["namespace.yaml"],
					"---\napiVersion: v1\nmetadata:\n  name: extra\n  namespace: once-system\n"...)
			}},
		{name: "Namespace without name", want: "namespace.yaml (document 1): no metadata.name",
			text: func(t *testing.T, fx *fixture) {
				replace(t, fx.yaml, "namespace.yaml", "  name: once-system\n", "  generateName: once-\n")
			}},
		{name: "two DaemonSets", want: "want exactly one DaemonSet, found 2",
			text: func(t *testing.T, fx *fixture) {
				fx.yaml["extra.yaml"] = fx.yaml["daemonset.yaml"]
			}},
		{name: "not YAML", want: "extra.yaml: document 1",
			text: func(t *testing.T, fx *fixture) { fx.yaml["extra.yaml"] = []byte("kind: [\n") }},
		{name: "duplicate key", want: "already defined",
			text: func(t *testing.T, fx *fixture) {
				replace(t, fx.yaml, "daemonset.yaml", "      hostPID: true\n", "      hostPID: true\n      hostPID: false\n")
			}},

		{name: "Dockerfile builds another command", want: "./cmd/once",
			text: func(t *testing.T, fx *fixture) { replaceDockerfile(t, fx, "./cmd/once", "./cmd/refcp") }},
		{name: "Dockerfile with cgo", want: "CGO_ENABLED=0 go build",
			text: func(t *testing.T, fx *fixture) { replaceDockerfile(t, fx, "CGO_ENABLED=0", "CGO_ENABLED=1") }},
		{name: "Dockerfile entrypoint", want: "ENTRYPOINT",
			text: func(t *testing.T, fx *fixture) {
				replaceDockerfile(t, fx, `ENTRYPOINT ["/once"]`, `ENTRYPOINT ["/bin/sh"]`)
			}},
		{name: "Dockerfile copies more", want: "copy only the binary",
			text: func(t *testing.T, fx *fixture) {
				replaceDockerfile(t, fx, "COPY --from=build /out/once /once\n",
					"COPY --from=build /out/once /once\nCOPY . /src\n")
			}},
		{name: "Dockerfile runtime image", want: "the runtime image",
			text: func(t *testing.T, fx *fixture) {
				replaceDockerfile(t, fx, "FROM gcr.io/distroless/static-debian12", "FROM ubuntu:24.04")
			}},
		{name: "Dockerfile single stage", want: "multi-stage",
			text: func(t *testing.T, fx *fixture) { fx.dockerfile = []byte("FROM golang:1.26\nRUN go build ./cmd/once\n") }},
	}

	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			fx := loadFixture(t, ".")
			if m.ds != nil {
				editDaemonSet(t, &fx, m.ds)
			}
			if m.text != nil {
				m.text(t, &fx)
			}
			got := check(fx)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, m.want) }) {
				t.Errorf("no problem mentions %q; got %d:\n%s", m.want, len(got), strings.Join(got, "\n"))
			}
		})
	}
}

// editDaemonSet applies f to the DaemonSet document of daemonset.yaml and
// writes the file back (without its comments).
func editDaemonSet(t *testing.T, fx *fixture, f func(*testing.T, map[string]any)) {
	t.Helper()
	docs, err := splitDocs("daemonset.yaml", fx.yaml["daemonset.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	edited := false
	for _, d := range docs {
		if d.obj["kind"] == "DaemonSet" {
			f(t, d.obj)
			edited = true
		}
		data, err := yaml.Marshal(d.obj)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	if !edited {
		t.Fatal("daemonset.yaml has no DaemonSet")
	}
	fx.yaml["daemonset.yaml"] = out.Bytes()
}

// at returns the mapping at path under v: string keys index mappings, ints
// index lists.
func at(t *testing.T, v any, path ...any) map[string]any {
	t.Helper()
	for i, k := range path {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a mapping", path[:i])
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: not a list of more than %d", path[:i], k)
			}
			v = l[k]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v: not a mapping", path)
	}
	return m
}

func replace(t *testing.T, files map[string][]byte, name, old, new string) {
	t.Helper()
	if !bytes.Contains(files[name], []byte(old)) {
		t.Fatalf("%s has no %q: update this mutation", name, old)
	}
	files[name] = bytes.ReplaceAll(files[name], []byte(old), []byte(new))
}

func replaceDockerfile(t *testing.T, fx *fixture, old, new string) {
	t.Helper()
	files := map[string][]byte{"Dockerfile": fx.dockerfile}
	replace(t, files, "Dockerfile", old, new)
	fx.dockerfile = files["Dockerfile"]
}
