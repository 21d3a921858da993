// Command reltable prints the reliability table: the RELIABILITY rows
// (see package reltest) of a test run as a Markdown table.
//
//	reltable < go-test-v-output
//	reltable -- go test -v -run ... ./pkg/...   # runs it, shows its output, then the table
//
// With a command it exits with the command's status. Either way it fails
// when a row's result is not pass, or when there is no row at all (the
// patterns matched nothing).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/oncetool/once/internal/reltest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	var log bytes.Buffer
	code := 0
	if len(args) == 0 {
		if _, err := io.Copy(&log, stdin); err != nil {
			fmt.Fprintf(stderr, "reltable: %v\n", err)
			return 2
		}
	} else {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout = io.MultiWriter(stdout, &log)
		cmd.Stderr = io.MultiWriter(stderr, &log)
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				fmt.Fprintf(stderr, "reltable: %v\n", err)
				return 2
			}
			code = ee.ExitCode()
		}
	}
	rows, err := reltest.Parse(&log)
	if err != nil {
		fmt.Fprintf(stderr, "reltable: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout)
	if err := reltest.Table(stdout, rows); err != nil {
		fmt.Fprintf(stderr, "reltable: %v\n", err)
		return 2
	}
	if len(rows) == 0 {
		fmt.Fprintln(stderr, "reltable: no RELIABILITY rows in the output")
		return max(code, 1)
	}
	for _, r := range rows {
		if r.Result != "pass" && code == 0 {
			fmt.Fprintf(stderr, "reltable: %s: %s\n", r.Case, r.Result)
			code = 1
		}
	}
	return code
}
