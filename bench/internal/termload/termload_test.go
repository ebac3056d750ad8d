package termload

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svc-code/svc-code/bench/internal/rawpty"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunks is a Conn whose output arrives in the given pieces, then EOF.
type chunks struct {
	pieces []string
	sent   []string
}

func (c *chunks) Send(keys []byte) error { c.sent = append(c.sent, string(keys)); return nil }

func (c *chunks) SetReadDeadline(time.Time) error { return nil }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	if c.pieces[0] = c.pieces[0][n:]; c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

func TestReadUntil(t *testing.T) {
	tests := []struct {
		name    string
		pieces  []string
		bufSize int
		want    int64
		wantErr bool
	}{
		{"in one read", []string{"$ cat f\r\nabc\r\nEND-1\r\n$ "}, 64, 19, false},
		{"split across reads", []string{"abc\r\nEN", "D-1", "\r\n"}, 64, 10, false},
		{"split by a small buffer", []string{"abc\r\nEND-1\r\n"}, 2, 10, false},
		{"echoed command only, then EOF", []string{"printf '%s-%s\\n' END 1\r\n"}, 64, 24, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadUntil(&chunks{pieces: tt.pieces}, "END-1", make([]byte, tt.bufSize), time.Now().Add(time.Second))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReadUntil error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ReadUntil = %d bytes, want %d", got, tt.want)
			}
		})
	}
}

func TestMarkerCommand(t *testing.T) {
	cmd, mark := MarkerCommand("END", "0123abcd")
	if got, want := mark, "END-0123abcd"; got != want {
		t.Errorf("marker = %q, want %q", got, want)
	}
	if strings.Contains(cmd, mark) {
		t.Errorf("command %q contains its marker: its echo would end the wait", cmd)
	}
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), mark+"\n"; got != want {
		t.Errorf("sh -c %q printed %q, want %q", cmd, got, want)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/tmp/a b", `'/tmp/a b'`},
		{"it's", `'it'\''s'`},
		{"", `''`},
	}
	for _, tt := range tests {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTransferMBps(t *testing.T) {
	if got := (Transfer{Bytes: 250e6, Elapsed: 2 * time.Second}).MBps(); got != 125 {
		t.Errorf("MBps = %v, want 125", got)
	}
	if got := (Transfer{Bytes: 1}).MBps(); got != 0 {
		t.Errorf("MBps with no time = %v, want 0", got)
	}
}

// TestAgainstBash runs every operation against a real bash on a PTY.
func TestAgainstBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed:", err)
	}
	home := t.TempDir()
	file := filepath.Join(home, "data.txt")
	content := strings.Repeat("0123456789 the quick brown fox\n", 1000)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Env = []string{"HOME=" + home, "TERM=xterm-256color", "PATH=" + os.Getenv("PATH"), "PS1=$ "}
	term, err := rawpty.Start(cmd, 24, 80)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := term.Close(); err != nil {
			t.Error(err)
		}
	})
	buf := make([]byte, 32<<10)
	if err := Sync(term, buf, 10*time.Second); err != nil {
		t.Fatal("Sync:", err)
	}
	tr, err := Cat(term, file, buf, 10*time.Second)
	if err != nil {
		t.Fatal("Cat:", err)
	}
	// The file with CR LF for LF, plus the echoed command and the marker.
	if least := int64(len(content) + 1000); tr.Bytes < least || tr.Bytes > least+300 {
		t.Errorf("Cat read %d bytes, want a little over %d", tr.Bytes, least)
	}
	if err := Settle(term, buf, 50*time.Millisecond, 5*time.Second); err != nil {
		t.Fatal("Settle:", err)
	}
	lat, err := Echo(term, 50, buf, 5*time.Second)
	if err != nil {
		t.Fatal("Echo:", err)
	}
	if len(lat) != 50 {
		t.Errorf("Echo timed %d keys, want 50", len(lat))
	}
	in, err := Interrupt(term, 100*time.Millisecond, buf, 10*time.Second)
	if err != nil {
		t.Fatal("Interrupt:", err)
	}
	if in.Flood == 0 || in.Stop <= 0 || in.Stop > 5*time.Second {
		t.Errorf("Interrupt = %+v, want some flood and a stop time", in)
	}
	// The shell still answers after the Ctrl-C.
	if err := Sync(term, buf, 10*time.Second); err != nil {
		t.Fatal("Sync after Ctrl-C:", err)
	}
}
