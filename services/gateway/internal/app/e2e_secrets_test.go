package app

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStackRefusesTheConfigFileToFileRoutes is issue 15's attack on the
// file routes, through the stack: the gateway and the real shadow share a
// HOME, so the gateway's config file (password hash, cookie secret, token
// key) is ~/.config/svc-code/config.yaml inside shadow's allowed roots. No
// credential gets it from any file route, however the path is spelled.
func TestStackRefusesTheConfigFileToFileRoutes(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./services/shadow/cmd/shadow")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "notes.txt"), []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dataHome := filepath.Join(home, ".svc-code")
	prefix := "test:" + randomHex(6) + ":"
	shadowAddr := freeAddr(t)
	startProc(t, filepath.Join(bin, "shadow"), append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME=", "SVC_CONFIG=", "SVC_CODE_HOME="+dataHome,
		"SVC_INTERNAL_SECRET="+testSecret, "SVC_INTERNAL_SECRET_FILE=", "REDIS_URL="+redisURL(), "REDIS_PREFIX="+prefix,
		"LOG_FORMAT=json", "DATABASE_URL="+testSchemaURL(t), "SHADOW_ADDR="+shadowAddr, "SHADOW_CONSUMER=e2e-secrets",
	))
	g := startGateway(t, func(env map[string]string, _ *Config) {
		env["HOME"] = home
		env["SVC_CONFIG"] = "" // the default place: ~/.config/svc-code/config.yaml
		env["SVC_CODE_HOME"] = dataHome
		env[EnvShadowURL] = "http://" + shadowAddr
		env["REDIS_PREFIX"] = prefix
	})
	cfgPath := filepath.Join(home, ".config", "svc-code", "config.yaml")
	if g.cfgPath != cfgPath {
		t.Fatalf("the gateway's config is %s, want %s", g.cfgPath, cfgPath)
	}
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^cookie_secret: *"?([^"\s]+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no cookie_secret in the config:\n%s", data)
	}
	cookieSecret := string(m[1])
	tok := g.token()
	waitFor(t, 30*time.Second, "shadow behind the gateway", func() bool {
		return g.do(req{path: "/api/file?path=" + url.QueryEscape(filepath.Join(home, "notes.txt")), headers: bearer(tok)}).status == 200
	})
	for _, p := range []string{
		"~/.config/svc-code/config.yaml",
		cfgPath,
		home + "/.config//svc-code/./config.yaml",
		home + "/x/../.config/svc-code/config.yaml",
		home + "/.svc-code/internal.key",
	} {
		for _, route := range []string{"/api/file?path=", "/api/file-raw?path=", "/view?path="} {
			r := g.do(req{path: route + url.QueryEscape(p), headers: bearer(tok)})
			if r.status != 403 || !strings.Contains(r.body, `"error":"forbidden"`) || strings.Contains(r.body, cookieSecret) {
				t.Errorf("%s%s: %d %.300s; want 403 forbidden", route, p, r.status, r.body)
			}
		}
	}
	r := g.do(req{path: "/api/search?q=" + url.QueryEscape(cookieSecret[:12]) + "&path=" + url.QueryEscape(home), headers: bearer(tok)})
	if r.status != 200 || strings.Contains(r.body, cookieSecret[:12]) {
		t.Errorf("search of home: %d %.300s; want no match", r.status, r.body)
	}
}
