// Package gatewayproc runs the real gateway as a child process for the
// benchmarks (with package proc): built from the workspace, started on a
// free port with a scratch config, data home and Redis prefix, and stopped
// and cleaned up afterwards. (The benchmarks cannot import the gateway:
// its packages are internal to its module.)
package gatewayproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-code/svc-code/bench/internal/proc"
	"github.com/svc-code/svc-code/libs/configfile"
)

// Package is the gateway's main package, relative to the workspace root.
const Package = "./services/gateway/cmd/gateway"

// Build compiles the gateway from the workspace at root into binary.
func Build(ctx context.Context, root, binary string) error {
	return proc.Build(ctx, root, Package, binary)
}

// Options say how to run the gateway.
type Options struct {
	Binary   string
	Dir      string // scratch directory for the config file and data home
	Backend  string // host:port serving every backend service
	Secret   string // the internal credential
	RedisURL string
	// RedisPrefix is the prefix of the gateway's Redis keys (its and the
	// backends' it shares them with); empty picks a fresh bench:<random>:.
	// Every key under it is deleted when the gateway stops.
	RedisPrefix string
}

// Gateway is a running gateway process.
type Gateway struct {
	// Addr is the gateway's host:port.
	Addr string
	// Token is the API token, for Authorization: Bearer.
	Token string

	*proc.Process
	redisURL string
	prefix   string
}

// stopTimeout is how long the gateway has to stop after SIGTERM.
const stopTimeout = 15 * time.Second

// Start launches the gateway and returns once it answers /health.
// Cancelling ctx stops the gateway as Stop does: SIGTERM, then SIGKILL.
func Start(ctx context.Context, o Options) (*Gateway, error) {
	addr, err := proc.FreeAddr(ctx)
	if err != nil {
		return nil, err
	}
	suffix, err := proc.RandomHex(6)
	if err != nil {
		return nil, err
	}
	password, err := proc.RandomHex(12)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(o.Dir, "config.yaml")
	backend := "http://" + o.Backend
	g := &Gateway{Addr: addr, redisURL: o.RedisURL, prefix: "bench:" + suffix + ":"}
	if o.RedisPrefix != "" {
		g.prefix = o.RedisPrefix
	}
	g.Process, err = proc.Start(ctx, proc.Config{
		Name: "gateway", Path: o.Binary, StopTimeout: stopTimeout,
		// A minimal environment, so that no SVC_* variable of the caller's
		// changes what is measured.
		Env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + o.Dir,
			"SVC_ADDR=" + addr,
			"SVC_CONFIG=" + config,
			"SVC_CODE_HOME=" + filepath.Join(o.Dir, "home"),
			"SVC_INTERNAL_SECRET=" + o.Secret,
			"SVC_CODE_PASSWORD=" + password,
			"REDIS_URL=" + o.RedisURL,
			"REDIS_PREFIX=" + g.prefix,
			"CHAT_URL=" + backend,
			"TERMINAL_URL=" + backend,
			"SHADOW_URL=" + backend,
			"ANALYTICS_URL=" + backend,
			"LOG_LEVEL=warn",
			// The load comes from one address, with more connections
			// than a browser opens: the per-client cap is not measured.
			"SVC_MAX_CONNS_PER_CLIENT=0",
		},
	})
	if err != nil {
		return nil, err
	}
	if err := g.WaitReady(ctx, 30*time.Second, proc.GetOK(g.URL("http")+"/health", nil)); err != nil {
		return nil, errors.Join(err, g.Stop())
	}
	doc, err := configfile.New(config).Read()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read gateway config: %w", err), g.Stop())
	}
	if g.Token, _ = doc.String("api_token"); g.Token == "" {
		return nil, errors.Join(fmt.Errorf("no api_token in %s", config), g.Stop())
	}
	return g, nil
}

// URL is the gateway's base URL for scheme ("http" or "ws").
func (g *Gateway) URL(scheme string) string { return scheme + "://" + g.Addr }

// Logs is what the gateway wrote to stdout and stderr so far.
func (g *Gateway) Logs() string { return g.Log() }

// Stop ends the gateway with SIGTERM (SIGKILL after stopTimeout) and
// deletes its Redis keys.
func (g *Gateway) Stop() error {
	return errors.Join(g.Process.Stop(), proc.DeleteKeys(g.redisURL, g.prefix))
}
