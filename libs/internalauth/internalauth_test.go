package internalauth

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/svc-code/svc-code/libs/envconf"
)

func reader(m map[string]string) *envconf.Reader {
	return envconf.New(func(k string) string { return m[k] })
}

func TestLoadFromEnv(t *testing.T) {
	s, err := Load(reader(map[string]string{EnvVar: "0123456789abcdef-secret"}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Check("0123456789abcdef-secret") || s.Check("0123456789abcdef-secreT") || s.Check("") {
		t.Error("Check does not match exactly the secret")
	}
	if _, err := Load(reader(map[string]string{EnvVar: "short"}), t.TempDir()); err == nil {
		t.Error("short secret accepted")
	}
}

func TestKeyFileSharedByConcurrentStarters(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	got := make([]Secret, 8)
	for i := range got {
		wg.Go(func() {
			s, err := Load(reader(nil), dir)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if got[i].Value() == "" || got[i].Value() != got[0].Value() {
			t.Fatalf("starter %d got %q, starter 0 got %q", i, got[i].Value(), got[0].Value())
		}
	}
	st, err := os.Stat(filepath.Join(dir, "internal.key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", st.Mode().Perm())
	}
}

func TestZeroSecretMatchesNothing(t *testing.T) {
	if (Secret{}).Check("") {
		t.Error("empty secret matched an empty header")
	}
}

func TestDerive(t *testing.T) {
	s := FromString("0123456789abcdef0123")
	a, b := s.Derive("termhosts v1"), s.Derive("chat relay v1")
	if len(a) != 32 || len(b) != 32 {
		t.Fatalf("got %d and %d bytes, want 32", len(a), len(b))
	}
	if bytes.Equal(a, b) {
		t.Error("two purposes derived the same key")
	}
	if !bytes.Equal(a, s.Derive("termhosts v1")) {
		t.Error("one purpose derived two keys")
	}
	if bytes.Contains(a, []byte(s.Value())) || bytes.Equal(a, []byte(s.Value())) {
		t.Error("the derived key holds the secret")
	}
	if k := (Secret{}).Derive("termhosts v1"); k != nil {
		t.Errorf("an unset secret derived %x, want nil", k)
	}
}

// TestFieldsMAC pins the signed form (hex HMAC-SHA256 of each field
// preceded by its uvarint length, computed independently): the entries in
// Redis written by one build verify under another. Fields that join to the
// same bytes sign differently.
func TestFieldsMAC(t *testing.T) {
	key := FromString("0123456789abcdef-secret").Derive("test v1")
	long := strings.Repeat("x", 200) // a two-byte length
	for _, tc := range []struct {
		fields []string
		want   string
	}{
		{[]string{"ab", "c", long}, "d2ea5e3bb60441cb5ba1d2380bccde3ede39ec0093128a3ece40af16afae595f"},
		{[]string{"a", "bc", long}, "a95cbf8b1c1b489acde4f33ffbb8feb1e41785300a3d1b93491eb063045af525"},
	} {
		if got := FieldsMAC(key, tc.fields...); got != tc.want {
			t.Errorf("FieldsMAC(%q) = %s, want %s", tc.fields[:2], got, tc.want)
		}
	}
}
