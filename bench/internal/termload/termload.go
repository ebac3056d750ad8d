// Package termload drives an interactive shell the way a person at a
// terminal would, through anything that carries keystrokes one way and
// terminal output the other (a PTY, a WebSocket), and times it: the
// throughput of a large `cat`, keystroke-to-echo latency, and how long
// Ctrl-C takes to stop a flood of output. Every wait ends on a marker the
// shell prints, which the echo of the typed command cannot contain.
package termload

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/marker"
)

// Conn is a terminal as its client sees it: keys in, output out.
type Conn interface {
	// Send types keys.
	Send(keys []byte) error
	// Read reads terminal output (control messages, where the transport
	// has any, are handled by the Conn).
	Read(p []byte) (int, error)
	// SetReadDeadline bounds pending and future Reads.
	SetReadDeadline(t time.Time) error
}

// Nonce is a fresh random token for a marker.
func Nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// MarkerCommand is a shell command printing word-nonce, and that marker.
// printf joins the two, so the command line echoed back by the terminal
// does not hold the marker: only the command's output does.
func MarkerCommand(word, nonce string) (cmd, mark string) {
	return fmt.Sprintf("printf '%%s-%%s\\n' %s %s", word, nonce), word + "-" + nonce
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReadUntil reads output until mark has been read, into buf, by the
// deadline. It returns how many bytes the output held up to the end of
// the marker.
func ReadUntil(c Conn, mark string, buf []byte, deadline time.Time) (int64, error) {
	if err := c.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	s := marker.New(mark)
	for {
		n, err := c.Read(buf)
		if _, found := s.Feed(buf[:n]); found {
			return s.Bytes(), nil
		}
		if err != nil {
			return s.Bytes(), fmt.Errorf("waiting for %q after %d bytes: %w", mark, s.Bytes(), err)
		}
	}
}

// Sync runs a marker command and waits for its output: once it returns,
// the shell is at its prompt and everything typed before has been
// answered.
func Sync(c Conn, buf []byte, timeout time.Duration) error {
	cmd, mark := MarkerCommand("READY", Nonce())
	if err := c.Send([]byte(cmd + "\r")); err != nil {
		return err
	}
	_, err := ReadUntil(c, mark, buf, time.Now().Add(timeout))
	return err
}

// Settle reads until the output has been quiet for quiet (the rest of a
// prompt, say), or until timeout.
func Settle(c Conn, buf []byte, quiet, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if err := c.SetReadDeadline(time.Now().Add(quiet)); err != nil {
			return err
		}
		if _, err := c.Read(buf); err != nil {
			if isTimeout(err) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("output still flowing after %s", timeout)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Transfer is how much output a command produced and how long it took to
// arrive.
type Transfer struct {
	Bytes   int64
	Elapsed time.Duration
}

// MBps is the throughput in megabytes (10^6 bytes) per second.
func (t Transfer) MBps() float64 {
	if t.Elapsed <= 0 {
		return 0
	}
	return float64(t.Bytes) / 1e6 / t.Elapsed.Seconds()
}

// Cat types `cat path` followed by a marker command and reads until the
// marker: the clock runs from the keystrokes to the marker, and Bytes
// counts every byte of output in between (the echoed command line, the
// file with the terminal's CR added to every newline, the marker).
func Cat(c Conn, path string, buf []byte, timeout time.Duration) (Transfer, error) {
	cmd, mark := MarkerCommand("END", Nonce())
	start := time.Now()
	if err := c.Send([]byte("cat " + ShellQuote(path) + "; " + cmd + "\r")); err != nil {
		return Transfer{}, err
	}
	n, err := ReadUntil(c, mark, buf, start.Add(timeout))
	if err != nil {
		return Transfer{}, err
	}
	return Transfer{Bytes: n, Elapsed: time.Since(start)}, nil
}

// EchoKey is the key typed to time echoes; the prompt and the line
// editor's control sequences are written so as not to contain it.
const EchoKey = 'x'

// Echo types EchoKey count times at the prompt, timing each until its
// echo arrives, and erases each with a backspace (untimed) before the
// next. Call it with the shell at its prompt and the output settled.
func Echo(c Conn, count int, buf []byte, timeout time.Duration) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, count)
	key, erase := []byte{EchoKey}, []byte{0x7f}
	for i := range count {
		deadline := time.Now().Add(timeout)
		t0 := time.Now()
		if err := c.Send(key); err != nil {
			return nil, err
		}
		if _, err := ReadUntil(c, string(EchoKey), buf, deadline); err != nil {
			return nil, fmt.Errorf("echo %d: %w", i+1, err)
		}
		lat = append(lat, time.Since(t0))
		if err := c.Send(erase); err != nil {
			return nil, err
		}
		// The line editor answers a backspace with "\b" (then a space or
		// an erase-to-end sequence); the key is not in either.
		if _, err := ReadUntil(c, "\b", buf, deadline); err != nil {
			return nil, fmt.Errorf("erase %d: %w", i+1, err)
		}
	}
	return lat, nil
}

// Interruption is what a Ctrl-C test measured.
type Interruption struct {
	// Flood is how much output `yes` had produced before the Ctrl-C.
	Flood int64
	// Stop is from the Ctrl-C to the marker typed after it.
	Stop time.Duration
}

// Interrupt starts `yes`, lets its output flow for flood, then types
// Ctrl-C and a marker command, and times until the marker arrives: every
// `y` still buffered anywhere between the shell and this client arrives
// first, so this is how long the flood takes to stop as the user sees it.
func Interrupt(c Conn, flood time.Duration, buf []byte, timeout time.Duration) (Interruption, error) {
	if err := c.Send([]byte("yes\r")); err != nil {
		return Interruption{}, err
	}
	if _, err := ReadUntil(c, "y\r\ny\r\ny\r\n", buf, time.Now().Add(timeout)); err != nil {
		return Interruption{}, err
	}
	var res Interruption
	end := time.Now().Add(flood)
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return Interruption{}, err
	}
	for time.Now().Before(end) {
		n, err := c.Read(buf)
		res.Flood += int64(n)
		if err != nil {
			return Interruption{}, fmt.Errorf("reading the flood: %w", err)
		}
	}
	cmd, mark := MarkerCommand("STOP", Nonce())
	t0 := time.Now()
	if err := c.Send([]byte{0x03}); err != nil {
		return Interruption{}, err
	}
	if err := c.Send([]byte(cmd + "\r")); err != nil {
		return Interruption{}, err
	}
	if _, err := ReadUntil(c, mark, buf, t0.Add(timeout)); err != nil {
		return Interruption{}, err
	}
	res.Stop = time.Since(t0)
	return res, nil
}
