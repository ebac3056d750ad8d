package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

func queueContents(t *testing.T, s *store.Store, id string) []string {
	t.Helper()
	q, err := s.Queue(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, it := range q {
		out = append(out, it.Content)
	}
	return out
}

func TestQueueOrderFrontCancelDequeue(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	mustAppend(t, s, sess.ID, store.KindUserPrompt, `{"role":"user","content":"zero"}`)
	img := []protocol.ImageBlock{{Type: "image", Source: protocol.ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}}}
	var ids []string
	for _, c := range []string{"a", "b", "c"} {
		var images []protocol.ImageBlock
		if c == "b" {
			images = img
		}
		q, err := s.Enqueue(ctx, sess.ID, c, images)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID)
	}
	if got := queueContents(t, s, sess.ID); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Fatalf("queue %v, want a b c", got)
	}
	if ok, err := s.FrontQueued(ctx, sess.ID, ids[2]); !ok || err != nil {
		t.Fatalf("FrontQueued: %v %v", ok, err)
	}
	if ok, _ := s.CancelQueued(ctx, sess.ID, ids[0]); !ok {
		t.Fatal("CancelQueued of a queued prompt: false")
	}
	if ok, _ := s.CancelQueued(ctx, sess.ID, ids[0]); ok {
		t.Fatal("CancelQueued twice: true")
	}
	if ok, _ := s.FrontQueued(ctx, "NOPE", ids[1]); ok {
		t.Fatal("FrontQueued of another session's prompt: true")
	}
	if got := queueContents(t, s, sess.ID); len(got) != 2 || got[0] != "c" || got[1] != "b" {
		t.Fatalf("queue %v, want c b", got)
	}
	q, m, ok, err := s.DequeueAppend(ctx, sess.ID, true, 0, "")
	if err != nil || !ok || q.Content != "c" || m.Line != 2 || m.Kind != store.KindUserPrompt {
		t.Fatalf("DequeueAppend = %+v %+v %v %v, want c at line 2", q, m, ok, err)
	}
	q, m, ok, err = s.DequeueAppend(ctx, sess.ID, false, 0, "")
	if err != nil || !ok || q.Content != "b" || len(q.Images) != 1 || m.Line != 3 {
		t.Fatalf("second DequeueAppend = %+v %+v %v %v", q, m, ok, err)
	}
	var stored protocol.StoredPrompt
	msgs, _ := s.Messages(ctx, sess.ID, 2, 10)
	if len(msgs) != 1 || jsonUnmarshal(msgs[0].Payload, &stored) != nil || stored.Content != "b" || len(stored.Images) != 1 || stored.Role != "user" {
		t.Fatalf("stored prompt %+v", msgs)
	}
	if _, _, ok, err := s.DequeueAppend(ctx, sess.ID, false, 0, ""); ok || err != nil {
		t.Fatalf("DequeueAppend of an empty queue: %v %v", ok, err)
	}
	if got, _ := s.Get(ctx, sess.ID); !got.ProviderLocked {
		t.Error("lockProvider did not lock the provider")
	}
}

func TestQueueLimits(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, "NOPE", "x", nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Enqueue to an unknown session: %v, want ErrNotFound", err)
	}
	sess := mustCreate(t, s, store.NewSession{})
	for i := range store.MaxQueued {
		if _, err := s.Enqueue(ctx, sess.ID, "p", nil); err != nil {
			t.Fatalf("Enqueue %d: %v", i, err)
		}
	}
	if _, err := s.Enqueue(ctx, sess.ID, "one too many", nil); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("Enqueue past the cap: %v, want ErrQueueFull", err)
	}
	if err := s.Delete(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if got := queueContents(t, s, sess.ID); len(got) != 0 {
		t.Errorf("queue of a deleted session: %v", got)
	}
}

func TestForkAt(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	p := mustCreate(t, s, store.NewSession{})
	for range 5 {
		mustAppend(t, s, p.ID, store.KindAgent, `{"type":"assistant"}`)
	}
	if _, err := s.SetProviderSessionID(ctx, p.ID, "conv-1"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int64{-1, 6, 100} {
		if _, err := s.ForkAt(ctx, p.ID, bad); !errors.Is(err, store.ErrBadLine) {
			t.Errorf("ForkAt line %d: %v, want ErrBadLine", bad, err)
		}
	}
	if _, err := s.ForkAt(ctx, "NOPE", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ForkAt of an unknown session: %v, want ErrNotFound", err)
	}
	f, err := s.ForkAt(ctx, p.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := s.Messages(ctx, f.ID, 0, 100)
	if len(msgs) != 3 || msgs[2].Line != 3 || f.LastLine != 3 || f.ProviderSessionID != "" {
		t.Fatalf("fork at 3: %d messages, last line %d, conversation %q", len(msgs), f.LastLine, f.ProviderSessionID)
	}
	m := mustAppend(t, s, f.ID, store.KindUserPrompt, `{"role":"user","content":"x"}`)
	if m.Line != 4 {
		t.Errorf("fork's next line %d, want 4", m.Line)
	}
	whole, err := s.ForkAt(ctx, p.ID, 5)
	if err != nil || whole.ProviderSessionID != "conv-1" || whole.LastLine != 5 {
		t.Fatalf("fork at the last line: %+v %v", whole, err)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// EnqueueAs and DequeueAppend with a key are safe to call again after a
// failure that hid whether they committed: the prompt is queued once,
// taken from the queue once, logged once.
func TestQueueRetriesAreIdempotent(t *testing.T) {
	s := mustStore(t)
	ctx := context.Background()
	sess := mustCreate(t, s, store.NewSession{})
	id := store.NewID()
	for range 2 {
		if _, err := s.EnqueueAs(ctx, id, sess.ID, "once", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Enqueue(ctx, sess.ID, "next", nil); err != nil {
		t.Fatal(err)
	}
	if got := queueContents(t, s, sess.ID); len(got) != 2 || got[0] != "once" {
		t.Fatalf("queue %v, want [once next]", got)
	}
	key := store.NewAppendKey()
	for i := range 2 {
		q, m, ok, err := s.DequeueAppend(ctx, sess.ID, false, 0, key)
		if err != nil || !ok || q.Content != "once" || m.Line != 1 {
			t.Fatalf("DequeueAppend try %d = %+v %+v %v %v, want \"once\" on line 1", i, q, m, ok, err)
		}
	}
	if got := queueContents(t, s, sess.ID); len(got) != 1 || got[0] != "next" {
		t.Fatalf("queue after the dequeue and its retry: %v, want [next]", got)
	}
	msgs, err := s.Messages(ctx, sess.ID, 0, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("log %+v, %v; want the one prompt", msgs, err)
	}
}
