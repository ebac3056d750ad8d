package codex_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex/codextest"
)

// fakeBin is cmd/fakecodex, built once for this test binary.
var fakeBin string

func TestMain(m *testing.M) { codextest.MainWithFake(m, &fakeBin) }

// testPrices prices the fake's model: $1 per million input tokens, $10 per
// million output tokens.
var testPrices = codex.Prices{"mock-model": {InputPerMTok: 1, CachedInputPerMTok: 0.1, OutputPerMTok: 10}}

// newProvider starts a provider on the fake in its own cwd and CODEX_HOME;
// it is closed when the test ends.
func newProvider(t *testing.T, mutate func(*codex.Config)) *codex.Provider {
	t.Helper()
	cfg := codex.Config{
		Options: agent.Options{
			Executable: fakeBin, Cwd: t.TempDir(),
			Env: []string{"CODEX_HOME=" + t.TempDir(), "FAKECODEX_DELAY=50ms"},
			Log: slog.New(slog.NewTextHandler(t.Output(), nil)),
		},
		Prices: testPrices, KillDelay: 2 * time.Second, CloseGrace: 2 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	p := codex.New(cfg)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// collect reads events until match returns true (or 15 s pass) and
// returns them all, the matching one last.
func collect(t *testing.T, p agent.Provider, what string, match func(agent.Event) bool) []agent.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var seen []agent.Event
	for {
		ev, err := p.Events().Next(ctx)
		if errors.Is(err, io.EOF) {
			t.Fatalf("stream ended before %s; saw %v", what, kinds(seen))
		}
		if err != nil {
			t.Fatalf("no %s: %v; saw %v", what, err, kinds(seen))
		}
		seen = append(seen, ev)
		if match(ev) {
			return seen
		}
	}
}

func kinds(evs []agent.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Kind())
		if m, ok := e.(agent.Message); ok {
			out[i] += ":" + m.Type
		}
		if c, ok := e.(agent.Control); ok {
			out[i] += ":" + c.Subtype
		}
	}
	return out
}

func is[T agent.Event](e agent.Event) bool { _, ok := e.(T); return ok }

func isTurnEnded(e agent.Event) bool { return is[agent.TurnEnded](e) }

func find[T agent.Event](evs []agent.Event) (T, bool) {
	for _, e := range evs {
		if v, ok := e.(T); ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// messages returns the agent messages of a type, decoded.
func messages(evs []agent.Event, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if m, ok := e.(agent.Message); ok && m.Type == typ {
			var v map[string]any
			if err := json.Unmarshal(m.Raw, &v); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// contentOf returns the first content block of a message of evs of type
// typ whose block type is block.
func contentOf(evs []agent.Event, typ, block string) map[string]any {
	for _, m := range messages(evs, typ) {
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if bm, ok := b.(map[string]any); ok && bm["type"] == block {
				return bm
			}
		}
	}
	return nil
}

func send(t *testing.T, p agent.Provider, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.Send(ctx, agent.Turn{Text: text}); err != nil {
		t.Fatalf("Send %q: %v", text, err)
	}
}
