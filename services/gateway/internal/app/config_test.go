package app

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/authtoken"
	"github.com/svc-code/svc-code/libs/configfile"
)

// A host profile gives the gateway its own config file and Redis prefix, so
// that two profiles never share credentials or epochs.
func TestLoadConfigProfile(t *testing.T) {
	tests := []struct {
		name                   string
		env                    map[string]string
		wantConfig, wantPrefix string
	}{
		{"default", map[string]string{"HOME": "/h"}, "/h/.config/svc-code/config.yaml", "svc:"},
		{"profile", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work"}, "/h/.config/svc-code/profiles/work/config.yaml", "svc-work:"},
		{"explicit", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work", "SVC_CONFIG": "/c.yaml", "REDIS_PREFIX": "p:"}, "/c.yaml", "p:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ConfigPath != tt.wantConfig || cfg.RedisPrefix != tt.wantPrefix {
				t.Errorf("got config %q prefix %q, want %q %q", cfg.ConfigPath, cfg.RedisPrefix, tt.wantConfig, tt.wantPrefix)
			}
		})
	}
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "a/b"}[k]
	}); err == nil {
		t.Error("LoadConfig with profile a/b: want an error")
	}
}

// With SVC_PASSWORD_OUT (make run sets it), a generated first password goes
// to that file, mode 0600, and never to stderr, which make run keeps in the
// gateway's log where agents can read it.
func TestFirstPasswordGoesToItsFile(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "c", FirstPasswordFile)
	cfg, out := runFirstStart(t, dir, map[string]string{"SVC_PASSWORD_OUT": pwFile})
	waitFor(t, 5*time.Second, "the notice naming the password file", func() bool { return strings.Contains(out.String(), pwFile) })
	b, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(b))
	if st, _ := os.Stat(pwFile); st.Mode().Perm() != 0o600 {
		t.Errorf("%s mode = %v, want 0600", pwFile, st.Mode().Perm())
	}
	d, err := configfile.New(cfg.ConfigPath).Read()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := d.String("password_hash")
	if ok, err := authtoken.VerifyPassword(h, pw); !ok || err != nil {
		t.Errorf("the file's password %q does not match the stored hash", pw)
	}
	if strings.Contains(out.String(), pw) {
		t.Errorf("stderr shows the password: %q", out.String())
	}

	// A new password voids the file's: passwd removes it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.WriteString("another-long-password\n")
	_ = w.Close()
	defer r.Close()
	if err := Passwd(context.Background(), cfg, r, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pwFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after passwd, %s: %v, want it gone", pwFile, err)
	}
}

func TestPasswordOutMustBeAbsolute(t *testing.T) {
	if _, err := LoadConfig(func(k string) string {
		return map[string]string{"HOME": "/h", "SVC_PASSWORD_OUT": "rel/pw"}[k]
	}); err == nil {
		t.Error("LoadConfig with a relative SVC_PASSWORD_OUT: want an error")
	}
}
