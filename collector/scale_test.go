package collector

import "testing"

func TestScaledNs(t *testing.T) {
	for _, c := range []struct {
		name                               string
		n, timed, timedNs, allTimed, allNs uint64
		want                               uint64
	}{
		{"every one timed", 3, 3, 300, 3, 300, 300},
		{"one in 8 timed", 16, 2, 200, 2, 200, 1600},
		{"none new timed: the mean so far", 5, 0, 0, 4, 400, 500},
		{"never timed", 5, 0, 0, 0, 0, 0},
		{"nothing new", 0, 0, 0, 4, 400, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := scaledNs(c.n, c.timed, c.timedNs, c.allTimed, c.allNs); got != c.want {
				t.Errorf("scaledNs = %d, want %d", got, c.want)
			}
		})
	}
}
