package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/svc-code/svc-code/bench/internal/chatproc"
	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/bench/internal/stats"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Markers delimit the search part of the shadow section in BENCHMARKS.md.
const (
	searchStartMarker = "<!-- bench:shadow-search:start -->"
	searchEndMarker   = "<!-- bench:shadow-search:end -->"
)

// ShadowPackage is the shadow service, relative to the workspace root.
const ShadowPackage = "./services/shadow/cmd/shadow"

// rareToken is in one file of every hundred.
const rareToken = "needle_rare_token"

// searchQuery is one search the benchmark times.
type searchQuery struct {
	Name   string
	Params url.Values
	// Rare: the answer must be exactly the files holding rareToken (one in
	// a hundred; none of the ignored ones).
	Rare bool
}

var searchQueries = []searchQuery{
	{"literal, 1 file in 100", url.Values{"q": {rareToken}, "case": {"sensitive"}}, true},
	{"regex, about 1 line in 10", url.Values{"q": {`func \w+Handler\(`}, "regex": {"true"}}, false},
	{"literal, case-insensitive, `*.go` only", url.Values{"q": {"NEEDLE_RARE"}, "case": {"insensitive"}, "include": {"*.go"}}, true},
	{"common word, capped at 500", url.Values{"q": {"return"}}, false},
}

// searchRow is one engine and query's figures.
type searchRow struct {
	Engine, Query string
	Matches       int
	Truncated     bool
	P50, P95, Max time.Duration
}

// searchSection is what the benchmark reports.
type searchSection struct {
	Date      time.Time
	Machine   report.Machine
	Revision  string
	Command   string
	Files     int // searchable files
	Ignored   int // files .gitignore hides
	Bytes     int64
	Runs      int
	RgVersion string // "" when ripgrep is not installed
	Load      string // /proc/loadavg when the measurement started
	RgCLI     []searchRow
	Rows      []searchRow
}

// makeProject writes a project of files searchable files (Go sources of
// about 1.5 KiB in directories of 100) plus ignored files under
// node_modules/ and *.log, in a git repository, and returns the bytes
// written to searchable files.
func makeProject(dir string, files, ignored int) (int64, error) {
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o750); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil { //nolint:gosec // G306: test data
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n*.log\n"), 0o644); err != nil { //nolint:gosec // G306: test data
		return 0, err
	}
	var total int64
	for i := range files {
		var b strings.Builder
		fmt.Fprintf(&b, "package pkg%03d\n\nimport \"fmt\"\n\n", i/100)
		for j := range 12 {
			if j%3 == 0 {
				fmt.Fprintf(&b, "func serve%d_%dHandler(w int) error {\n", i, j)
			} else {
				fmt.Fprintf(&b, "func compute%d_%d(x int) int {\n", i, j)
			}
			fmt.Fprintf(&b, "\t// step %d of file %d: keep the numbers moving\n\ty := x * %d\n\tfmt.Println(y)\n\treturn y\n}\n\n", j, i, j+1)
		}
		if i%100 == 7 {
			fmt.Fprintf(&b, "// %s in file %d\n", rareToken, i)
		}
		p := filepath.Join(dir, "src", fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		if err := writeFile(p, b.String()); err != nil {
			return 0, err
		}
		total += int64(b.Len())
	}
	for i := range ignored {
		body := fmt.Sprintf("// %s ignored %d\nreturn\n", rareToken, i)
		p := filepath.Join(dir, "node_modules", fmt.Sprintf("mod%02d", i/100), fmt.Sprintf("index%05d.js", i))
		if i%2 == 1 {
			p = filepath.Join(dir, "logs", fmt.Sprintf("run%05d.log", i))
		}
		if err := writeFile(p, body); err != nil {
			return 0, err
		}
	}
	return total, nil
}

func writeFile(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644) //nolint:gosec // G306: test data
}

// shadowInstance is a running shadow service with a PostgreSQL schema,
// a Redis key prefix and an internal secret of its own.
type shadowInstance struct {
	addr, secret, prefix string
	schema               *chatproc.Schema
	*proc.Process
}

