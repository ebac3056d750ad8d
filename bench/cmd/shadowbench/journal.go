package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/turnsig"
)

// Markers delimit the journal part of the shadow section in BENCHMARKS.md.
const (
	journalStartMarker = "<!-- bench:shadow-journal:start -->"
	journalEndMarker   = "<!-- bench:shadow-journal:end -->"
)

// journalChanged is how many files each measured turn changes.
const journalChanged = 10

// journalSection is what the journal benchmark reports.
type journalSection struct {
	Date     time.Time
	Machine  report.Machine
	Revision string
	Command  string
	Files    int
	Bytes    int64
	Runs     int
	// First is the first turn_started of the project: the journal is made
	// and all files are committed (the baseline).
	First time.Duration
	// Start: turn_started with nothing changed since the last commit (a
	// snapshot, no commit). End: turn_ended after journalChanged files
	// changed (a snapshot and a commit).
	Start, End searchRow
	// Git is plain git doing the same snapshot and commit (add -A with a
	// separate index, write-tree, commit-tree, update-ref), the floor.
	Git searchRow
	// Search is GET /api/shadow/search over the journal's commits for a
	// line that one turn added; Commits is how many commits it scans.
	Search  searchRow
	Commits int
}

// journalBench drives a real shadow through the turn stream.
type journalBench struct {
	rdb     *redis.Client
	key     turnsig.Key // chat's signature: shadow journals only signed events
	stream  string
	project string
	journal string
	session string
}

