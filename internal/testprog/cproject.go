package testprog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CProjectDirs is the include directories of the project CProject writes,
// in the order the Makefile passes them to the compiler.
var CProjectDirs = []string{"include/core", "include/util", "include/io", "include/app"}

// CProject writes, in a new temporary directory, a small C project of the
// shape a real one has: nine source files whose headers sit behind four -I
// directories (each header in one of them, so the compiler's search misses
// in the ones before it), one Makefile linking them into one program. It
// returns the directory: `make -s -j2` there builds it.
func CProject(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One header per include directory and module; each source includes
	// every header, so each compile searches all four directories.
	modules := []string{"core", "util", "io", "app"}
	var includes strings.Builder
	includes.WriteString("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n")
	for i, m := range modules {
		guard := strings.ToUpper(m) + "_H"
		write(filepath.Join(CProjectDirs[i], m+".h"), fmt.Sprintf(
			"#ifndef %s\n#define %s\n#include <stddef.h>\nint %s_value(int x);\n#endif\n", guard, guard, m))
		fmt.Fprintf(&includes, "#include \"%s.h\"\n", m)
	}
	var objs []string
	for i := 1; i <= 9; i++ {
		name := fmt.Sprintf("src/part%d.c", i)
		body := fmt.Sprintf("int part%d(int x) { return x + %d; }\n", i, i)
		if i <= len(modules) {
			body += fmt.Sprintf("int %s_value(int x) { return part%d(x) * 2; }\n", modules[i-1], i)
		}
		if i == 9 {
			body += "int main(void) {\n\tint s = core_value(1) + util_value(2) + io_value(3) + app_value(4);\n" +
				"\tprintf(\"%d\\n\", s);\n\treturn 0;\n}\n"
		}
		write(name, includes.String()+body)
		objs = append(objs, fmt.Sprintf("src/part%d.o", i))
	}
	var flags []string
	for _, d := range CProjectDirs {
		flags = append(flags, "-I"+d)
	}
	write("Makefile", fmt.Sprintf(`CFLAGS = -O0 %s
OBJS = %s

prog: $(OBJS)
	$(CC) -o $@ $(OBJS)

%%.o: %%.c
	$(CC) $(CFLAGS) -c -o $@ $<
`, strings.Join(flags, " "), strings.Join(objs, " ")))
	return dir
}
