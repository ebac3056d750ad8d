package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/svc-code/svc-code/libs/redisx"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/libs/termhosts"
	"github.com/svc-code/svc-code/services/terminal/internal/announce"
	"github.com/svc-code/svc-code/services/terminal/internal/api"
	"github.com/svc-code/svc-code/services/terminal/internal/cwdstore"
	"github.com/svc-code/svc-code/services/terminal/internal/shellexec"
	"github.com/svc-code/svc-code/services/terminal/internal/terminals"
	"github.com/svc-code/svc-code/services/terminal/internal/termws"
)

// Run serves terminal until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout: it stops accepting, ends every terminal (their
// clients get their exit frame), closes the sockets left with 1001 and
// withdraws the host from the registry. It starts only if Redis answers;
// if Redis goes away later, the health route reports it and the host's
// heartbeat lapses.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if cfg.Listener != nil {
		defer cfg.Listener.Close() // also closed by the shutdown; a second Close is harmless
	}
	secret, err := cfg.Prepare()
	if err != nil {
		return err
	}
	rdb, err := redisx.Connect(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ln, err := svchttp.Listen(ctx, cfg.Listener, cfg.Addr)
	if err != nil {
		return err
	}
	host, err := hostIdentity(cfg, ln.Addr())
	if err != nil {
		_ = ln.Close()
		return err
	}
	keys := redisx.Keys{Prefix: cfg.RedisPrefix}
	reg := termhosts.New(rdb, keys, secret, log).WithHostTTL(cfg.HostTTL)
	ann := announce.New(reg, host, log)

	env := cfg.ShellEnv
	if env == nil {
		env = os.Environ() // pty and shellexec filter it (libs/childenv)
	}
	mgr := terminals.NewManager(terminals.Config{
		Shell: cfg.Shell, ShellArgs: cfg.ShellArgs, Env: env, Scrollback: cfg.Scrollback,
		IdleTimeout: cfg.IdleTimeout, KillGrace: KillGrace, InputTimeout: cfg.WriteTimeout,
		FlowHigh: int64(cfg.FlowHigh), FlowLow: int64(cfg.FlowLow), Log: log,
	}, ann)
	ann.SetSource(mgr.List)
	hub := termws.NewHub(termws.Config{
		Heartbeat: cfg.Heartbeat, ReadTimeout: 3 * cfg.Heartbeat, WriteTimeout: cfg.WriteTimeout,
		Home: cfg.Home, Host: host.ID, Log: log,
	})

	app := svchttp.New(svchttp.Config{
		Service:   Service,
		Secret:    secret,
		BodyLimit: cfg.BodyLimit,
		Checks: []svchttp.Check{
			{Name: "redis", Ping: redisx.Pinger(rdb)},
		},
		Log: log,
	})
	api.Register(app, api.Deps{
		Manager: mgr, Hub: hub, Cwds: cwdstore.New(rdb, keys),
		Others: func(ctx context.Context) ([]termhosts.Terminal, error) { return reg.Terminals(ctx, host.ID) },
		HostID: host.ID, Home: cfg.Home,
		Runner:      &shellexec.Runner{Shell: cfg.Shell, Env: env, OutputLimit: cfg.ExecOutput},
		ExecTimeout: cfg.ExecTimeout, ExecMaxTimeout: cfg.ExecMaxTimeout,
		KillTimeout: 3*KillGrace + 2*cfg.WriteTimeout,
		Ctx:         ctx, Log: log,
	})

	if err := ann.Publish(ctx); err != nil {
		log.WarnContext(ctx, "first announcement failed; retrying with the heartbeat", "err", err)
	}
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		ann.Run(beatCtx)
	}()

	if cfg.started != nil {
		cfg.started(parts{mgr: mgr, hub: hub, host: host, reg: reg})
	}
	log.InfoContext(ctx, "listening", "addr", ln.Addr().String(), "data_home", cfg.DataHome,
		"host_id", host.ID, "advertise_url", host.URL, "shell", cfg.Shell)
	err = svchttp.Serve(ctx, app, ln, cfg.ShutdownTimeout, log)

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if cerr := mgr.Close(sctx); cerr != nil {
		log.ErrorContext(sctx, "end terminals", "err", cerr)
	}
	hub.Shutdown(sctx)
	stopBeat()
	<-beating
	var left []string
	for _, t := range mgr.List() {
		left = append(left, t.Session)
	}
	if werr := ann.Withdraw(sctx, left); werr != nil {
		log.WarnContext(sctx, "withdraw from the terminal host registry; its heartbeat will lapse", "err", werr)
	}
	return err
}

// parts are Run's running pieces, for this package's tests.
type parts struct {
	mgr  *terminals.Manager
	hub  *termws.Hub
	host termhosts.Host
	reg  *termhosts.Registry
}

// hostIdentity is the host's registry entry: TERMINAL_HOST_ID, else
// <hostname>:<port>; TERMINAL_ADVERTISE_URL, else http://<bound address>,
// with the host name for a wildcard address.
func hostIdentity(cfg Config, bound net.Addr) (termhosts.Host, error) {
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return termhosts.Host{}, fmt.Errorf("bound address %s: %w", bound, err)
	}
	hostname, herr := os.Hostname()
	h := termhosts.Host{ID: cfg.HostID, URL: cfg.AdvertiseURL}
	if h.ID == "" {
		if herr != nil {
			return termhosts.Host{}, fmt.Errorf("host name for %s: %w", EnvHostID, herr)
		}
		h.ID = hostname + ":" + port
	}
	if h.URL == "" {
		addrHost, _, _ := net.SplitHostPort(cfg.Addr)
		switch {
		case addrHost != "" && !isWildcard(addrHost):
			// Keep a name as configured (it resolves for the gateway
			// as it did for us), with the bound port.
			h.URL = "http://" + net.JoinHostPort(addrHost, port)
		case herr == nil:
			h.URL = "http://" + net.JoinHostPort(hostname, port)
		default:
			return termhosts.Host{}, errors.New("listening on a wildcard address: set " + EnvAdvertiseURL)
		}
	}
	return h, nil
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
