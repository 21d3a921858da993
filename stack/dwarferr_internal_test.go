package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptDWARFNoted: a binary built with -g whose DWARF is corrupt
// (gdb: "Dwarf Error: Cannot handle DW_FORM_<unknown: 85>") is not said
// to have "no line information (no -dbgsym)", as a binary built without
// -g is: its note says the DWARF could not be read, and why.
func TestCorruptDWARFNoted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		section string
		craft   func(b []byte) // the section's bytes, changed in place
		want    string
	}{
		{
			// The first abbreviation's first attribute's form: a
			// form no DWARF version has. The unit headers parse; the
			// entries that use it do not.
			name: "unknown form", section: ".debug_abbrev",
			craft: func(b []byte) { b[4] = 0x55 },
			want:  "its DWARF could not be read (",
		},
		{
			// The unit's version: dwarf.New refuses the whole section.
			name: "unknown version", section: ".debug_info",
			craft: func(b []byte) { b[4], b[5] = 0x42, 0 },
			want:  "its DWARF could not be read (",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileC(t, budgetProg, "-g")
			_, s := sectionHeader(t, p, tc.section)
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b := raw[s.Offset : s.Offset+s.Size]
			tc.craft(b)
			putAt(t, p, int64(s.Offset), b)
			m := openModule(t, p, nil)
			m.load(nil)
			n := m.note()
			if got := n.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "no -dbgsym") {
				t.Errorf("note %q, want it to say %q", got, tc.want)
			}
		})
	}
	// Built without -g: no DWARF is no error.
	p := compileC(t, budgetProg, "-g0")
	m := openModule(t, p, nil)
	m.load(nil)
	if n := m.note(); n.DWARFErr != "" {
		t.Errorf("no DWARF at all noted as an error: %q", n.DWARFErr)
	}
}

// TestDebugLinkStaleNoted: a stripped binary whose .gnu_debuglink names
// a file that a debug root does hold, but another build's (its CRC
// differs: gdb says "the debug information found in ... does not match"),
// is not said to have its debug file "in no debug directory": the note
// says the one there is another build's.
func TestDebugLinkStaleNoted(t *testing.T) {
	for _, stale := range []bool{true, false} {
		exe := compileC(t, budgetProg, "-g", "-Wl,--build-id=none")
		dir := filepath.Dir(exe)
		for _, args := range [][]string{
			{"objcopy", "--only-keep-debug", exe, exe + ".debug"},
			{"strip", "--strip-all", exe},
			{"objcopy", "--add-gnu-debuglink=" + exe + ".debug", exe},
		} {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
		}
		root := t.TempDir()
		if stale {
			// Same name under the root, other contents.
			moved := filepath.Join(root, dir, "p.debug")
			if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(exe + ".debug")
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-1] ^= 0xff
			if err := os.WriteFile(moved, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m := openModule(t, exe, nil)
		m.load([]string{root})
		got := m.note().String()
		want := "is in no debug directory"
		if stale {
			want = "p.debug (.gnu_debuglink) in the debug directory is another build's"
		}
		if !strings.Contains(got, want) {
			t.Errorf("stale %v: note %q, want %q in it", stale, got, want)
		}
	}
}
