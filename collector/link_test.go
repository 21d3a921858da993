package collector

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/oncetool/once/bpf"
	"github.com/oncetool/once/internal/reltest"
	"github.com/oncetool/once/internal/testprog"

	"github.com/oncetool/once/detect"
)

func resolvedLink(t *testing.T) (*ebpf.CollectionSpec, *kernelLink) {
	t.Helper()
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatalf("kernel BTF: %v", err)
	}
	l, err := resolveLink(spec, kernel)
	if err != nil {
		t.Fatal(err)
	}
	return spec, l
}

// TestLinkFileRoundTrip: a link reads back as written, only under its own
// key, and a damaged file is refused, never half read.
func TestLinkFileRoundTrip(t *testing.T) {
	spec, l := resolvedLink(t)
	sites := 0
	for _, at := range linkSites(spec) {
		sites += len(at)
	}
	if sites == 0 || !l.Casts {
		t.Fatalf("%d link sites, casts %v: the object should have CO-RE relocations and bpf_rdonly_cast calls", sites, l.Casts)
	}
	key := [32]byte{1, 2, 3}
	data := l.marshal(key)
	got, err := unmarshalLink(data, key)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, l) {
		t.Fatal("link read back differs from the one written")
	}
	if _, err := unmarshalLink(data, [32]byte{9}); err == nil {
		t.Error("a link file was read under another key")
	}
	for _, cut := range []int{0, len(linkMagic), len(linkMagic) + 32, len(data) - 1} {
		if _, err := unmarshalLink(data[:cut], key); err == nil {
			t.Errorf("a link file cut at %d of %d bytes was read", cut, len(data))
		}
	}
	if _, err := unmarshalLink(append(slices.Clone(data), 0), key); err == nil {
		t.Error("a link file with a trailing byte was read")
	}
}

// TestLinkApplyChecksSites: a link is applied only to the object it was
// made for; one that would rewrite an instruction that is not a link site,
// or skip a site, leaves the spec untouched.
func TestLinkApplyChecksSites(t *testing.T) {
	spec, l := resolvedLink(t)
	clone := func() *kernelLink {
		c := &kernelLink{Casts: l.Casts, Fixes: map[string][]insFix{}}
		for name, f := range l.Fixes {
			c.Fixes[name] = slices.Clone(f)
		}
		return c
	}
	for name, mangle := range map[string]func(*kernelLink){
		"index moved": func(c *kernelLink) { c.Fixes["exit_open"][0].Index++ },
		"fix dropped": func(c *kernelLink) { c.Fixes["exit_open"] = c.Fixes["exit_open"][1:] },
		"program dropped": func(c *kernelLink) {
			delete(c.Fixes, "exit_open")
		},
		"program added": func(c *kernelLink) { c.Fixes["nope"] = nil },
	} {
		c := clone()
		mangle(c)
		before := slices.Clone(spec.Programs["exit_open"].Instructions)
		if err := c.apply(spec); err == nil {
			t.Errorf("%s: applied", name)
		}
		if !slices.Equal(before, spec.Programs["exit_open"].Instructions) {
			t.Errorf("%s: spec changed by a refused link", name)
		}
	}
	if err := clone().apply(spec); err != nil {
		t.Fatal(err)
	}
	for name, p := range spec.Programs {
		for i, ins := range p.Instructions {
			if btf.CORERelocationMetadata(&ins) != nil || ins.IsKfuncCall() && ins.Constant == -1 {
				t.Errorf("%s: instruction %d left unresolved: %v", name, i, ins)
			}
		}
	}
}

// TestLinkLoadsWhatCiliumWould: every program linked by once and loaded
// is, instruction for instruction as the kernel keeps it, the program
// cilium/ebpf loads when it links the object itself.
func TestLinkLoadsWhatCiliumWould(t *testing.T) {
	testprog.RequireRoot(t)
	spec, l := resolvedLink(t)
	if err := spec.Variables["btf_casts"].Set(uint32(1)); err != nil {
		t.Fatal(err)
	}
	mapsOnly := spec.Copy()
	mapsOnly.Programs = nil
	maps, err := ebpf.NewCollection(mapsOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	type ins struct {
		op       asm.OpCode
		dst, src asm.Register
		off      int16
		k        int64
	}
	load := func(s *ebpf.CollectionSpec) map[string][]ins {
		c, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: maps.Maps})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		out := map[string][]ins{}
		for name, p := range c.Programs {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			insns, err := info.Instructions()
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range insns {
				out[name] = append(out[name], ins{i.OpCode, i.Dst, i.Src, i.Offset, i.Constant})
			}
		}
		return out
	}
	byCilium := load(spec.Copy())
	linked := spec.Copy()
	if err := l.apply(linked); err != nil {
		t.Fatal(err)
	}
	byOnce := load(linked)
	if len(byCilium) != len(spec.Programs) {
		t.Fatalf("%d programs loaded, want %d", len(byCilium), len(spec.Programs))
	}
	for name, want := range byCilium {
		if len(want) == 0 || !slices.Equal(byOnce[name], want) {
			t.Errorf("%s: once's link loads other instructions than cilium/ebpf's", name)
		}
	}
}

