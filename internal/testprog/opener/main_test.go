package main

import (
	"os"
	"testing"

	"github.com/oncetool/once/internal/testprog"
)

// TestMain removes the helpers the tests built.
func TestMain(m *testing.M) { os.Exit(testprog.Main(m)) }
