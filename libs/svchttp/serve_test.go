package svchttp_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// served is a Serve running in the background.
type served struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve has returned
	err    error         // Serve's result, once done is closed
}

// mustServe runs Serve on 127.0.0.1:0 until ctx ends or the test stops it.
func mustServe(ctx context.Context, t *testing.T) *served {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	app := svchttp.New(svchttp.Config{
		Service: testService,
		Secret:  internalauth.FromString(testSecret),
		Checks:  []svchttp.Check{{Name: "redis", Ping: func(context.Context) error { return nil }}},
		Log:     log,
	})
	ctx, cancel := context.WithCancel(ctx)
	s := &served{addr: ln.Addr().String(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = svchttp.Serve(ctx, app, ln, 5*time.Second, log)
	}()
	t.Cleanup(func() { _ = s.wait(t) })
	return s
}

// wait stops Serve and returns its result.
func (s *served) wait(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
		return s.err
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return within 15s of its context's end")
		return nil
	}
}

func common(t *testing.T, secret string) svcenv.Common {
	t.Helper()
	env := map[string]string{"SVC_CODE_HOME": t.TempDir(), "SVC_INTERNAL_SECRET": secret}
	r := envconf.New(func(k string) string { return env[k] })
	c := svcenv.LoadCommon(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServeAndHealthcheck(t *testing.T) {
	s := mustServe(context.Background(), t)
	ctx := context.Background()
	if err := svchttp.Healthcheck(ctx, common(t, testSecret), s.addr, testService); err != nil {
		t.Errorf("Healthcheck of a running app: %v", err)
	}
	err := svchttp.Healthcheck(ctx, common(t, testSecret+"-wrong"), s.addr, testService)
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Healthcheck with a wrong secret: %v, want a 401 error", err)
	}
	if err := svchttp.Healthcheck(ctx, common(t, testSecret), s.addr, "other"); err == nil {
		t.Error("Healthcheck of another service's route succeeded")
	}
	if err := s.wait(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := svchttp.Healthcheck(ctx, common(t, testSecret), s.addr, testService); err == nil {
		t.Error("Healthcheck of a stopped app succeeded")
	}
}

// TestServeCancelledBeforeServing: a shutdown that comes before fasthttp
// has taken the listener still ends Serve, cleanly, and closes it.
func TestServeCancelledBeforeServing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := mustServe(ctx, t)
	if err := s.wait(t); err != nil {
		t.Errorf("Serve: %v, want nil", err)
	}
	if conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", s.addr); err == nil {
		_ = conn.Close()
		t.Error("the listener still accepts after Serve returned")
	}
}
