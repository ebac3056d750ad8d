package terminals

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is Hooks that remembers the order of events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Started(_ context.Context, i Info) string {
	r.add("started " + i.Session)
	return ""
}
func (r *recorder) Ended(i Info) { r.add("ended " + i.Session) }
func (r *recorder) Changed()     {}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func newManager(t *testing.T, hooks Hooks) *Manager {
	t.Helper()
	m := NewManager(Config{
		Shell: "/bin/sh", Env: []string{"PATH=" + os.Getenv("PATH")}, Scrollback: 4096,
		KillGrace: time.Second, InputTimeout: time.Second,
	}, hooks)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

func attach(t *testing.T, m *Manager, session string) *Attachment {
	t.Helper()
	a, err := m.Attach(context.Background(), AttachRequest{Session: session, Cwd: func(context.Context) (string, error) { return "/", nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Sub.Close)
	return a
}

// TestConcurrentAttachStartsOneShell: clients racing to open a new
// session share one shell.
func TestConcurrentAttachStartsOneShell(t *testing.T) {
	rec := &recorder{}
	m := newManager(t, rec)
	const n = 20
	atts := make([]*Attachment, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { atts[i] = attach(t, m, "race") })
	}
	wg.Wait()
	created := 0
	for _, a := range atts {
		if a.Created {
			created++
		}
		if a.Info.PID != atts[0].Info.PID {
			t.Errorf("two shells: %d and %d", a.Info.PID, atts[0].Info.PID)
		}
	}
	if created != 1 || m.Len() != 1 {
		t.Errorf("%d attachments created a shell, %d terminals; want 1 and 1", created, m.Len())
	}
	if infos := m.List(); len(infos) != 1 || infos[0].Clients != n {
		t.Errorf("List = %+v, want one terminal with %d clients", infos, n)
	}
}

// TestKillThenAttach: the next terminal of a session starts after the
// previous one has ended, released and freed its slot.
func TestKillThenAttach(t *testing.T) {
	rec := &recorder{}
	m := newManager(t, rec)
	first := attach(t, m, "s")
	if _, err := m.Kill(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Kill of an unknown session: %v, want ErrNotFound", err)
	}
	first.Sub.Terminal().Kill() // returns at once; the terminal is ending
	second := attach(t, m, "s")
	select {
	case <-first.Sub.Terminal().Done():
	default:
		t.Fatal("a new terminal was attached before the old one ended")
	}
	if !second.Created || second.Info.PID == first.Info.PID || second.Info.Stream == first.Info.Stream {
		t.Errorf("second attach %+v, want a new shell", second.Info)
	}
	if got, want := rec.list(), []string{"started s", "ended s", "started s"}; !slices.Equal(got, want) {
		t.Errorf("hooks saw %v, want %v", got, want)
	}
}