// TestLinkCache: the first Open resolves the link and saves it; the next
// reads it and neither decodes the kernel's BTF (cilium/ebpf maps it to
// decode it, until the spec is collected) nor inflates types from it
// (task_struct's closure alone is some 25,000 allocations; a whole cached
// Open makes under 20,000 on Linux 6.18); and a tracer opened from the
// cache reports exactly what the opener did, across a fork and an exec
// (the sched programs, raw tracepoints then).
func TestLinkCache(t *testing.T) {
	testprog.RequireRoot(t)
	opener := testprog.Build(t, testprog.Opener)
	cache := filepath.Join(t.TempDir(), "cache")
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No collection, so no mapping is released, while this test looks.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	open := func() (tr *Tracer, allocs int64, decoded bool) {
		var before, after runtime.MemStats
		mapped := btfMappings(t)
		runtime.ReadMemStats(&before)
		tr, err := Open(Options{Tracked: true, SendOpensPerKind: detect.DefaultMaxCalls, LinkCacheDir: cache})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		for m := range btfMappings(t) {
			decoded = decoded || !mapped[m]
		}
		return tr, int64(after.Mallocs - before.Mallocs), decoded
	}
	first, resolving, decoded := open()
	first.Close()
	if first.link != linkStored {
		t.Fatalf("first Open: link %s, want %s", first.link, linkStored)
	}
	if !decoded {
		t.Fatalf("the first Open did not map %s: this test cannot tell whether it was decoded", btfPath)
	}
	tr, cached, decoded := open()
	defer tr.Close()
	if tr.link != linkCached {
		t.Fatalf("second Open: link %s, want %s", tr.link, linkCached)
	}
	if decoded {
		t.Errorf("Open with the link cached decoded the kernel's BTF")
	}
	t.Logf("Open: %d allocations resolving the link, %d with it cached", resolving, cached)
	if resolving-cached < 15000 {
		t.Errorf("Open made %d allocations resolving the link, %d with it cached: types were inflated anyway", resolving, cached)
	}
	if !tr.rawSched {
		t.Error("sched programs not loaded as raw tracepoints")
	}

	script := opener + " openat:" + f + " openat:" + f + "; " + opener + " open:" + f + " fail:missing"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := RunForTest(ctx, tr, exec.Command("/bin/sh", "-c", script), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	var counts []int
	failed := 0
	for _, p := range r.Processes {
		if p.Exe != opener {
			continue
		}
		for _, fo := range p.Opens {
			if fo.Dev == st.Dev && fo.Ino == st.Ino {
				counts = append(counts, fo.Count)
			}
		}
		failed += len(p.FailedOpens)
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{1, 2}) || failed != 1 {
		t.Errorf("opener processes: opens of f %v, failed spellings %d; want [1 2] and 1", counts, failed)
	}
	if r.Counters.Lost() != 0 {
		t.Errorf("lost %d", r.Counters.Lost())
	}
}

// TestLinkCacheOnlyPrivate: a cache anyone else can write is not read (what
// it holds would be loaded into the kernel), nor written into.
func TestLinkCacheOnlyPrivate(t *testing.T) {
	_, l := resolvedLink(t)
	key := [32]byte{7}
	good := filepath.Join(t.TempDir(), "c")
	if err := writeLink(good, key, l); err != nil {
		t.Fatal(err)
	}
	if _, err := readLink(good, key); err != nil {
		t.Fatalf("own cache refused: %v", err)
	}
	file := filepath.Join(good, linkFileName(key))

	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := writeLink(open, key, l); err == nil {
		t.Error("wrote into a world-writable directory")
	}
	if err := os.Rename(file, filepath.Join(open, linkFileName(key))); err != nil {
		t.Fatal(err)
	}
	if _, err := readLink(open, key); err == nil {
		t.Error("read from a world-writable directory")
	}
	if err := os.Rename(filepath.Join(open, linkFileName(key)), file); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := readLink(good, key); err == nil {
		t.Error("read a world-writable file")
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(file, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := readLink(good, key); err == nil {
			t.Error("read a file another user owns")
		}
		if err := os.Chown(file, 0, 0); err != nil {
			t.Fatal(err)
		}
	}

	real := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(file, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, file); err != nil {
		t.Fatal(err)
	}
	if _, err := readLink(good, key); err == nil {
		t.Error("followed a symlink")
	}
}

// btfMappings: the address ranges at which this process maps the kernel's
// BTF.
func btfMappings(t *testing.T) map[string]bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.HasSuffix(line, " "+btfPath) {
			out[strings.Fields(line)[0]] = true
		}
	}
	return out
}

