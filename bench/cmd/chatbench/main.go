// Command chatbench measures chat fan-out across two chat instances: it
// opens N WebSockets on S sessions, half on each instance, measures the
// memory the idle sockets cost the chat processes, then has the fake Claude
// CLI stream assistant messages in every session and measures the frames
// delivered per second and the latency from the agent writing a message to
// each socket receiving it. Then (with -floor) it runs the same load from a
// bare fan-out server, the floor any server could reach on the machine
// (floor.go). It writes its section of BENCHMARKS.md.
//
//	go run ./bench/cmd/chatbench -n 10000   (make bench-chat)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/bench/internal/chatproc"
	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/bench/internal/report"
	"github.com/svc-code/svc-code/libs/protocol"
)

// Markers delimit the chat section in BENCHMARKS.md.
const (
	startMarker = "<!-- bench:chat:start -->"
	endMarker   = "<!-- bench:chat:end -->"
)

// The goals.
const (
	goalSockets     = 10000
	goalFrames      = 25000.0
	goalP99         = 50 * time.Millisecond
	goalIdlePerSock = 20 * 1024
)

type options struct {
	n, sessions, chunks int
	rate                float64
	out                 string
	write               bool
	warmup, stagger     bool
	floor               bool
	syncAgentLog        bool   // chat's CHAT_SYNC_AGENT_LOG
	floorServe          string // internal: run the floor server with these settings
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", goalSockets, "sockets to open")
	flag.IntVar(&o.sessions, "sessions", 100, "sessions the sockets are spread over")
	flag.IntVar(&o.chunks, "chunks", 30, "assistant messages the agent writes in each session")
	flag.Float64Var(&o.rate, "rate", 30000, "frames per second to offer (sets the agents' delay between messages: n/rate)")
	flag.StringVar(&o.out, "o", "", "file to write (default BENCHMARKS.md at the workspace root)")
	flag.BoolVar(&o.write, "write", true, "write the section to the file")
	flag.BoolVar(&o.warmup, "warmup", true, "start the agent processes with a short unmeasured turn first")
	flag.BoolVar(&o.stagger, "stagger", true, "spread the sessions' turn starts over one message interval (else all agents write in the same instant)")
	flag.BoolVar(&o.floor, "floor", true, "also run the same load from a bare fan-out server (no storage, relay or agents) for comparison")
	flag.BoolVar(&o.syncAgentLog, "sync-agent-log", false, "run chat with CHAT_SYNC_AGENT_LOG=on: agent messages wait for their commit to reach the disk")
	flag.StringVar(&o.floorServe, "floor-serve", "", "internal: serve as the floor server (delay,sessions)")
	flag.Parse()
	if o.floorServe != "" {
		if err := floorServe(o.floorServe); err != nil {
			fmt.Fprintln(os.Stderr, "chatbench floor server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "chatbench:", err)
		stop()
		os.Exit(1)
	}
}

// raiseNoFile raises the soft open-file limit to the hard one.
func raiseNoFile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}

func run(ctx context.Context, o options) (err error) {
	if o.n < 2*o.sessions || o.sessions < 2 {
		return fmt.Errorf("want -sessions ≥ 2 and -n ≥ 2×sessions (a socket on each instance per session)")
	}
	nofile, err := raiseNoFile()
	if err != nil {
		return fmt.Errorf("raise RLIMIT_NOFILE: %w", err)
	}
	if nofile < uint64(o.n)+256 { //nolint:gosec // G115: -n is checked to be positive above
		return fmt.Errorf("RLIMIT_NOFILE hard limit %d is too low for %d sockets; try -n %d", nofile, o.n, nofile-256)
	}
	root, dir, remove, err := proc.Scratch(ctx, "chatbench-")
	if err != nil {
		return err
	}
	defer func() { _ = remove() }()
	if o.out == "" {
		o.out = filepath.Join(root, "BENCHMARKS.md")
	}

	chatBin, fakeBin := filepath.Join(dir, "chat"), filepath.Join(dir, "fakeclaude")
	fmt.Println("building chat and fakeclaude ...")
	if err := proc.Build(ctx, root, chatproc.ChatPackage, chatBin); err != nil {
		return err
	}
	if err := proc.Build(ctx, root, chatproc.FakePackage, fakeBin); err != nil {
		return err
	}

	dbBase := os.Getenv("TEST_DATABASE_URL")
	if dbBase == "" {
		dbBase = chatproc.DefaultDatabaseURL
	}
	redisURL := proc.RedisURL()
	schema, err := chatproc.NewSchema(ctx, dbBase)
	if err != nil {
		return fmt.Errorf("PostgreSQL (TEST_DATABASE_URL): %w", err)
	}
	defer func() {
		if derr := schema.Drop(); derr != nil {
			err = errors.Join(err, fmt.Errorf("drop schema %s: %w", schema.Name, derr))
		}
	}()
	suffix, err := proc.RandomHex(6)
	if err != nil {
		return err
	}
	prefix := "chatbench:" + suffix + ":"
	defer func() {
		if derr := proc.DeleteKeys(redisURL, prefix); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	secret, err := proc.RandomHex(16)
	if err != nil {
		return err
	}

	delay := time.Duration(float64(o.n) / o.rate * float64(time.Second)).Round(time.Millisecond)
	env := []string{
		"FAKECLAUDE_DELAY=" + delay.String(),
		"FAKECLAUDE_CHUNKS=" + fmt.Sprint(o.chunks),
		"CHAT_SYNC_AGENT_LOG=" + fmt.Sprint(o.syncAgentLog),
	}
	var inst [2]*chatproc.Instance
	for i := range inst {
		in, err := chatproc.Start(ctx, chatproc.Options{
			Binary: chatBin, Home: filepath.Join(dir, fmt.Sprintf("home%d", i)),
			DatabaseURL: schema.URL, RedisURL: redisURL, RedisPrefix: prefix, Secret: secret, Env: env,
		})
		if err != nil {
			return err
		}
		defer func() {
			if serr := in.Stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}()
		inst[i] = in
	}
	a := inst[0]
	status, body, err := a.Do(ctx, "PUT", "/api/app/provider-path/claude", fmt.Sprintf(`{"path":%q}`, fakeBin))
	if err != nil {
		return fmt.Errorf("set the provider path: %w", err)
	}
	if status != 200 {
		return fmt.Errorf("set the provider path: %d %s", status, body)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return err
	}
	ids := make([]string, o.sessions)
	for s := range ids {
		status, body, err := a.Do(ctx, "POST", "/api/sessions", fmt.Sprintf(`{"cwd":%q}`, work))
		if err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		if status != 201 {
			return fmt.Errorf("create session: %d %s", status, body)
		}
		var sess struct {
			ID string `json:"session_id"`
		}
		if err := json.Unmarshal(body, &sess); err != nil {
			return fmt.Errorf("create session: %s: %w", body, err)
		}
		if sess.ID == "" {
			return fmt.Errorf("create session: no session_id in %s", body)
		}
		ids[s] = sess.ID
	}

	// Idle memory: the chat processes' RSS before and after the sockets.
	time.Sleep(2 * time.Second)
	before, err := rssOf(inst)
	if err != nil {
		return err
	}
	fmt.Printf("opening %d sockets on %d sessions over 2 instances ...\n", o.n, o.sessions)
	socks, openErr := openAll(ctx, o, inst, ids, secret)
	opened := len(socks)
	defer func() {
		for _, s := range socks {
			_ = s.conn.Close()
		}
	}()
	if opened < 2*o.sessions {
		return errors.Join(fmt.Errorf("only %d sockets opened", opened), openErr)
	}
	time.Sleep(3 * time.Second)
	after, err := rssOf(inst)
	if err != nil {
		return err
	}
	perSock := float64(after-before) / float64(opened)
	fmt.Printf("opened %d sockets; chat RSS %.1f MiB → %.1f MiB: %.1f KiB per idle socket\n",
		opened, mib(before), mib(after), perSock/1024)
	if openErr != nil {
		fmt.Println("  (failures while opening:", openErr, ")")
	}

	rd, err := newReader(socks, readers)
	if err != nil {
		return err
	}
	defer func() {
		if rd != nil {
			rd.stop()
		}
	}()
	if o.warmup {
		// Agent processes are long-lived (one warm process per session):
		// start them with a short turn that is not measured.
		fmt.Println("warm-up: a one-message turn in every session ...")
		if err := warmUp(ctx, socks, len(ids)); err != nil {
			return err
		}
		settle()
	}

	// Load: every session's agent writes o.chunks assistant messages.
	fmt.Println("load: starting the measured turns ...")
	l, err := runLoad(ctx, o, socks, len(ids), delay, []int{os.Getpid(), inst[0].Pid(), inst[1].Pid()})
	if err != nil {
		return err
	}
	r := result{
		o: o, opened: opened, openErr: openErr, delay: delay, chat: l,
		rssBefore: before, rssAfter: after, perSock: perSock, nofile: nofile,
	}
	r.owners, r.ownersErr = owners(ctx, redisURL, prefix, ids)
	if o.floor {
		// The floor runs alone: the chat processes and their sockets go
		// first (Stop is called again, harmlessly, on return).
		for _, in := range inst {
			if err := in.Stop(); err != nil {
				return err
			}
		}
		rd.stop()
		rd = nil
		for _, s := range socks {
			_ = s.conn.Close()
		}
		socks = nil
		fmt.Println("floor: the same load from the bare fan-out server ...")
		fl, err := runFloor(ctx, o, delay)
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		r.floor = &fl
	}
	r.machine = report.ThisMachine()
	if rev, rerr := proc.Commit(ctx, root); rerr == nil {
		r.revision = rev
		if dirty(ctx, root) {
			r.revision += " plus uncommitted changes"
		}
	} else {
		r.revision = "unknown"
	}
	fmt.Print(r.text())
	if o.write {
		if err := report.WriteBetween(o.out, "# Benchmarks\n\n", startMarker, endMarker, r.markdown()); err != nil {
			return err
		}
		fmt.Println("wrote", o.out)
	}
	return nil
}

// dirty reports whether the working tree has changes to what the chat
// binary is built from.
func dirty(ctx context.Context, root string) bool {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--", "services/chat", "libs").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

func rssOf(inst [2]*chatproc.Instance) (int64, error) {
	var total int64
	for _, in := range inst {
		v, err := chatproc.RSS(in.Pid())
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// sock is one benchmark WebSocket and what it received.
type sock struct {
	conn *websocket.Conn
	wmu  sync.Mutex // writes: prompts, and pongs from the reader
	fd   int        // read by the reader (reader.go)
	in   []byte     // bytes read, not yet a whole frame

	mu        sync.Mutex
	armed     bool          // a phase runs: done closes at its result
	measuring bool          // the phase counts what it reads
	done      chan struct{} // of the phase
	lat       []time.Duration
	frames    int64
	parseErrs int64
	gotResult bool
	closed    bool
	// Logged frames: the last line seen, and how many came at or below
	// the previous one (repeated or out of order) or after a gap.
	lastLine          int64
	repeated, skipped int64
	last              time.Time
}

// arm starts a phase: until the turn's result (or the socket's end), the
// frames read are those of the phase; with measure they are counted and
// timed. It returns the channel closed at the phase's end.
func (s *sock) arm(measure bool, chunks int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.measuring, s.gotResult = true, measure, false
	s.done = make(chan struct{})
	if measure {
		s.lat = make([]time.Duration, 0, chunks)
	}
	if s.closed {
		s.armed = false
		close(s.done)
	}
	return s.done
}

// frame is one text frame read at now.
func (s *sock) frame(raw []byte, now time.Time) {
	k, at, perr := parseFrame(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return
	}
	if s.measuring {
		line := frameLine(raw)
		s.frames++
		switch {
		case line == 0:
		case line <= s.lastLine:
			s.repeated++
		case s.lastLine > 0 && line > s.lastLine+1:
			s.skipped++
		}
		s.lastLine = max(s.lastLine, line)
		s.last = now
		if perr != nil {
			s.parseErrs++
		}
		if k == kindAssistant && perr == nil {
			s.lat = append(s.lat, now.Sub(at))
		}
	}
	if k == kindResult {
		s.gotResult, s.armed = true, false
		close(s.done)
	}
}

// ended marks the socket closed by the server or failed.
func (s *sock) ended() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.armed {
		s.armed = false
		close(s.done)
	}
}

// prompt sends a user_message.
func (s *sock) prompt(content string) error {
	b, err := json.Marshal(map[string]string{"type": "user_message", "content": content})
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.conn.WriteMessage(websocket.TextMessage, b)
}

// warmUp runs a one-message turn in each of the sessions (driven by the
// first sockets) and waits until every socket has seen its result.
func warmUp(ctx context.Context, socks []*sock, sessions int) error {
	dones := make([]<-chan struct{}, len(socks))
	for i, s := range socks {
		dones[i] = s.arm(false, 0)
	}
	var sendErr error
	for i := range sessions {
		sendErr = errors.Join(sendErr, socks[i].prompt("SLOW 1"))
	}
	if sendErr != nil {
		return fmt.Errorf("warm-up: send user_message: %w", sendErr)
	}
	deadline := time.After(2 * time.Minute)
	for i, done := range dones {
		select {
		case <-done:
		case <-deadline:
			return fmt.Errorf("warm-up: socket %d saw no result within 2 minutes", i)
		case <-ctx.Done():
			return ctx.Err()
		}
		socks[i].mu.Lock()
		ok := socks[i].gotResult
		socks[i].mu.Unlock()
		if !ok {
			return fmt.Errorf("warm-up: socket %d closed before the result", i)
		}
	}
	return nil
}

// openAll opens o.n sockets: socket i joins session i%S on instance
// (i/S + i%S)%2, so that socket s (< S), which drives session s, is on
// instance s%2 and every session has sockets on both instances. It returns
// the sockets opened, in order, up to the first failure.
func openAll(ctx context.Context, o options, inst [2]*chatproc.Instance, ids []string, secret string) ([]*sock, error) {
	header := map[string][]string{protocol.HeaderInternal: {secret}}
	return dialAll(ctx, o.n, header, func(i int) string {
		return "ws://" + inst[(i/o.sessions+i%o.sessions)%2].Addr + "/chat?session=" + ids[i%o.sessions]
	})
}

// dialAll opens n sockets, socket i on url(i), 64 at a time. It returns
// the sockets opened, in order, up to the first failure (those opened past
// it are closed).
func dialAll(ctx context.Context, n int, header map[string][]string, url func(i int) string) ([]*sock, error) {
	socks := make([]*sock, n)
	errs := make([]error, n)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 1024}
	for range 64 {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s, err := dialOne(ctx, &dialer, header, url(i))
				if err != nil {
					errs[i] = fmt.Errorf("socket %d: %w", i, err)
					failed.Store(true)
					return
				}
				socks[i] = s
			}
		})
	}
	wg.Wait()
	var out []*sock
	var firstErr error
	for i, s := range socks {
		if s == nil {
			firstErr = errs[i]
			if firstErr == nil {
				firstErr = fmt.Errorf("socket %d not opened (another failed first)", i)
			}
			for _, t := range socks[i+1:] {
				if t != nil {
					_ = t.conn.Close()
				}
			}
			break
		}
		out = append(out, s)
	}
	return out, firstErr
}

