package privdrop

import (
	"errors"
	"os/user"
	"strings"
	"testing"
)

func TestFromSudo(t *testing.T) {
	users := map[string]*user.User{
		"alice":  {Username: "alice", Uid: "1000", Gid: "1000"},
		"nobody": {Username: "nobody", Uid: "65534", Gid: "65534"},
		"root":   {Username: "root", Uid: "0", Gid: "0"},
	}
	byName := func(n string) (*user.User, error) {
		if u := users[n]; u != nil {
			return u, nil
		}
		return nil, user.UnknownUserError(n)
	}
	byID := func(id string) (*user.User, error) {
		for _, u := range users {
			if u.Uid == id {
				return u, nil
			}
		}
		return nil, errors.New("no such uid")
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		uid     int64  // -1: unchanged (nil)
		wantErr string // a part of the error; "" for none
	}{
		{"not under sudo", nil, -1, ""},
		{"sudo", map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000", "SUDO_USER": "alice"}, 1000, ""},
		{"sudo run by root", map[string]string{"SUDO_UID": "0", "SUDO_GID": "0", "SUDO_USER": "root"}, -1, ""},
		{"a user without a passwd entry", map[string]string{"SUDO_UID": "4242", "SUDO_GID": "4242", "SUDO_USER": "#4242"}, 4242, ""},
		{"no SUDO_USER", map[string]string{"SUDO_UID": "1000", "SUDO_GID": "1000"}, 1000, ""},
		{"only SUDO_USER", map[string]string{"SUDO_USER": "nobody"}, 0, "only SUDO_USER is set"},
		{"no SUDO_GID", map[string]string{"SUDO_UID": "1000", "SUDO_USER": "alice"}, 0, "only SUDO_UID and SUDO_USER are set"},
		{"SUDO_USER naming another uid", map[string]string{"SUDO_UID": "0", "SUDO_GID": "1000", "SUDO_USER": "nobody"}, 0, `SUDO_USER="nobody" is uid "65534", SUDO_UID="0"`},
		{"a garbage SUDO_UID alone", map[string]string{"SUDO_UID": "abc"}, 0, `SUDO_UID="abc": not a decimal id`},
		{"a garbage SUDO_GID", map[string]string{"SUDO_UID": "1000", "SUDO_GID": "-1"}, 0, `SUDO_GID="-1": not a decimal id`},
		{"(uid_t)-1", map[string]string{"SUDO_UID": "4294967295", "SUDO_GID": "1"}, 0, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			cred, err := fromSudo(lookup, byName, byID)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "refusing to run the command as root") {
					t.Fatalf("error %v, want one saying %q and refusing", err, tc.wantErr)
				}
				if cred != nil {
					t.Errorf("a credential %+v with the error", cred)
				}
			case err != nil:
				t.Fatalf("error %v", err)
			case tc.uid < 0 && cred != nil:
				t.Errorf("credential %+v, want none", cred)
			case tc.uid >= 0 && (cred == nil || int64(cred.Uid) != tc.uid):
				t.Errorf("credential %+v, want uid %d", cred, tc.uid)
			}
		})
	}
}
