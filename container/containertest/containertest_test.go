package containertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Run gives a running container in the cgroups asked for, with the
// annotations in its state; Stop leaves no state, process or cgroup.
func TestRunAndStop(t *testing.T) {
	for _, rt := range []string{"runc", "crun"} {
		t.Run(rt, func(t *testing.T) {
			c := Run(t, Options{Runtime: rt, Args: []string{"sleep", "30"}})
			b, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/cgroup")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "0::"+c.CgroupsPath+"\n") {
				t.Errorf("pid %d not in %s:\n%s", c.Pid, c.CgroupsPath, b)
			}
			id, err := CgroupID(c.Pid)
			if err != nil || id <= 1 {
				t.Errorf("CgroupID: %d, %v", id, err)
			}
			state := filepath.Join("/run", rt, c.ID)
			if _, err := os.Stat(state); err != nil {
				t.Errorf("no state: %v", err)
			}
			c.Stop()
			if alive(c.Pid) {
				t.Errorf("pid %d still running", c.Pid)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("state %s left: %v", state, err)
			}
			top := "/" + strings.Split(c.CgroupsPath, "/")[1]
			if !strings.HasPrefix(top, "/containertest-") {
				t.Errorf("cgroupsPath %s not below a cgroup of its own", c.CgroupsPath)
			}
			for _, m := range cgroupMounts() {
				if _, err := os.Stat(filepath.Join(m.point, top)); !os.IsNotExist(err) {
					t.Errorf("cgroup %s left in %s: %v", top, m.point, err)
				}
			}
		})
	}
}
