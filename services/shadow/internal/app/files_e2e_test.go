package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/svc-code/svc-code/libs/confignotice"
	"github.com/svc-code/svc-code/libs/pgmigrate/pgmigratetest"
	"github.com/svc-code/svc-code/libs/redisx"
)

// TestRunServesFilesInTheRoots runs shadow in-process and checks the file
// routes' wiring: the home directory, a session's directory (chat's table),
// the extra_dirs setting (chat's app_settings) and SHADOW_EXTRA_DIRS are
// roots; anything else is 403.
func TestRunServesFilesInTheRoots(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, name := range []string{"home", "session", "setting", "env", "outside"} {
		dirs[name] = filepath.Join(tmp, name)
		if err := os.MkdirAll(dirs[name], 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[name], "f.txt"), []byte(name+" file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dbURL := pgmigratetest.MustSchema(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, q := range []string{
		`CREATE TABLE sessions (id text PRIMARY KEY, cwd text NOT NULL)`,
		`CREATE TABLE app_settings (key text PRIMARY KEY, value jsonb NOT NULL)`,
	} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO sessions VALUES ('s1', $1)`, dirs["session"]); err != nil {
		t.Fatal(err)
	}
	setting, _ := json.Marshal([]string{dirs["setting"]})
	if _, err := pool.Exec(context.Background(), `INSERT INTO app_settings VALUES ('config/extra_dirs', $1)`, setting); err != nil {
		t.Fatal(err)
	}

	reread := make(chan struct{}, 16)
	log := slog.New(messageHandler{msg: "config change notice: allowed roots re-read", seen: reread})
	sh := startShadow(t, map[string]string{
		"SVC_CODE_HOME": filepath.Join(tmp, "data"), "DATABASE_URL": dbURL, "SHADOW_CONSUMER": "files-test",
		EnvExtraDirs: dirs["env"],
	}, dirs["home"], log)
	do := sh.do

	for _, name := range []string{"home", "session", "setting", "env"} {
		status, body := do(http.MethodGet, "/api/file?path="+url.QueryEscape(filepath.Join(dirs[name], "f.txt")), "")
		if status != http.StatusOK || !strings.Contains(body, name+` file\n`) {
			t.Errorf("%s root: %d %s", name, status, body)
		}
	}
	status, body := do(http.MethodGet, "/api/file?path="+url.QueryEscape(filepath.Join(dirs["outside"], "f.txt")), "")
	if status != http.StatusForbidden || !strings.Contains(body, `"error":"forbidden"`) {
		t.Errorf("outside: %d %s", status, body)
	}
	status, body = do(http.MethodPost, "/api/file/write", `{"path":"`+filepath.Join(dirs["session"], "new.txt")+`","content":"written\n"}`)
	if status != http.StatusOK || !strings.Contains(body, `"version":"sha256:`) {
		t.Errorf("write: %d %s", status, body)
	}
	if data, err := os.ReadFile(filepath.Join(dirs["session"], "new.txt")); err != nil || string(data) != "written\n" {
		t.Errorf("written file: %q, %v", data, err)
	}
	status, body = do(http.MethodGet, "/api/search?q=file&path="+url.QueryEscape(dirs["setting"]), "")
	if status != http.StatusOK || !strings.Contains(body, `"line":1`) {
		t.Errorf("search: %d %s", status, body)
	}
	status, body = do(http.MethodGet, "/api/files/roots", "")
	for _, name := range []string{"home", "session", "setting", "env"} {
		if status != http.StatusOK || !strings.Contains(body, `"`+dirs[name]+`"`) {
			t.Errorf("roots: %d %s lacks %s", status, body, name)
		}
	}

	// A change of extra_dirs applies to the next request once chat's change
	// notice arrives, not at the end of the roots cache's life.
	setting, _ = json.Marshal([]string{dirs["setting"], dirs["outside"]})
	if _, err := pool.Exec(context.Background(), `UPDATE app_settings SET value = $1 WHERE key = 'config/extra_dirs'`, setting); err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(testRedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	keys := redisx.Keys{Prefix: sh.prefix}
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond) // published again until heard: the subscription may not be up yet
	defer tick.Stop()
	for {
		if err := confignotice.Publish(context.Background(), rdb, keys); err != nil {
			t.Fatal(err)
		}
		select {
		case <-reread: // this one, or the re-read that follows the subscription itself
			status, body = do(http.MethodGet, "/api/file?path="+url.QueryEscape(filepath.Join(dirs["outside"], "f.txt")), "")
			if status == http.StatusOK && strings.Contains(body, `outside file\n`) {
				return
			}
		case <-tick.C:
		case <-deadline:
			t.Fatalf("shadow did not re-read its roots on a config change notice: outside is %d %s", status, body)
		}
	}
}
