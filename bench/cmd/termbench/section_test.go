package main

import (
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/bench/internal/report"
)

func TestSectionMarkdown(t *testing.T) {
	res := fixture([]float64{30, 36, 33}, 0, 0.9, 3)
	s := section{
		Date: time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC), Machine: report.Machine{CPUs: 2, CPUModel: "AMD EPYC"},
		Command: "`make bench-terminal`", File: "1 MiB", Shell: "/bin/bash", Wetty: "wetty 3.2.0",
		Rounds: 3, Echoes: 3, Interrupts: 1, Flood: time.Second,
		Summary: summarize(res, allPaths), Results: res, Notes: []string{"a note"},
	}
	md := s.Markdown()
	for _, want := range []string{
		startMarker + "\n## Terminal throughput and latency\n",
		"- Date: 2026-11-22 04:00 UTC\n",
		"| raw PTY (no socket) | 60.0 MB/s | 1.00× | 0.200 ms | 0.300 ms | 2 ms | 2 ms |\n",
		"| through the gateway | 33.0 MB/s | 0.55× | 0.400 ms | 0.900 ms | 3 ms | 3 ms |\n",
		"| gateway / wetty | 1.57× |\n",
		"| throughput through the gateway ≥ 100 MB/s | 33.0 MB/s | not met |\n",
		"| cat | gateway | 2 | 36.0 MB/s (36.0 MB in 1.00 s) | – | – | – | – | – | – | – |\n",
		"\n- a note\n" + endMarker + "\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if !strings.HasSuffix(md, endMarker+"\n") || strings.Count(md, startMarker) != 1 {
		t.Error("the section must hold one pair of markers and end with the end marker")
	}
}

func TestFiguresMarksDroppedOutput(t *testing.T) {
	res := fixture([]float64{30, 36, 33}, 2e6, 0.9, 3)
	s := section{Summary: summarize(res, allPaths), Results: res}
	if want := "| through the gateway | 33.0 MB/s (6.0 MB dropped) |"; !strings.Contains(s.Figures(), want) {
		t.Errorf("Figures lacks %q:\n%s", want, s.Figures())
	}
}

func TestCommand(t *testing.T) {
	base := options{
		sizeMiB: defaultSizeMiB, rounds: defaultRounds, echoes: defaultEchoes,
		interrupts: defaultInterrupts, flood: defaultFlood, wetty: true,
		maxOthers: defaultMaxOthers, quietWait: defaultQuietWait, slowMBps: defaultSlowMBps,
	}
	tests := []struct {
		name   string
		change func(*options)
		want   string
	}{
		{"defaults", func(*options) {}, "`make bench-terminal`, that is `go run ./bench/cmd/termbench` from the repository root"},
		{
			"changed flags only", func(o *options) { o.sizeMiB, o.wetty = 64, false },
			"`make bench-terminal BENCH_ARGS=\"-size 64 -wetty=false\"`, that is `go run ./bench/cmd/termbench -size 64 -wetty=false` from the repository root",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.change(&o)
			if got := command(o); got != tt.want {
				t.Errorf("command =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"small run", []string{"-size", "1", "-r", "1", "-echoes", "10", "-interrupts", "1", "-write=false"}, ""},
		{"zero size", []string{"-size", "0"}, "-size"},
		{"no rounds", []string{"-r", "0"}, "-r"},
		{"negative flood", []string{"-flood", "-1s"}, "-flood"},
		{"stray argument", []string{"extra"}, "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args)
			if tt.wantErr == "" && err != nil {
				t.Errorf("parseFlags(%q) = %v, want no error", tt.args, err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("parseFlags(%q) = %v, want an error about %s", tt.args, err, tt.wantErr)
			}
		})
	}
}