// TestLinkPrune: the newest keptLinks links stay, the one just written
// among them, however old the others are.
func TestLinkPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	l := &kernelLink{Casts: true, Fixes: map[string][]insFix{"p": {{Index: 3}}}}
	base := time.Now().Add(-time.Hour)
	for i := range 12 {
		key := [32]byte{byte(i)}
		if err := writeLink(dir, key, l); err != nil {
			t.Fatal(err)
		}
		// Written in order, dated in order, except the last: the oldest.
		mod := base.Add(time.Duration(i) * time.Minute)
		if i == 11 {
			mod = base.Add(-time.Hour)
		}
		if err := os.Chtimes(filepath.Join(dir, linkFileName(key)), mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	var kept []int
	for i := range 12 {
		if _, err := readLink(dir, [32]byte{byte(i)}); err == nil {
			kept = append(kept, i)
		}
	}
	// Writing 11 kept the 7 newest others (4..10) and itself; backdating
	// it afterwards changed nothing.
	if want := []int{4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}

// TestLinkMissingKfunc: on a kernel without bpf_rdonly_cast (before 6.2)
// the link says so, poisons the calls, and the programs still load with
// btf_casts off: the verifier drops the poisoned calls as dead code.
func TestLinkMissingKfunc(t *testing.T) {
	testprog.RequireRoot(t)
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, p := range spec.Programs {
		for i, ins := range p.Instructions {
			if ins.IsKfuncCall() {
				p.Instructions[i] = ins.WithReference("once_test_no_such_kfunc")
				calls++
			}
		}
	}
	if calls == 0 {
		t.Fatal("no kfunc calls in the object")
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	l, err := resolveLink(spec, kernel)
	if err != nil {
		t.Fatal(err)
	}
	if l.Casts {
		t.Fatal("link says the kernel has a kfunc it does not")
	}
	if err := l.apply(spec); err != nil {
		t.Fatal(err)
	}
	poisoned := 0
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			if ins.IsKfuncCall() {
				t.Fatalf("kfunc call left: %v", ins)
			}
			if ins.IsBuiltinCall() && ins.Constant == kfuncPoison {
				poisoned++
			}
		}
	}
	if poisoned != calls {
		t.Errorf("%d calls poisoned, want %d", poisoned, calls)
	}
	if err := spec.Variables["btf_casts"].Set(uint32(0)); err != nil {
		t.Fatal(err)
	}
	schedAsTpBtf(spec) // as Open does without casts
	spec.Maps["events"].Key, spec.Maps["events"].Value = nil, nil
	c, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("load with the kfunc missing and btf_casts off: %+v", err)
	}
	c.Close()
}