// startShadow runs the shadow binary with extraDirs as extra allowed roots,
// on a new schema of the test database and a new Redis prefix; Stop ends
// it and removes both.
func startShadow(ctx context.Context, binary, home, extraDirs string) (in *shadowInstance, err error) {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		base = chatproc.DefaultDatabaseURL
	}
	in = &shadowInstance{}
	if in.schema, err = chatproc.NewSchema(ctx, base); err != nil {
		return nil, err
	}
	prefix, err := proc.RandomHex(6)
	if err == nil {
		in.prefix = "shadowbench:" + prefix + ":"
		in.secret, err = proc.RandomHex(24)
	}
	if err == nil {
		in.addr, err = proc.FreeAddr(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, in.cleanup())
	}
	in.Process, err = proc.Start(ctx, proc.Config{
		Name: "shadow", Path: binary, StopTimeout: 20 * time.Second, Group: true,
		Env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"SVC_CODE_HOME=" + home,
			"SHADOW_ADDR=" + in.addr,
			"SHADOW_EXTRA_DIRS=" + extraDirs,
			"DATABASE_URL=" + in.schema.URL,
			"REDIS_URL=" + proc.RedisURL(),
			"REDIS_PREFIX=" + in.prefix,
			"SVC_INTERNAL_SECRET=" + in.secret,
			"LOG_FORMAT=json",
			"LOG_LEVEL=warn",
		},
	})
	if err != nil {
		return nil, errors.Join(err, in.cleanup())
	}
	health := proc.GetOK("http://"+in.addr+"/api/health/shadow", http.Header{protocol.HeaderInternal: []string{in.secret}})
	if err := in.WaitReady(ctx, 60*time.Second, health); err != nil {
		return nil, errors.Join(err, in.Stop())
	}
	return in, nil
}

// Stop ends shadow, then drops its schema and its Redis keys.
func (in *shadowInstance) Stop() error {
	return errors.Join(in.Process.Stop(), in.cleanup())
}

func (in *shadowInstance) cleanup() error {
	var err error
	if in.prefix != "" {
		err = proc.DeleteKeys(proc.RedisURL(), in.prefix)
	}
	return errors.Join(err, in.schema.Drop())
}

var searchClient = &http.Client{Timeout: 2 * time.Minute}

// searchAnswer is the part of GET /api/search's answer the benchmark reads.
type searchAnswer struct {
	Matches   []json.RawMessage `json:"matches"`
	Truncated bool              `json:"truncated"`
	Engine    string            `json:"engine"`
}

// search sends one GET /api/search and times it.
func (in *shadowInstance) search(ctx context.Context, params url.Values) (searchAnswer, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+in.addr+"/api/search?"+params.Encode(), nil)
	if err != nil {
		return searchAnswer{}, 0, err
	}
	req.Header.Set(protocol.HeaderInternal, in.secret)
	start := time.Now()
	resp, err := searchClient.Do(req)
	if err != nil {
		return searchAnswer{}, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	elapsed := time.Since(start)
	if err != nil {
		return searchAnswer{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return searchAnswer{}, 0, fmt.Errorf("GET /api/search: %d %s", resp.StatusCode, body)
	}
	var a searchAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return searchAnswer{}, 0, fmt.Errorf("decode the search answer: %w", err)
	}
	return a, elapsed, nil
}

