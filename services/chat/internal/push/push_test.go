package push

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/SherClockHolmes/webpush-go"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/push/pushtest"
)

func TestLoadKeysConcurrentFirstStarts(t *testing.T) {
	home := t.TempDir()
	var wg sync.WaitGroup
	keys := make([]Keys, 8)
	errs := make([]error, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = LoadKeys(home)
		}()
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || keys[i] != keys[0] {
			t.Fatalf("start %d: %v %v, want the same pair as start 0", i, keys[i].Public, errs[i])
		}
	}
	info, err := os.Stat(filepath.Join(home, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	left, _ := filepath.Glob(filepath.Join(home, "push", ".vapid-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// A damaged file is an error, not a silent new key (the browsers'
	// subscriptions are bound to the old one).
	if err := os.WriteFile(filepath.Join(home, KeyFile), []byte(`{"public_key":"x","private_key":"y"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(home); err == nil {
		t.Error("a damaged key file was accepted")
	}
}

func TestFitPayload(t *testing.T) {
	small := protocol.PushPayload{Kind: protocol.PushPermission, ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
	if b := fitPayload(small); !strings.Contains(string(b), `"input":{"command":"ls"}`) || strings.Contains(string(b), "truncated") {
		t.Errorf("small payload = %s", b)
	}
	cmd, _ := json.Marshal(map[string]string{"command": strings.Repeat("échó ", 2000)})
	big := protocol.PushPayload{Kind: protocol.PushPermission, ToolName: "Bash", Input: cmd, Token: strings.Repeat("t", 200)}
	b := fitPayload(big)
	if len(b) > MaxPayload {
		t.Fatalf("payload of %d bytes, want at most %d", len(b), MaxPayload)
	}
	var got protocol.PushPayload
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var preview string
	if !got.InputTruncated || json.Unmarshal(got.Input, &preview) != nil || !strings.HasPrefix(string(cmd), strings.TrimSuffix(preview, "…")) || len(preview) < 2000 {
		t.Errorf("truncated: %v, preview of %d bytes: %.80q", got.InputTruncated, len(preview), preview)
	}

	// The largest payload fits one record of the library, and the test
	// push service decrypts it back.
	keys, err := LoadKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ps := pushtest.New(t)
	sub := ps.Subscribe()
	resp, err := webpush.SendNotification(b, &webpush.Subscription{Endpoint: sub.Endpoint, Keys: webpush.Keys{P256dh: sub.P256dh, Auth: sub.Auth}},
		&webpush.Options{Subscriber: "test@example.com", TTL: 60, VAPIDPublicKey: keys.Public, VAPIDPrivateKey: keys.Private})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	p := ps.WaitN(1, 5*time.Second, func(pushtest.Push) bool { return true })[0]
	if p.Err != nil || string(p.Payload) != string(b) || p.VAPIDKey != keys.Public || p.Subject != "mailto:test@example.com" {
		t.Errorf("push: err %v, payload equal %v, key %q, sub %q", p.Err, string(p.Payload) == string(b), p.VAPIDKey, p.Subject)
	}
}

func TestTokens(t *testing.T) {
	tk := newTokens([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Now()
	tok := tk.issue("s1", "r1", "d1", now.Add(time.Minute))
	c, err := tk.open(tok, now)
	if err != nil || c.Session != "s1" || c.Request != "r1" || c.Digest != "d1" || c.Nonce == "" {
		t.Fatalf("open = %+v, %v", c, err)
	}
	if _, err := tk.open(tok, now.Add(2*time.Minute)); err == nil {
		t.Error("an expired token opened")
	}
	other := newTokens([]byte("another key, another key, another"))
	if _, err := other.open(tok, now); err == nil {
		t.Error("a token opened under another key")
	}
	for _, bad := range []string{"", ".", "x.y", tok + "A", strings.Repeat("a", 2000), tok[:len(tok)-1]} {
		if _, err := tk.open(bad, now); err == nil {
			t.Errorf("token %.40q opened", bad)
		}
	}
	if tk.issue("s1", "r1", "d1", now.Add(time.Minute)) == tok {
		t.Error("two tokens for one request are equal (no nonce)")
	}
}

// A test push asked of a Service that is not running is refused at once,
// not left waiting.
func TestTestPushRefusedWhenNotRunning(t *testing.T) {
	s := New(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, done, err := s.Test(ctx, "ps_x"); !errors.Is(err, ErrBusy) || done {
		t.Fatalf("Test = done %v, %v; want ErrBusy", done, err)
	}
}
