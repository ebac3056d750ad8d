package marker

import (
	"strings"
	"testing"
)

func TestScannerSplitFrames(t *testing.T) {
	const m = "END-1234"
	tests := []struct {
		name      string
		pieces    []string
		wantFound bool
		wantBytes int64 // stream length up to the marker's end, or all fed
		wantLastN int   // what the last Feed consumed
	}{
		{"whole in one piece", []string{"abcEND-1234xyz"}, true, 11, 11},
		{"at the very start", []string{"END-1234"}, true, 8, 8},
		{"split in two", []string{"abcEND-", "1234xyz"}, true, 11, 4},
		{"split after the first byte", []string{"abcE", "ND-1234"}, true, 11, 7},
		{"split before the last byte", []string{"abcEND-123", "4xyz"}, true, 11, 1},
		{"one byte at a time", strings.Split("xxEND-1234yy", "")[:10], true, 10, 1},
		{"spread over tiny pieces, then more", []string{"a", "E", "N", "D-", "1", "23", "4", "b"}, true, 9, 0},
		{"across an empty piece", []string{"abcEND-", "", "1234"}, true, 11, 4},
		{"not there", []string{"abc", "END-123", "5"}, false, 11, 1},
		{"prefix repeated before it", []string{"END-END-", "END-1234"}, true, 16, 8},
		{"a false start in the tail", []string{"END-12", "3END-1234"}, true, 15, 9},
		{"only the echoed command", []string{"printf '%s-%s\\n' END 1234\r\n"}, false, 27, 27},
		{"after a long piece", []string{strings.Repeat("y\r\n", 10000) + "EN", "D-1234\r\n"}, true, 30008, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(m)
			var n int
			var found bool
			for _, p := range tt.pieces {
				n, found = s.Feed([]byte(p))
			}
			if found != tt.wantFound || s.Found() != tt.wantFound {
				t.Errorf("found = %v (Found %v), want %v", found, s.Found(), tt.wantFound)
			}
			if got := s.Bytes(); got != tt.wantBytes {
				t.Errorf("Bytes = %d, want %d", got, tt.wantBytes)
			}
			if n != tt.wantLastN {
				t.Errorf("last Feed consumed %d, want %d", n, tt.wantLastN)
			}
		})
	}
}

// TestScannerEverySplit cuts one stream at every pair of positions.
func TestScannerEverySplit(t *testing.T) {
	const m = "STOP-abcdef"
	stream := "yyy\r\nSTOP-abc STOP-ab" + m + "\r\n$ "
	want := int64(strings.Index(stream, m) + len(m))
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j++ {
			s := New(m)
			var consumed int64
			for _, p := range []string{stream[:i], stream[i:j], stream[j:]} {
				n, _ := s.Feed([]byte(p))
				consumed += int64(n)
			}
			if !s.Found() || s.Bytes() != want || consumed != want {
				t.Fatalf("split at %d, %d: found %v, Bytes %d, consumed %d, want found at %d", i, j, s.Found(), s.Bytes(), consumed, want)
			}
		}
	}
}

func TestScannerStopsAfterFound(t *testing.T) {
	s := New("ab")
	s.Feed([]byte("xab"))
	if n, found := s.Feed([]byte("more ab")); n != 0 || !found || s.Bytes() != 3 {
		t.Errorf("Feed after found = %d, %v, Bytes %d; want 0, true, 3", n, found, s.Bytes())
	}
}

func FuzzScanner(f *testing.F) {
	f.Add("abcEND-1234xyz", 3, 5)
	f.Add("END-12END-1234", 1, 7)
	f.Fuzz(func(t *testing.T, stream string, i, j int) {
		const m = "END-1234"
		if i < 0 || j < 0 {
			return
		}
		i, j = min(i, len(stream)), min(j, len(stream))
		if i > j {
			i, j = j, i
		}
		s := New(m)
		for _, p := range []string{stream[:i], stream[i:j], stream[j:]} {
			s.Feed([]byte(p))
		}
		idx := strings.Index(stream, m)
		if s.Found() != (idx >= 0) {
			t.Fatalf("Found = %v, strings.Index = %d", s.Found(), idx)
		}
		if idx >= 0 && s.Bytes() != int64(idx+len(m)) {
			t.Fatalf("Bytes = %d, want %d", s.Bytes(), idx+len(m))
		}
	})
}
