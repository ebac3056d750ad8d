package datahome

import (
	"os"
	"path/filepath"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDir(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"override", map[string]string{"SVC_CODE_HOME": "/data", "HOME": "/home/u"}, "/data"},
		{"override cleaned", map[string]string{"SVC_CODE_HOME": "/data/x/../y/"}, "/data/y"},
		{"home default", map[string]string{"HOME": "/home/u"}, "/home/u/.svc-code"},
		{"profile", map[string]string{"HOME": "/home/u", "SVC_CODE_PROFILE": "work"}, "/home/u/.svc-code/profiles/work"},
		{"override wins over profile", map[string]string{"HOME": "/home/u", "SVC_CODE_PROFILE": "work", "SVC_CODE_HOME": "/data"}, "/data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Dir(env(tt.env))
			if err != nil || got != tt.want {
				t.Errorf("Dir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDirRefusesABadProfile(t *testing.T) {
	for _, name := range []string{"..", "a/b", "x:y"} {
		if got, err := Dir(env(map[string]string{"HOME": "/home/u", "SVC_CODE_PROFILE": name})); err == nil {
			t.Errorf("Dir with profile %q = %q, want an error", name, got)
		}
	}
}

func TestEnsureCreatesPrivateDir(t *testing.T) {
	d := filepath.Join(t.TempDir(), "home")
	got, err := Ensure(env(map[string]string{"SVC_CODE_HOME": d}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("mode = %v, want 0700", st.Mode().Perm())
	}
}
