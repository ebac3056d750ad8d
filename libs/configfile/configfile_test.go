package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestUpdateKeepsUnknownKeysAndComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc-code", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := "# my settings\ntheme: dark # chosen by hand\nnested:\n  a: [1, 2]\nbearer_epoch: 3\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	f := New(path)
	if _, err := f.Update(func(d *Doc) error {
		d.SetString("api_token", "tok")
		d.SetInt("bearer_epoch", 4)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"# my settings", "theme: dark # chosen by hand", "a: [1, 2]", "bearer_epoch: 4", "\napi_token: tok\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lost %q:\n%s", want, got)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", st.Mode().Perm())
	}
}

func TestUpdateCreatesPrivateFileAndDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg", "svc-code", "config.yaml")
	if _, err := New(path).Update(func(d *Doc) error { d.SetInt("cookie_epoch", 0); return nil }); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	d, err := New(path).Read()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := d.Int("cookie_epoch"); err != nil || !ok || v != 0 {
		t.Errorf("cookie_epoch = %d %v %v", v, ok, err)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := New(path).Update(func(d *Doc) error {
				n, _, err := d.Int("counter")
				d.SetInt("counter", n+1)
				return err
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	d, err := New(path).Read()
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := d.Int("counter"); n != 20 {
		t.Errorf("counter = %d, want 20", n)
	}
}

func TestBadFiles(t *testing.T) {
	tests := map[string]string{
		"not a mapping": "- a\n- b\n",
		"broken yaml":   "a: [\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := New(path).Update(func(d *Doc) error { d.SetString("x", "y"); return nil }); err == nil {
				t.Fatal("want an error")
			}
			b, _ := os.ReadFile(path)
			if string(b) != content {
				t.Errorf("a failed update changed the file to %q", b)
			}
		})
	}
	d, err := parse("x", []byte("bearer_epoch: soon\nlist: {a: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Int("bearer_epoch"); err == nil {
		t.Error("want an error for a non-integer epoch")
	}
	if _, err := d.Strings("list"); err == nil {
		t.Error("want an error for a mapping where a list is expected")
	}
}

func TestDefaultPathRefusesABadProfile(t *testing.T) {
	got, err := DefaultPath(func(k string) string {
		return map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "../x"}[k]
	})
	if err == nil {
		t.Errorf("DefaultPath with profile ../x = %q, want an error", got)
	}
}

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"explicit", map[string]string{"SVC_CONFIG": "/etc/svc.yaml", "HOME": "/h"}, "/etc/svc.yaml"},
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/svc-code/config.yaml"},
		{"relative xdg ignored", map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/svc-code/config.yaml"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.config/svc-code/config.yaml"},
		{"profile", map[string]string{"HOME": "/h", "SVC_CODE_PROFILE": "work"}, "/h/.config/svc-code/profiles/work/config.yaml"},
		{"profile xdg", map[string]string{"XDG_CONFIG_HOME": "/x", "SVC_CODE_PROFILE": "work"}, "/x/svc-code/profiles/work/config.yaml"},
		{"explicit wins over profile", map[string]string{"SVC_CONFIG": "/etc/svc.yaml", "SVC_CODE_PROFILE": "work"}, "/etc/svc.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultPath(func(k string) string { return tt.env[k] })
			if err != nil || got != tt.want {
				t.Errorf("DefaultPath = %q %v, want %q", got, err, tt.want)
			}
		})
	}
}
