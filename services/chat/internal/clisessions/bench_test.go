package clisessions

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
)

// BenchmarkOpen100MB opens a 100 MB transcript (100 000 Claude Code
// records of 1 KB) as GET /api/cli-sessions/.../messages does: the last
// page of 200 records read backwards from the end and converted.
//
//	cold:     a new Reader each time (the first open of the file: its
//	          newlines are counted once to number the lines)
//	warm:     the same Reader (the file opened before, e.g. by the page
//	          that follows it)
//	follow:   what is appended after the end (nothing: a wait of 0)
//	fullscan: the baseline, reading the whole file line by line to keep
//	          its last 200 lines
//
// Run: go test -run '^$' -bench Open100MB -benchtime 20x ./internal/clisessions/
func BenchmarkOpen100MB(b *testing.B) {
	path, content := synthetic(b, b.TempDir(), 100_000, 1024)
	size := int64(len(content))
	open := func(b *testing.B, r *Reader) {
		p, err := r.Before(path, -1, 200, DefaultMaxBytes)
		if err != nil || len(p.Lines) != 200 || p.Lines[199].Number != 100_000 {
			b.Fatalf("%v %d", err, len(p.Lines))
		}
		for _, l := range p.Lines {
			Convert(protocol.CLIProviderClaude, "s", "p/s.jsonl", l.Text, l.Number)
		}
	}
	report := func(b *testing.B, r *Reader) {
		b.ReportMetric(float64(r.BytesRead.Load())/float64(b.N), "read-B/op")
		b.ReportMetric(float64(r.BytesCounted.Load())/float64(b.N), "counted-B/op")
	}
	b.Run("cold", func(b *testing.B) {
		var total Reader
		for range b.N {
			var r Reader
			open(b, &r)
			total.BytesRead.Add(r.BytesRead.Load())
			total.BytesCounted.Add(r.BytesCounted.Load())
		}
		report(b, &total)
	})
	b.Run("warm", func(b *testing.B) {
		var r Reader
		open(b, &r)
		r.BytesRead.Store(0)
		r.BytesCounted.Store(0)
		b.ResetTimer()
		for range b.N {
			open(b, &r)
		}
		report(b, &r)
	})
	b.Run("follow", func(b *testing.B) {
		var r Reader
		open(b, &r)
		r.BytesRead.Store(0)
		r.BytesCounted.Store(0)
		b.ResetTimer()
		for range b.N {
			if p, err := r.After(context.Background(), path, size, 200, DefaultMaxBytes, 0); err != nil || len(p.Lines) != 0 {
				b.Fatal(err)
			}
		}
		report(b, &r)
	})
	b.Run("fullscan", func(b *testing.B) {
		for range b.N {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			ring := make([][]byte, 200)
			n := 0
			for sc.Scan() {
				ring[n%200] = append(ring[n%200][:0], sc.Bytes()...)
				n++
			}
			_ = f.Close()
			for i := range 200 {
				l := ring[(n+i)%200]
				Convert(protocol.CLIProviderClaude, "s", "p/s.jsonl", l, int64(n-200+i+1))
			}
		}
		b.ReportMetric(float64(size), "read-B/op")
	})
}

// BenchmarkList2000 lists 2000 sessions (1000 of each CLI, 20 KB each, the
// prompt after 10 KB of bookkeeping records) as GET /api/cli-sessions does:
// cold (a new Finder: every head read) and warm (the heads cached; the
// directories walked and every file stat'ed again).
//
// Run: go test -run '^$' -bench List2000 -benchtime 20x ./internal/clisessions/
func BenchmarkList2000(b *testing.B) {
	dir := b.TempDir()
	r := Roots{Claude: filepath.Join(dir, "projects"), Codex: filepath.Join(dir, "sessions")}
	meta := strings.Repeat(`{"type":"attachment","attachment":{"type":"date","date":"2026-11-27"}}`+"\n", 140)
	tail := strings.Repeat(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`+"\n", 100)
	for i := range 1000 {
		id := fmt.Sprintf("%08x-aaaa-4aaa-8aaa-%012x", i, i)
		writeBench(b, filepath.Join(r.Claude, fmt.Sprintf("-home-me-p%d", i%50), id+".jsonl"),
			meta+claudePromptLine(fmt.Sprintf("/home/me/p%d", i%50), fmt.Sprintf("prompt %d", i))+tail)
		writeBench(b, filepath.Join(r.Codex, "2026", "11", fmt.Sprintf("%02d", i%28+1), "rollout-2026-11-27T05-30-31-"+id+".jsonl"),
			codexMetaLine(id, "/home/me/x")+meta+codexPromptLine(fmt.Sprintf("prompt %d", i))+tail)
	}
	list := func(b *testing.B, f *Finder) {
		all, err := f.List("")
		if err != nil {
			b.Fatal(err)
		}
		page, total := Select(all, Query{Limit: 50})
		if total != 2000 || len(page) != 50 || page[0].Title == "" {
			b.Fatalf("%d %d %+v", total, len(page), page[0])
		}
	}
	b.Run("cold", func(b *testing.B) {
		for range b.N {
			list(b, &Finder{Roots: r})
		}
	})
	b.Run("warm", func(b *testing.B) {
		f := &Finder{Roots: r}
		list(b, f)
		b.ResetTimer()
		for range b.N {
			list(b, f)
		}
	})
}

func writeBench(b *testing.B, path, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}