// dialOne opens a socket on url and reads its `connected` frame.
func dialOne(ctx context.Context, d *websocket.Dialer, header map[string][]string, url string) (*sock, error) {
	conn, resp, err := d.DialContext(ctx, url, header)
	if resp != nil {
		_ = resp.Body.Close() // the handshake's: nothing to read
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, raw, err := conn.ReadMessage()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("read connected: %w", err)
	}
	var f frame
	if err := json.Unmarshal(raw, &f); err != nil || f.Type != "connected" {
		_ = conn.Close()
		return nil, fmt.Errorf("first frame is not connected: %.200s", raw)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return &sock{conn: conn}, nil
}

// owners counts the sessions each chat instance ran (owned in Redis at
// the end of the load), by instance id, largest first.
func owners(ctx context.Context, redisURL, prefix string, ids []string) ([]int, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = prefix + "chat:owner:" + id
	}
	vals, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, v := range vals {
		if s, ok := v.(string); ok {
			count[s]++
		}
	}
	var out []int
	for _, n := range count {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b int) int { return b - a })
	return out, nil
}

// readers is how many goroutines read the sockets (see reader).
const readers = 2

// settleTime is the pause between the warm-up and the measured turns:
// the warm-up's own tail (turn records and events, the agents' idle
// writes) is over when the measured turns start.
const settleTime = 2 * time.Second

func settle() {
	fmt.Printf("settle: %s ...\n", settleTime)
	time.Sleep(settleTime)
}
