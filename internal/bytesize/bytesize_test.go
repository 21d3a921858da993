package bytesize

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"4096", 4096, true},
		{"0", 0, true},
		{"16M", 16 << 20, true},
		{"16m", 16 << 20, true},
		{"16MiB", 16 << 20, true},
		{"16 MiB", 16 << 20, true},
		{"16Mi", 16 << 20, true},
		{"16MB", 16 << 20, true},
		{"512K", 512 << 10, true},
		{"2G", 2 << 30, true},
		{"100B", 100, true},
		{"", 0, false},
		{"M", 0, false},
		{"-5M", 0, false},
		{"1.5M", 0, false},
		{"16X", 0, false},
		{"9999999999G", 0, false},
	} {
		got, err := Parse(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}
