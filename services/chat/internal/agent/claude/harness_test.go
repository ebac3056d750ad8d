package claude

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude/claudetest"
)

// fakeBin is cmd/fakeclaude, built once for this test binary.
var fakeBin string

func TestMain(m *testing.M) { claudetest.MainWithFake(m, &fakeBin) }

// eventTimeout bounds every wait for an event; generous for -race on two
// cores, never reached when things work.
const eventTimeout = 15 * time.Second

// harness is a Provider running the fake, with the fake's transcript.
type harness struct {
	t    *testing.T
	p    *Provider
	dir  string
	log  string // FAKECLAUDE_LOG of every process of this provider
	seen []agent.Event
}

type option func(*Config)

func withEnv(kv ...string) option {
	return func(c *Config) { c.Env = append(c.Env, kv...) }
}

func newHarness(t *testing.T, opts ...option) *harness {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, log: filepath.Join(dir, "fake.jsonl")}
	cfg := Config{
		Options: agent.Options{
			Executable: fakeBin,
			Cwd:        dir,
			Env:        []string{"FAKECLAUDE_LOG=" + h.log, "FAKECLAUDE_DELAY=50ms", "FAKECLAUDE_STATE_DIR=" + state},
		},
		ControlTimeout: 5 * time.Second,
		CloseGrace:     5 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.p = New(cfg)
	t.Cleanup(func() {
		if err := h.p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		for {
			if _, err := h.p.Events().Next(ctx); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("events after close: %v", err)
				}
				return
			}
		}
	})
	return h
}

// next returns the next event.
func (h *harness) next() agent.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	e, err := h.p.Events().Next(ctx)
	if err != nil {
		h.t.Fatalf("next event: %v (seen: %s)", err, kinds(h.seen))
	}
	h.seen = append(h.seen, e)
	return e
}

// waitFor returns the first event of type T and the events before it.
func waitFor[T agent.Event](h *harness) (T, []agent.Event) {
	h.t.Helper()
	var before []agent.Event
	for {
		e := h.next()
		if t, ok := e.(T); ok {
			return t, before
		}
		before = append(before, e)
	}
}

// waitMatch returns the first event for which match is true, and the events
// before it.
func (h *harness) waitMatch(match func(agent.Event) bool) (agent.Event, []agent.Event) {
	h.t.Helper()
	var before []agent.Event
	for {
		e := h.next()
		if match(e) {
			return e, before
		}
		before = append(before, e)
	}
}

func (h *harness) send(text string, images ...agent.Image) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if err := h.p.Send(ctx, agent.Turn{Text: text, Images: images}); err != nil {
		h.t.Fatalf("send %q: %v", text, err)
	}
}

// turn sends text and waits for the turn's end.
func (h *harness) turn(text string) (agent.TurnEnded, []agent.Event) {
	h.t.Helper()
	h.send(text)
	return waitFor[agent.TurnEnded](h)
}

// transcript reads what the fake processes recorded so far.
func (h *harness) transcript() []claudetest.Line {
	h.t.Helper()
	b, err := os.ReadFile(h.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no process yet
	}
	if err != nil {
		h.t.Fatal(err)
	}
	lines, err := claudetest.ParseTranscript(b)
	if err != nil {
		h.t.Fatal(err)
	}
	return lines
}

// inputs are the stdin lines the fake processes received, decoded.
func (h *harness) inputs() []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, raw := range claudetest.Dir(h.transcript(), "in") {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// argvs are the argv of each process launched, in order.
func (h *harness) argvs() [][]string {
	h.t.Helper()
	var out [][]string
	for _, l := range h.transcript() {
		var m struct {
			Argv []string `json:"argv"`
		}
		if l.Dir == "meta" && json.Unmarshal(l.Msg, &m) == nil && m.Argv != nil {
			out = append(out, m.Argv)
		}
	}
	return out
}

func kinds(events []agent.Event) string {
	var b strings.Builder
	for i, e := range events {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(string(e.Kind()))
		if m, ok := e.(agent.Message); ok {
			b.WriteString(":" + m.Type)
			if m.Subtype != "" {
				b.WriteString("/" + m.Subtype)
			}
		}
	}
	return b.String()
}

// withoutControl drops Control events, whose place relative to the host's
// own events (TurnStarted) depends on timing.
func withoutControl(events []agent.Event) []agent.Event {
	var out []agent.Event
	for _, e := range events {
		if _, ok := e.(agent.Control); !ok {
			out = append(out, e)
		}
	}
	return out
}

func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	norm := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var x any
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(x)
		return string(b)
	}
	return norm(got) == norm(want)
}

func messageText(t *testing.T, m agent.Message) string {
	t.Helper()
	var msg struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(m.Raw, &msg); err != nil {
		t.Fatal(err)
	}
	return string(msg.Message.Content)
}