// add adds a turn event and waits until shadow's consumer group has
// acknowledged it (the journal's work for it is done), answering how long
// that took from the XADD.
func (b *journalBench) add(ctx context.Context, event string, turn int) (time.Duration, error) {
	start := time.Now()
	values := map[string]any{
		"event": event, "session_id": b.session, "turn_id": b.session + ":" + strconv.Itoa(turn),
		"turn_number": strconv.Itoa(turn), "prompt": "bench turn " + strconv.Itoa(turn), "cwd": b.project,
	}
	if err := b.key.Sign(b.stream, values); err != nil {
		return 0, err
	}
	id, err := b.rdb.XAdd(ctx, &redis.XAddArgs{Stream: b.stream, Values: values}).Result()
	if err != nil {
		return 0, fmt.Errorf("add %s: %w", event, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		groups, err := b.rdb.XInfoGroups(ctx, b.stream).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			return 0, fmt.Errorf("read the consumer group: %w", err)
		}
		for _, g := range groups {
			if g.Name == "shadow" && g.LastDeliveredID == id && g.Pending == 0 {
				return time.Since(start), nil
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	return 0, fmt.Errorf("%s of turn %d not journaled within 2 minutes", event, turn)
}

// change appends a line to journalChanged files of the project.
func (b *journalBench) change(turn, files int) error {
	for k := range journalChanged {
		i := (turn*journalChanged + k) * 97 % files
		p := filepath.Join(b.project, "src", fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "// turn %d\n", turn)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkCommit verifies that the session's last commit changed
// journalChanged files.
func (b *journalBench) checkCommit(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "git", "--git-dir="+b.journal, //nolint:gosec // G204: our own journal and session names
		"diff-tree", "-r", "--name-only", "--no-commit-id",
		"refs/heads/session/"+b.session).Output()
	if err != nil {
		return fmt.Errorf("read the journal: %w", err)
	}
	if n := len(strings.Fields(string(out))); n != journalChanged {
		return fmt.Errorf("the turn's commit changed %d files, want %d", n, journalChanged)
	}
	return nil
}

// plainGit times the same snapshot with git alone, as the floor.
func plainGitCommit(ctx context.Context, project, gitDir string) (time.Duration, error) {
	env := append(os.Environ(), "GIT_DIR="+gitDir, "GIT_WORK_TREE="+project, "GIT_INDEX_FILE="+gitDir+"/bench-index",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@invalid", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@invalid")
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env, cmd.Stdin = project, env, strings.NewReader(stdin)
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	start := time.Now()
	if _, err := run("", "add", "-A", "."); err != nil {
		return 0, fmt.Errorf("git add: %w", err)
	}
	tree, err := run("", "write-tree")
	if err != nil {
		return 0, fmt.Errorf("git write-tree: %w", err)
	}
	parent, _ := run("", "rev-parse", "-q", "--verify", "refs/heads/bench")
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	commit, err := run("bench", append(args, "-F", "-")...)
	if err != nil {
		return 0, fmt.Errorf("git commit-tree: %w", err)
	}
	if _, err := run("", "update-ref", "refs/heads/bench", commit); err != nil {
		return 0, fmt.Errorf("git update-ref: %w", err)
	}
	return time.Since(start), nil
}

// runJournal is the journal benchmark: build shadow, generate the project,
// start shadow on a throwaway schema and Redis prefix, drive turns through
// the turn stream, stop and clean up.
func runJournal(ctx context.Context, root, scratch string, o options) (s journalSection, err error) {
	s = journalSection{Date: time.Now(), Machine: report.ThisMachine(), Files: o.files, Runs: o.runs, Command: o.command}
	s.Revision = proc.Revision(ctx, root, "services/shadow")
	binary := filepath.Join(scratch, "shadow-journal")
	if err := proc.Build(ctx, root, ShadowPackage, binary); err != nil {
		return s, err
	}
	project := filepath.Join(scratch, "journal-project")
	if s.Bytes, err = makeProject(project, s.Files, s.Files/10); err != nil {
		return s, fmt.Errorf("make the project: %w", err)
	}
	if project, err = filepath.EvalSymlinks(project); err != nil {
		return s, err
	}
	home := filepath.Join(scratch, "journal-home")
	in, err := startShadow(ctx, binary, home, project)
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, in.Stop()) }()
	opts, err := redis.ParseURL(proc.RedisURL())
	if err != nil {
		return s, err
	}
	rdb := redis.NewClient(opts)
	defer func() { err = errors.Join(err, rdb.Close()) }()

	sum := sha256.Sum256([]byte(project))
	b := &journalBench{
		rdb: rdb, key: turnsig.New(internalauth.FromString(in.secret)), stream: in.prefix + "turns", project: project, session: "bench",
		journal: filepath.Join(home, "projects", hex.EncodeToString(sum[:])[:16], "shadow-git"),
	}
	if s.First, err = b.add(ctx, "turn_started", 1); err != nil {
		return s, err
	}
	fmt.Fprintf(os.Stderr, "first snapshot of %d files: %s\n", s.Files, ms(s.First))
	var starts, ends []time.Duration
	for turn := 1; turn <= o.runs+1; turn++ {
		if turn > 1 {
			d, err := b.add(ctx, "turn_started", turn)
			if err != nil {
				return s, err
			}
			if turn > 2 { // the first repeat warms the page cache
				starts = append(starts, d)
			}
		}
		if err := b.change(turn, s.Files); err != nil {
			return s, err
		}
		d, err := b.add(ctx, "turn_ended", turn)
		if err != nil {
			return s, err
		}
		if err := b.checkCommit(ctx); err != nil {
			return s, err
		}
		if turn > 1 {
			ends = append(ends, d)
		}
	}
	s.Start = searchRow{Query: "turn start, nothing changed (snapshot, no commit)"}
	s.Start.P50, s.Start.P95, s.Start.Max = summarize(starts)
	s.End = searchRow{Query: fmt.Sprintf("turn end, %d files changed (snapshot and commit)", journalChanged)}
	s.End.P50, s.End.P95, s.End.Max = summarize(ends)

	// Search over the journal: a line that one turn added, across every
	// commit of every branch (the first holds the whole project).
	gitDir := "--git-dir=" + b.journal
	out, err := exec.CommandContext(ctx, "git", gitDir, "rev-list", "--all", "--count").Output()
	if err != nil {
		return s, fmt.Errorf("count the journal's commits: %w", err)
	}
	if _, err := fmt.Sscan(string(out), &s.Commits); err != nil {
		return s, fmt.Errorf("count the journal's commits: %w", err)
	}
	needle := fmt.Sprintf("// turn %d", o.runs/2+1)
	var found []time.Duration
	for i := range o.runs + 1 {
		d, hits, err := in.journalSearch(ctx, project, needle)
		if err != nil {
			return s, err
		}
		if hits != 1 {
			return s, fmt.Errorf("journal search for %q: %d commits, want 1", needle, hits)
		}
		if i > 0 {
			found = append(found, d)
		}
	}
	s.Search = searchRow{Query: fmt.Sprintf("journal search (`GET /api/shadow/search`) for a line one turn added, %d commits", s.Commits)}
	s.Search.P50, s.Search.P95, s.Search.Max = summarize(found)

	// The floor: plain git, same project, its own repository.
	floorDir := filepath.Join(scratch, "plain-git")
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", "--bare", floorDir).CombinedOutput(); err != nil {
		return s, fmt.Errorf("git init: %w: %s", err, out)
	}
	var floor []time.Duration
	for i := range o.runs + 1 {
		if err := b.change(1000+i, s.Files); err != nil {
			return s, err
		}
		d, err := plainGitCommit(ctx, project, floorDir)
		if err != nil {
			return s, err
		}
		if i > 0 {
			floor = append(floor, d)
		}
	}
	s.Git = searchRow{Query: fmt.Sprintf("plain git: add -A, write-tree, commit-tree, update-ref (%d files changed)", journalChanged)}
	s.Git.P50, s.Git.P95, s.Git.Max = summarize(floor)
	for _, r := range []searchRow{s.Start, s.End, s.Git, s.Search} {
		fmt.Fprintf(os.Stderr, "%-80s p50 %8s   p95 %8s\n", r.Query, ms(r.P50), ms(r.P95))
	}
	return s, nil
}

// Markdown is the journal part of the shadow section.
func (s journalSection) Markdown() string {
	var b strings.Builder
	b.WriteString(journalStartMarker + "\n")
	b.WriteString("## Shadow journal commits in a project of " + fmt.Sprint(s.Files) + " files\n\n")
	fmt.Fprintf(&b, "Run %s on %s, nproc %d (GOMAXPROCS %d), %s, %s, shadow built from %s. Reproduce with `%s`.\n\n",
		s.Date.UTC().Format("2006-01-02 15:04 UTC"), s.Machine.CPUModel, s.Machine.CPUs, s.Machine.GOMAXPROCS,
		s.Machine.OSArch, s.Machine.GoVersion, s.Revision, s.Command)
	fmt.Fprintf(&b, "The project: %d generated Go files of about 2 KiB (%.1f MiB; its `.gitignore` hides %d more), as in the search benchmark. "+
		"Each figure runs from the `XADD` of a turn event to the `shadow` consumer group's acknowledgement of it, "+
		"so it holds the stream delivery, the snapshot of the whole work tree through the journal's own index "+
		"(`git ls-files`, `git add -A`, `git write-tree`), the commit and its record in PostgreSQL. "+
		"%d turns after one warm-up turn; each changes %d files. "+
		"The first snapshot (the journal made, every file hashed and committed) took **%s**.\n\n",
		s.Files, float64(s.Bytes)/(1<<20), s.Files/10, s.Runs, journalChanged, ms(s.First))
	b.WriteString("| Step | p50 | p95 | max |\n|---|--:|--:|--:|\n")
	for _, r := range []searchRow{s.End, s.Start, s.Git, s.Search} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Query, ms(r.P50), ms(r.P95), ms(r.Max))
	}
	b.WriteString("\nThe plain git row is the floor: the same snapshot and commit by git alone, with no service, stream or database around it. " +
		"The journal runs about ten git commands per turn (the listing for the size cap and nested repositories, the ignored-file check, " +
		"`add`, `write-tree`, the head and tree lookups, `diff-tree` for the message, `commit-tree`, `update-ref` of the branch and of " +
		"`refs/shadow/last`), where the floor runs four. The journal search runs `git log -G` over every commit's diff " +
		"(the first commit adds the whole project). p95 and max move with other load on the machine.\n")
	b.WriteString(journalEndMarker + "\n")
	return b.String()
}

// journalSearch sends one GET /api/shadow/search for the literal needle and
// times it, answering how many commits matched.
func (in *shadowInstance) journalSearch(ctx context.Context, project, needle string) (time.Duration, int, error) {
	params := url.Values{"cwd": {project}, "q": {needle}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+in.addr+"/api/shadow/search?"+params.Encode(), nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set(protocol.HeaderInternal, in.secret)
	start := time.Now()
	resp, err := searchClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /api/shadow/search: %d %s", resp.StatusCode, body)
	}
	var a struct {
		Hits []json.RawMessage `json:"hits"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, 0, fmt.Errorf("decode the journal search answer: %w", err)
	}
	return elapsed, len(a.Hits), nil
}
