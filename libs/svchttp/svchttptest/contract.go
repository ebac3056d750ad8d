package svchttptest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/cutproxy"
	"github.com/svc-code/svc-code/libs/envconf"
	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/redisx/redistest"
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// RunContract checks, as subtests of t, what every backend service must
// do, driving s.Start over TCP against the test Redis and PostgreSQL.
func RunContract(t *testing.T, s Service) {
	t.Run("requests", func(t *testing.T) { testRequests(t, s) })
	t.Run("health degraded", func(t *testing.T) { testHealthDegraded(t, s) })
	t.Run("refuses to start", func(t *testing.T) { testRefusesToStart(t, s) })
	t.Run("password-protected redis", func(t *testing.T) { testRedisPassword(t, s) })
	t.Run("bad config", func(t *testing.T) { testBadConfig(t, s) })
	if len(s.Postgres) > 0 {
		t.Run("postgres URLs from the data home", func(t *testing.T) { testPostgresFromDataHome(t, s) })
	}
	t.Run("shutdown", func(t *testing.T) { testShutdown(t, s) })
	t.Run("healthcheck", func(t *testing.T) { testHealthcheck(t, s) })
}

// dependency is something s pings in its health route.
type dependency struct{ check, envVar, defaultPort string }

func dependencies(s Service) []dependency {
	deps := []dependency{{"redis", svcenv.EnvRedisURL, "6379"}}
	for _, pg := range s.Postgres {
		deps = append(deps, dependency{pg.Check, pg.Var, "5432"})
	}
	return deps
}

// healthyBody is s's health answer when every dependency answers.
func healthyBody(s Service) string {
	var checks []string
	for _, dep := range dependencies(s) {
		checks = append(checks, fmt.Sprintf("%q:\"ok\"", dep.check))
	}
	slices.Sort(checks)
	return fmt.Sprintf(`{"service":%q,"status":"ok","checks":{%s}}`, s.Name, strings.Join(checks, ","))
}

