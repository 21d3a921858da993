// A Go program whose three functions open one file.
package main

import (
	"os"
	"runtime"
)

// The main goroutine stays on the main thread, the one a test traces.
func init() { runtime.LockOSThread() }

//go:noinline
func checkForData(p string) {
	f, err := os.Open(p)
	if err != nil {
		panic(err)
	}
	f.Close()
}

//go:noinline
func checkSparse(p string) {
	f, err := os.Open(p)
	if err != nil {
		panic(err)
	}
	f.Close()
}

//go:noinline
func doCopy(p string) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		panic(err)
	}
}

//go:noinline
func copyFile(p string) {
	checkForData(p)
	checkSparse(p)
	doCopy(p)
}

func main() { copyFile(os.Args[1]) }
