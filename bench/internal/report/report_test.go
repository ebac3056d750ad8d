package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/bench/internal/stats"
)

const section = StartMarker + "\nnew\n" + EndMarker + "\n"

func TestReplace(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr bool
	}{
		{"empty file", "", section, false},
		{"appended after other sections", "# Benchmarks\n\nintro\n", "# Benchmarks\n\nintro\n\n" + section, false},
		{"appended to text without a final newline", "intro", "intro\n\n" + section, false},
		{
			"replaced in place, text around kept",
			"# B\n\n" + StartMarker + "\nold\nlines\n" + EndMarker + "\n\n## Other\n",
			"# B\n\n" + section + "\n## Other\n", false,
		},
		{"replaced at the end", "# B\n\n" + StartMarker + "\nold\n" + EndMarker + "\n", "# B\n\n" + section, false},
		{"start marker only", "# B\n" + StartMarker + "\nold\n", "", true},
		{"end marker only", "# B\nold\n" + EndMarker + "\n", "", true},
		{"markers out of order", EndMarker + "\n" + StartMarker + "\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Replace(tt.doc, section)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Replace error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Replace =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestWriteCreatesThenReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if err := Write(path, "# Benchmarks\n", section); err != nil {
		t.Fatal(err)
	}
	second := StartMarker + "\nsecond\n" + EndMarker + "\n"
	if err := Write(path, "# ignored intro\n", second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "# Benchmarks\n\n"+second; got != want {
		t.Errorf("file =\n%q\nwant\n%q", got, want)
	}
}

func TestRatios(t *testing.T) {
	goals := Goals{MaxP99Added: time.Millisecond, MinRatio: 0.8}
	tests := []struct {
		name    string
		direct  stats.Summary
		gateway stats.Summary
		want    string
	}{
		{
			"both met",
			stats.Summary{Throughput: 1000, P50: 500 * time.Microsecond, P99: 2 * time.Millisecond},
			stats.Summary{Throughput: 900, P50: 600 * time.Microsecond, P99: 3 * time.Millisecond},
			"| x | 0.900× | +0.100 ms | +1.000 ms | met | met |",
		},
		{
			"both missed",
			stats.Summary{Throughput: 1000, P50: 500 * time.Microsecond, P99: 2 * time.Millisecond},
			stats.Summary{Throughput: 799, P50: 400 * time.Microsecond, P99: 3001 * time.Microsecond},
			"| x | 0.799× | -0.100 ms | +1.001 ms | not met | not met |",
		},
		{
			"direct tail above the gateway's",
			stats.Summary{Throughput: 1000, P50: 500 * time.Microsecond, P99: 4 * time.Millisecond},
			stats.Summary{Throughput: 500, P50: 900 * time.Microsecond, P99: 3 * time.Millisecond},
			"| x | 0.500× | +0.400 ms | -1.000 ms | met (direct p99 is the higher: see the notes) | not met |",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Section{Goals: goals, Results: []Comparison{{Name: "x", Direct: tt.direct, Gateway: tt.gateway}}}
			if got := s.Ratios(); !strings.Contains(got, tt.want+"\n") {
				t.Errorf("Ratios =\n%s\nwant a line %q", got, tt.want)
			}
		})
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0 req/s"},
		{999.4, "999 req/s"},
		{999.5, "1,000 req/s"},
		{1234567, "1,234,567 req/s"},
	}
	for _, tt := range tests {
		if got := rate(tt.v, "req/s"); got != tt.want {
			t.Errorf("rate(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	data := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := cpuModel(path), "AMD EPYC 7B13"; got != want {
		t.Errorf("cpuModel = %q, want %q", got, want)
	}
	if got, want := cpuModel(filepath.Join(t.TempDir(), "missing")), "unknown"; got != want {
		t.Errorf("cpuModel(missing) = %q, want %q", got, want)
	}
}

func TestReplaceBetweenKeepsOtherSections(t *testing.T) {
	const (
		start = "<!-- bench:terminal:start -->"
		end   = "<!-- bench:terminal:end -->"
	)
	gateway := StartMarker + "\ngateway figures\n" + EndMarker + "\n"
	terminal := start + "\nnew terminal figures\n" + end + "\n"
	tests := []struct {
		name, doc, want string
	}{
		{"appended after the gateway section", "# B\n\n" + gateway, "# B\n\n" + gateway + "\n" + terminal},
		{
			"replaced, the gateway section untouched",
			"# B\n\n" + gateway + "\n" + start + "\nold\n" + end + "\n",
			"# B\n\n" + gateway + "\n" + terminal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplaceBetween(tt.doc, start, end, terminal)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ReplaceBetween =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	if _, err := ReplaceBetween(end+"\n"+start+"\n", start, end, terminal); err == nil {
		t.Error("ReplaceBetween with the markers out of order succeeded, want an error")
	}
}