// testRequests drives a running service over TCP.
func testRequests(t *testing.T, s Service) {
	inst := mustStart(t, s, testEnv(t, s))
	healthPath := svchttp.HealthPath(s.Name)
	tests := []struct {
		name        string
		method      string
		path        string
		secret      string
		wantStatus  int
		wantError   string
		wantMessage string
	}{
		{"no credential", "GET", healthPath, "", 401, "unauthorized", "requests must come through the gateway"},
		{"wrong credential", "GET", healthPath, "0123456789abcdef-wrong", 401, "unauthorized", "requests must come through the gateway"},
		{"unknown route without credential", "GET", "/api/nope", "", 401, "unauthorized", "requests must come through the gateway"},
		{"health", "GET", healthPath, testSecret, 200, "", ""},
		{"unknown route", "GET", "/api/nope", testSecret, 404, "not_found", ""},
		{"wrong method", "POST", healthPath, testSecret, 405, "method_not_allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, inst.base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := send(req, tt.secret)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tt.wantStatus {
				t.Errorf("got %d %s, want %d", got.status, got.raw, tt.wantStatus)
			}
			if e, _ := got.body["error"].(string); e != tt.wantError {
				t.Errorf("got error %q, want %q", e, tt.wantError)
			}
			if m, _ := got.body["message"].(string); m != tt.wantMessage {
				t.Errorf("got message %q, want %q", m, tt.wantMessage)
			}
		})
	}
	t.Run("health body", func(t *testing.T) {
		got, err := get(inst.base+healthPath, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if want := healthyBody(s); got.raw != want {
			t.Errorf("got %s, want %s", got.raw, want)
		}
	})
	t.Run("oversized body", func(t *testing.T) {
		// The body never comes: the limit is enforced on Content-Length,
		// before reading, and the answer arrives while the client waits.
		body, feed := io.Pipe()
		defer feed.Close()
		req, err := http.NewRequestWithContext(t.Context(), "POST", inst.base+healthPath, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 1<<20 + 1
		got, err := send(req, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if got.status != http.StatusRequestEntityTooLarge || got.body["error"] != "payload_too_large" {
			t.Errorf("got %d %s, want 413 payload_too_large", got.status, got.raw)
		}
	})
}

// testHealthDegraded starts the service through a proxy to each
// dependency, then cuts the proxy.
func testHealthDegraded(t *testing.T, s Service) {
	deps := dependencies(s)
	for _, dep := range deps {
		t.Run(dep.check, func(t *testing.T) {
			env := testEnv(t, s)
			proxy, proxied := cutproxy.ForURL(t, env[dep.envVar], dep.defaultPort)
			env[dep.envVar] = proxied
			inst := mustStart(t, s, env)

			proxy.Cut()
			got, err := get(inst.base+svchttp.HealthPath(s.Name), testSecret)
			if err != nil {
				t.Fatal(err)
			}
			checks, _ := got.body["checks"].(map[string]any)
			if got.status != http.StatusServiceUnavailable || got.body["status"] != "degraded" || got.body["error"] != "unavailable" {
				t.Errorf("got %d %s, want 503 degraded unavailable", got.status, got.raw)
			}
			if v, _ := checks[dep.check].(string); v == "" || v == "ok" {
				t.Errorf("check %s = %q, want its error", dep.check, v)
			}
			for name, v := range checks {
				if name != dep.check && v != "ok" {
					t.Errorf("check %s = %q, want ok only for the dependencies still there", name, v)
				}
			}
			if len(checks) != len(deps) {
				t.Errorf("checks = %v, want one for each of %v", checks, deps)
			}
		})
	}
}

// testRefusesToStart: the service starts only when its dependencies answer.
func testRefusesToStart(t *testing.T, s Service) {
	type refusal struct {
		name    string
		change  func(t *testing.T, env map[string]string)
		wantErr []string
	}
	tests := []refusal{
		{"redis unreachable", func(t *testing.T, env map[string]string) {
			env[svcenv.EnvRedisURL] = "redis://" + closedAddr(t) + "/0"
		}, []string{"redis", "refused"}},
	}
	for _, pg := range s.Postgres {
		tests = append(tests,
			refusal{pg.Check + " unreachable", func(t *testing.T, env map[string]string) {
				env[pg.Var] = withHost(t, env[pg.Var], closedAddr(t))
			}, []string{"postgres", pg.Var, "refused"}},
			refusal{"no " + pg.Var + " anywhere", func(_ *testing.T, env map[string]string) {
				delete(env, pg.Var)
			}, []string{pg.Var + " is not set", "postgres.env", "provision.sh"}},
		)
	}
	tests = append(tests,
		refusal{"short internal secret", func(_ *testing.T, env map[string]string) {
			env[internalauth.EnvVar] = "short"
		}, []string{internalauth.EnvVar}},
		refusal{"address in use", func(t *testing.T, env map[string]string) {
			ln := mustListen(t)
			t.Cleanup(func() { _ = ln.Close() })
			env[s.AddrVar] = ln.Addr().String()
		}, []string{"listen", "in use"}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t, s)
			tt.change(t, env)
			err := s.Start(context.Background(), getenv(env), nil, testLogger(t))
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// testBadConfig: every problem in the environment is reported at once,
// and a database URL is never repeated, as it may hold a password.
func testBadConfig(t *testing.T, s Service) {
	env := map[string]string{
		"SVC_CODE_HOME":       t.TempDir(),
		s.AddrVar:             "8080",
		svcenv.EnvBodyLimitMB: "lots",
		svcenv.EnvLogFormat:   "xml",
	}
	badURLs := []string{"mysql://root:hunter2@db/x", "ro:hunter2@db"}
	want := []string{s.AddrVar, svcenv.EnvBodyLimitMB, svcenv.EnvLogFormat}
	for i, pg := range s.Postgres {
		env[pg.Var] = badURLs[i%len(badURLs)]
		want = append(want, pg.Var)
	}
	// Cancelled: should the configuration pass, Start fails at once
	// instead of serving.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Start(ctx, getenv(env), nil, testLogger(t))
	if err == nil {
		t.Fatal("Start accepted bad values")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q repeats the database password", err)
	}
}

// testPostgresFromDataHome: with the PostgreSQL variables unset, the
// service uses those provisioning wrote to <data home>/postgres.env, and
// applies its migrations.
func testPostgresFromDataHome(t *testing.T, s Service) {
	env := testEnv(t, s)
	dbURL := env[s.Postgres[0].Var]
	file := "# Written by deploy/scripts/provision.sh\n"
	for _, pg := range s.Postgres {
		file += pg.Var + "=" + env[pg.Var] + "\n"
		delete(env, pg.Var)
	}
	if err := os.WriteFile(filepath.Join(env["SVC_CODE_HOME"], svcenv.PostgresEnvFile), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	mustStart(t, s, env)

	if _, err := pgmigratetest.Recorded(context.Background(), dbURL, s.Name); err != nil {
		t.Errorf("schema_migrations in the service's schema: %v", err)
	}
}

func testShutdown(t *testing.T, s Service) {
	inst := mustStart(t, s, testEnv(t, s))
	if err := inst.wait(t); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := get(inst.base+svchttp.HealthPath(s.Name), testSecret); err == nil {
		t.Error("the service still answers after Start returned")
	}
}

// testHealthcheck runs what -healthcheck runs against the service, running
// and then stopped.
func testHealthcheck(t *testing.T, s Service) {
	env := testEnv(t, s)
	inst := mustStart(t, s, env)
	r := envconf.New(getenv(env))
	common := svcenv.LoadCommon(r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := svchttp.Healthcheck(context.Background(), common, inst.addr, s.Name); err != nil {
		t.Errorf("Healthcheck of a running %s: %v", s.Name, err)
	}
	if err := inst.wait(t); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := svchttp.Healthcheck(context.Background(), common, inst.addr, s.Name); err == nil {
		t.Errorf("Healthcheck of a stopped %s succeeded", s.Name)
	}
}

// testRedisPassword runs s against a redis-server of the test's own that
// requires a password (and has an ACL user): given as REDIS_URL, as
// REDIS_PASSWORD_FILE, and as an ACL user, s starts, reports Redis healthy
// and makes no unauthenticated call (the server counts NOAUTH and
// WRONGPASS refusals); with no password it refuses to start, saying why.
func testRedisPassword(t *testing.T, s Service) {
	const password, userPassword = "contract-pw-71ad", "contract-user-pw-3e90" //nolint:gosec // throwaway passwords of the test's own redis-server
	srv := redistest.Start(t, redis.Options{Password: password},
		"--requirepass", password, "--user", "svc", "on", ">"+userPassword, "~*", "&*", "+@all")
	pwFile := filepath.Join(t.TempDir(), "redis.password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: password})
	defer admin.Close()
	for name, set := range map[string]map[string]string{
		"password in REDIS_URL": {svcenv.EnvRedisURL: "redis://:" + password + "@" + srv.Addr + "/0"},
		"REDIS_PASSWORD_FILE":   {svcenv.EnvRedisURL: "redis://" + srv.Addr + "/0", svcenv.EnvRedisPassword + "_FILE": pwFile},
		"ACL user":              {svcenv.EnvRedisURL: "redis://svc:" + userPassword + "@" + srv.Addr + "/0"},
	} {
		t.Run(name, func(t *testing.T) {
			env := testEnv(t, s)
			maps.Copy(env, set)
			inst := mustStart(t, s, env)
			got, err := get(inst.base+svchttp.HealthPath(s.Name), testSecret)
			if err != nil || got.status != http.StatusOK || !strings.Contains(got.raw, `"redis":"ok"`) {
				t.Errorf("health = %v %+v, want redis ok", err, got)
			}
			if err := inst.wait(t); err != nil {
				t.Fatalf("Start: %v", err)
			}
			if n, err := redistest.AuthErrors(context.Background(), admin); err != nil || n != 0 {
				t.Errorf("Redis refused %d of %s's calls for want of authentication (%v)", n, s.Name, err)
			}
		})
	}
	t.Run("no password", func(t *testing.T) {
		env := testEnv(t, s)
		env[svcenv.EnvRedisURL] = "redis://" + srv.Addr + "/0"
		err := s.Start(context.Background(), getenv(env), nil, testLogger(t))
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("Start without the password: %v, want a NOAUTH error", err)
		}
	})
}