// measureSearch runs every query runs times on each engine (after one
// unmeasured run that warms the page cache).
func measureSearch(ctx context.Context, in *shadowInstance, project string, files int, engines []string, runs int) ([]searchRow, error) {
	var rows []searchRow
	for _, engine := range engines {
		for _, sq := range searchQueries {
			params := url.Values{}
			for k, v := range sq.Params {
				params[k] = v
			}
			params.Set("path", project)
			params.Set("engine", engine)
			row := searchRow{Engine: engine, Query: sq.Name}
			var lat []time.Duration
			for i := range runs + 1 {
				a, d, err := in.search(ctx, params)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", engine, sq.Name, err)
				}
				if a.Engine != engine {
					return nil, fmt.Errorf("asked engine %s, answered by %s", engine, a.Engine)
				}
				row.Matches, row.Truncated = len(a.Matches), a.Truncated
				if sq.Rare && (row.Matches != files/100 || row.Truncated) {
					return nil, fmt.Errorf("%s, %s: %d matches, want %d (ignored files listed, or some missed)", engine, sq.Name, row.Matches, files/100)
				}
				if i > 0 {
					lat = append(lat, d)
				}
			}
			row.P50, row.P95, row.Max = summarize(lat)
			fmt.Fprintf(os.Stderr, "%-3s %-42s %5d matches   p50 %8s   p95 %8s\n", engine, sq.Name, row.Matches, ms(row.P50), ms(row.P95))
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// measureRgCLI times ripgrep alone on the same project and rules (the
// flags shadow passes), as the floor the service's rg engine adds to.
func measureRgCLI(ctx context.Context, rg, project string, runs int) ([]searchRow, error) {
	args := []string{
		"--json", "--no-config", "--hidden", "--no-ignore-global", "--no-ignore-dot", "--no-ignore-exclude",
		"--no-follow", "--sort", "path", "--glob", "!.git", "--case-sensitive", "--fixed-strings", "--regexp", rareToken, "--", ".",
	}
	var lat []time.Duration
	for i := range runs + 1 {
		cmd := exec.CommandContext(ctx, rg, args...)
		cmd.Dir = project
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			return nil, fmt.Errorf("rg: %w", err)
		}
		if n := strings.Count(string(out), `"type":"match"`); n == 0 {
			return nil, errors.New("rg found nothing")
		}
		if i > 0 {
			lat = append(lat, d)
		}
	}
	row := searchRow{Engine: "rg CLI", Query: searchQueries[0].Name}
	row.P50, row.P95, row.Max = summarize(lat)
	return []searchRow{row}, nil
}

func summarize(lat []time.Duration) (p50, p95, maxLat time.Duration) {
	s := stats.Summarize(lat, 0)
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	return s.P50, stats.Percentile(sorted, 95), sorted[len(sorted)-1]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// searchNote explains the figures.
const searchNote = "Both engines answer in path order and stop reading once the result cap is reached (hence the capped rows' few milliseconds): " +
	"ripgrep runs with `--sort path`, which makes it single-threaded; the Go walk lists the tree in one goroutine and reads files in GOMAXPROCS others, " +
	"puts the matches back in path order, and skips most files with a literal prefilter (`bytes.Index`, ASCII case-folded for case-insensitive literals) before any regular expression runs."

// Markdown is the search part of the shadow section.
func (s searchSection) Markdown() string {
	var b strings.Builder
	b.WriteString(searchStartMarker + "\n")
	b.WriteString("## Shadow search over a project of " + fmt.Sprint(s.Files) + " files\n\n")
	fmt.Fprintf(&b, "Run %s on %s, nproc %d (GOMAXPROCS %d), %s, %s, shadow built from %s, load average %s at the start (the machine is shared). Reproduce with `%s`.\n\n",
		s.Date.UTC().Format("2006-01-02 15:04 UTC"), s.Machine.CPUModel, s.Machine.CPUs, s.Machine.GOMAXPROCS,
		s.Machine.OSArch, s.Machine.GoVersion, s.Revision, orUnknown(s.Load), s.Command)
	fmt.Fprintf(&b, "The project: %d Go files of about 1.5 KiB (%.1f MiB) in 100 directories, in a git repository whose `.gitignore` hides %d more files (`node_modules/`, `*.log`) that hold the rare token too, so a result that lists them fails the run. "+
		"Each figure is `GET /api/search` on the real shadow service over loopback (HTTP, JSON and all), %d timed runs after one warm-up run (files in the page cache). "+
		"`rg` is the ripgrep engine (%s), `go` the Go walk, selected with `engine=`; the answers of both are the same.\n\n",
		s.Files, float64(s.Bytes)/(1<<20), s.Ignored, s.Runs, orNone(s.RgVersion))
	b.WriteString("| Engine | Query | Matches | p50 | p95 | max |\n|---|---|--:|--:|--:|--:|\n")
	for _, r := range append(append([]searchRow(nil), s.Rows...), s.RgCLI...) {
		matches := fmt.Sprint(r.Matches)
		if r.Truncated {
			matches += " (truncated)"
		}
		if r.Engine == "rg CLI" {
			matches = "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Engine, r.Query, matches, ms(r.P50), ms(r.P95), ms(r.Max))
	}
	if len(s.RgCLI) > 0 {
		b.WriteString("\n`rg CLI` is ripgrep run directly with the flags shadow passes, without the service: the floor of the `rg` rows.\n")
	}
	b.WriteString("\n" + searchNote + "\n")
	b.WriteString(searchEndMarker + "\n")
	return b.String()
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// loadAverage is the 1, 5 and 15 minute load averages, "" when unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func orNone(v string) string {
	if v == "" {
		return "not installed: no rg rows"
	}
	return v
}

// runSearch is the whole search benchmark: build shadow, generate the
// project, start shadow on a throwaway schema and Redis prefix, measure,
// stop and clean up.
func runSearch(ctx context.Context, root, scratch string, o options) (s searchSection, err error) {
	s = searchSection{Date: time.Now(), Machine: report.ThisMachine(), Files: o.files, Ignored: o.files / 10, Runs: o.runs, Command: o.command}
	s.Revision = proc.Revision(ctx, root, "services/shadow")
	binary := filepath.Join(scratch, "shadow")
	if err := proc.Build(ctx, root, ShadowPackage, binary); err != nil {
		return s, err
	}
	project := filepath.Join(scratch, "project")
	if s.Bytes, err = makeProject(project, s.Files, s.Ignored); err != nil {
		return s, fmt.Errorf("make the project: %w", err)
	}
	in, err := startShadow(ctx, binary, filepath.Join(scratch, "home"), project)
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, in.Stop()) }()

	engines := []string{"go"}
	if rg, lookErr := exec.LookPath("rg"); lookErr == nil {
		engines = []string{"rg", "go"}
		if out, verr := exec.CommandContext(ctx, rg, "--version").Output(); verr == nil {
			s.RgVersion = strings.SplitN(string(out), "\n", 2)[0]
		}
		if s.RgCLI, err = measureRgCLI(ctx, rg, project, o.runs); err != nil {
			return s, err
		}
	}
	s.Load = loadAverage()
	s.Rows, err = measureSearch(ctx, in, project, s.Files, engines, o.runs)
	return s, err
}
