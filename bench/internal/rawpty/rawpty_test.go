package rawpty

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDrain(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    int64 // the terminal turns each LF into CR LF
	}{
		{"empty", "", 0},
		{"one line", "hello\n", 7},
		{"many lines", strings.Repeat("abc\n", 10000), 50000},
		{"no final newline", strings.Repeat("x", 9000), 9000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Drain(exec.Command("cat", path), make([]byte, 64<<10), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bytes != tt.want {
				t.Errorf("Drain read %d bytes, want %d", got.Bytes, tt.want)
			}
			if got.Elapsed <= 0 {
				t.Errorf("Drain took %v", got.Elapsed)
			}
		})
	}
}

func TestDrainTimesOut(t *testing.T) {
	_, err := Drain(exec.Command("sleep", "30"), make([]byte, 1024), 100*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Drain of a silent program = %v, want a deadline error", err)
	}
}
