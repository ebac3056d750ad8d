package envconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{
		"A": " x ", "N": "12", "BADN": "twelve", "D": "2s", "BADD": "soon",
		"PW_FILE": secretFile, "BOTH": "x", "BOTH_FILE": secretFile,
		"ON": " On ", "OFF": "0", "BADB": "maybe",
	}
	r := New(func(k string) string { return m[k] })
	if got := r.String("A", "d"); got != "x" {
		t.Errorf("String = %q", got)
	}
	if got := r.String("MISSING", "d"); got != "d" {
		t.Errorf("String default = %q", got)
	}
	if got := r.Int("N", 1); got != 12 {
		t.Errorf("Int = %d", got)
	}
	if got := r.Duration("D", 0); got != 2*time.Second {
		t.Errorf("Duration = %v", got)
	}
	if !r.Bool("ON", false) || r.Bool("OFF", true) || !r.Bool("MISSING", true) {
		t.Errorf("Bool: ON %v, OFF %v, MISSING (default true) %v", r.Bool("ON", false), r.Bool("OFF", true), r.Bool("MISSING", true))
	}
	if got := r.Secret("PW"); got != "s3cret" {
		t.Errorf("Secret from file = %q", got)
	}
	if r.Err() != nil {
		t.Fatalf("unexpected error before bad values: %v", r.Err())
	}
	r.Int("BADN", 1)
	r.Duration("BADD", 0)
	if !r.Bool("BADB", true) {
		t.Error("Bool of a bad value: want the default")
	}
	r.Secret("BOTH")
	err := r.Err()
	if err == nil {
		t.Fatal("want errors for bad values")
	}
	for _, want := range []string{"BADN", "BADD", "BADB", "BOTH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