// TestLinkCacheDistrust: a cache file damaged by one bit, or a FIFO in
// its place, is never used (nor hangs the start): Open resolves from the
// kernel's BTF and writes the file anew. A cached link is discarded on
// doubt (DiscardCachedLink).
func TestLinkCacheDistrust(t *testing.T) {
	testprog.RequireRoot(t)
	row := reltest.Record(t, "link cache: one bit flipped, truncated, a FIFO in its place; a cached link after a run that saw nothing")
	row.Inputs, row.Seen = "3 damaged cache files", "-"
	cache := filepath.Join(t.TempDir(), "cache")
	open := func() *Tracer {
		t.Helper()
		done := make(chan *Tracer, 1)
		go func() {
			tr, err := Open(Options{Tracked: true, SendOpensPerKind: detect.DefaultMaxCalls, LinkCacheDir: cache})
			if err != nil {
				t.Error(err)
			}
			done <- tr
		}()
		select {
		case tr := <-done:
			if tr == nil {
				t.FailNow()
			}
			return tr
		case <-time.After(time.Minute):
			t.Fatal("Open hangs")
			return nil
		}
	}
	tr := open()
	file := tr.linkFile
	tr.Close()
	if file == "" {
		t.Fatal("no link file")
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spoil func()
	}{
		{"one bit flipped", func() {
			bad := slices.Clone(good)
			bad[len(bad)/2] ^= 0x10
			if err := os.WriteFile(file, bad, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func() {
			if err := os.WriteFile(file, good[:len(good)-5], 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func() {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spoil()
			tr := open()
			defer tr.Close()
			if tr.link != linkStored {
				t.Errorf("link %s, want %s (resolved again, and saved)", tr.link, linkStored)
			}
			if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, good) {
				t.Errorf("the cache file was not rewritten whole (%v)", err)
			}
		})
	}
	row.Seen = "each resolved from the kernel's BTF and the file rewritten"
	tr = open()
	if tr.link != linkCached || !tr.DiscardCachedLink() {
		t.Errorf("link %s: a cached link must be discardable", tr.link)
	}
	tr.Close()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("DiscardCachedLink left %s (%v)", file, err)
	}
}

// TestLinkModuleTypes: where overlayfs and btrfs are modules, their types
// are in the modules' BTF, not vmlinux's: the link resolves them there,
// as it would have from vmlinux were they built in. The kernel here is
// split in two: its types the object names, less the modules' (the
// "vmlinux"), and those (the "module").
func TestLinkModuleTypes(t *testing.T) {
	spec, err := bpf.LoadOnce()
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatalf("kernel BTF: %v", err)
	}
	inModule := func(name string) bool {
		return strings.HasPrefix(name, "ovl_") || strings.HasPrefix(name, "btrfs_")
	}
	base, err := btf.NewBuilder(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := btf.NewBuilder(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var modNames []string
	for typ, err := range spec.Types.All() {
		if err != nil {
			t.Fatal(err)
		}
		st, ok := typ.(*btf.Struct)
		if !ok || st.Name == "" {
			continue
		}
		name, _, _ := strings.Cut(st.Name, "___") // flavours: ovl_inode___old
		kts, err := kernel.AnyTypesByName(name)
		if err != nil {
			continue // not in this kernel
		}
		b := base
		if inModule(name) {
			b = mod
			modNames = append(modNames, name)
		}
		for _, kt := range kts {
			if _, err := b.Add(kt); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Contains(modNames, "btrfs_inode") || !slices.Contains(modNames, "ovl_inode") {
		t.Skipf("this kernel lacks overlayfs's or btrfs's types (%v): nothing to split", modNames)
	}
	baseSpec, err := base.Spec()
	if err != nil {
		t.Fatal(err)
	}
	modSpec, err := mod.Spec()
	if err != nil {
		t.Fatal(err)
	}
	// Field offsets and existence only: a type's or a kfunc's ID is its
	// spec's.
	fixes := func(l *kernelLink) map[string][]insFix {
		out := map[string][]insFix{}
		for name, fs := range l.Fixes {
			for _, f := range fs {
				ins := &spec.Programs[name].Instructions[f.Index]
				r := btf.CORERelocationMetadata(ins)
				if ins.IsKfuncCall() || r != nil && strings.Contains(r.String(), "target_type_id") {
					continue
				}
				out[name] = append(out[name], f)
			}
		}
		return out
	}
	whole, err := resolveLink(spec, kernel)
	if err != nil {
		t.Fatal(err)
	}
	without, err := resolveLink(spec, baseSpec)
	if err != nil {
		t.Fatal(err)
	}
	split, err := resolveLink(spec, baseSpec, modSpec)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(fixes(without), fixes(whole)) {
		t.Fatal("the link without the module's types is the whole kernel's: the test proves nothing")
	}
	if fs, fw := fixes(split), fixes(whole); !reflect.DeepEqual(fs, fw) {
		for name := range fw {
			for i := range fw[name] {
				if i >= len(fs[name]) || fs[name][i] != fw[name][i] {
					t.Logf("%s: %+v, want %+v", name, fs[name][min(i, len(fs[name])-1)], fw[name][i])
					break
				}
			}
		}
		t.Error("the link with the module's BTF is not the one with its types in vmlinux")
	}
}

// TestLinkKeyModules: the link's key changes when a module once reads
// types of is loaded, or is another build.
func TestLinkKeyModules(t *testing.T) {
	if _, err := os.Stat(btfPath); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	dir := t.TempDir()
	old := btfDir
	btfDir = dir
	t.Cleanup(func() { btfDir = old })
	key := func() [32]byte {
		t.Helper()
		k, err := linkKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	none := key()
	if err := os.WriteFile(filepath.Join(dir, "btrfs"), []byte("one build"), 0o644); err != nil {
		t.Fatal(err)
	}
	one := key()
	if err := os.WriteFile(filepath.Join(dir, "btrfs"), []byte("another build"), 0o644); err != nil {
		t.Fatal(err)
	}
	another := key()
	if none == one || one == another || none == another {
		t.Errorf("keys: not loaded %x, one build %x, another %x: want three", none[:4], one[:4], another[:4])
	}
	if err := os.Remove(filepath.Join(dir, "btrfs")); err != nil {
		t.Fatal(err)
	}
	if key() != none {
		t.Error("the key without the module changed")
	}
}
