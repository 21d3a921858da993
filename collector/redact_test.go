package collector

import (
	"regexp"
	"slices"
	"testing"
)

func TestRedactArg(t *testing.T) {
	// sha256("") = e3b0c442 98fc1c14 9afbf4c8 ...; sha256("abc") = ba7816bf 8f01cfea 414140de ...
	for in, want := range map[string]string{"": "sha256:e3b0c44298fc", "abc": "sha256:ba7816bf8f01"} {
		if got := RedactArg(in); got != want {
			t.Errorf("RedactArg(%q) = %q, want %q", in, got, want)
		}
	}
	argv := []string{"curl", "-H", "Authorization: Bearer xyz", ""}
	got := RedactCommand(argv)
	if got[0] != "curl" || argv[2] != "Authorization: Bearer xyz" {
		t.Errorf("RedactCommand changed argv[0] or its input: %q, %q", got, argv)
	}
	re := regexp.MustCompile(`^sha256:[0-9a-f]{12}$`)
	for _, a := range got[1:] {
		if !re.MatchString(a) {
			t.Errorf("argument %q not redacted", a)
		}
	}
	if RedactCommand(nil) != nil || !slices.Equal(RedactCommand([]string{"x"}), []string{"x"}) {
		t.Error("RedactCommand of nothing to redact")
	}
	if !sameArg(RedactArg("/b/s"), "/b/s") || !sameArg("/b/s", "/b/s") || sameArg(RedactArg("/b/t"), "/b/s") {
		t.Error("sameArg")
	}
}
