package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/svchttp"
)

// ConfigPrefix prefixes the app_settings key of each configuration key:
// "config/extra_dirs".
const ConfigPrefix = "config/"

// The configuration keys other parts of svc-code read.
const (
	KeyExtraDirs       = "extra_dirs"
	KeyShadowMaxFileMB = "shadow_git.max_file_size_mb"
	KeySQLTimeout      = "shadow_db.sql_timeout_s"
	KeyDefaultPreset   = "layout.default_preset"
	KeyTheme           = "ui.theme"
	KeyFontSize        = "ui.font_size"
	// KeyPushTurnSeconds: a turn that ran longer than this many seconds
	// sends a Web Push when it ends (internal/push); 0: never.
	KeyPushTurnSeconds  = "push_turn_seconds"
	maxExtraDirs        = 64
	maxShadowMaxFileMB  = 102400
	maxSQLTimeoutSecond = 3600
)

// Key is one server configuration key.
type Key struct {
	Name        string `json:"key"`
	Type        string `json:"type"`
	Default     any    `json:"default"`
	Description string `json:"description"`
	// parse decodes and checks a JSON value, returning it normalised.
	parse func(raw json.RawMessage) (any, error)
}

// Keys are every server configuration key, in the order they are listed.
// None holds a secret (provider credentials have routes of their own that
// never answer them).
var Keys = []Key{
	{
		Name: KeyExtraDirs, Type: "list of absolute paths", Default: []string{},
		Description: "Directories the file routes allow besides the home directory and the sessions' " +
			"working directories (never /, /proc, /sys or /dev). At most 64.",
		parse: parseDirs,
	},
	{
		Name: KeyShadowMaxFileMB, Type: "integer (MB)", Default: 50,
		Description: "Files larger than this are left out of shadow-git snapshots and turn commits; 0 " +
			"disables the cap. 0 to 102400.",
		parse: intIn(0, maxShadowMaxFileMB),
	},
	{
		Name: KeySQLTimeout, Type: "integer (seconds)", Default: 30,
		Description: "Deadline of each POST /api/shadow-db/sql query, past which it is interrupted " +
			"(INTERRUPT). 1 to 3600.",
		parse: intIn(1, maxSQLTimeoutSecond),
	},
	{
		Name: KeyDefaultPreset, Type: "string", Default: DefaultPreset,
		Description: "The layout preset a new window starts with: an id of GET /api/app/presets.",
		parse:       oneOf(presetIDs),
	},
	{
		Name: KeyTheme, Type: "string", Default: "system",
		Description: "Colour theme of the web UI: system, light or dark.",
		parse:       oneOf(func() []string { return []string{"system", "light", "dark"} }),
	},
	{
		Name: KeyFontSize, Type: "integer (px)", Default: 14,
		Description: "Font size of the conversation and the editors in the web UI. 10 to 24.",
		parse:       intIn(10, 24),
	},
	{
		Name: KeyPushTurnSeconds, Type: "integer (seconds)", Default: 60,
		Description: "A turn that ran longer than this sends a Web Push notification when it ends " +
			"(to the subscribed devices, unless a tab shows the session); 0 never. 0 to 86400.",
		parse: intIn(0, 86400),
	},
}

// keyByName finds a key.
func keyByName(name string) (Key, bool) {
	for _, k := range Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func keyNames() string {
	names := make([]string, len(Keys))
	for i, k := range Keys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// ParseValue checks raw as the value of the configuration key name and
// returns it normalised; JSON null means the default.
func ParseValue(name string, raw json.RawMessage) (any, error) {
	k, ok := keyByName(name)
	if !ok {
		return nil, fmt.Errorf("unknown key %q: the keys are %s", name, keyNames())
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return k.Default, nil
	}
	v, err := k.parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

func intIn(lo, hi int64) func(json.RawMessage) (any, error) {
	return func(raw json.RawMessage) (any, error) {
		var n json.Number
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 || (trimmed[0] != '-' && (trimmed[0] < '0' || trimmed[0] > '9')) ||
			json.Unmarshal(trimmed, &n) != nil {
			return nil, fmt.Errorf("want an integer from %d to %d", lo, hi)
		}
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("want an integer from %d to %d, not %s", lo, hi, n)
		}
		return v, nil
	}
}

func oneOf(values func() []string) func(json.RawMessage) (any, error) {
	return func(raw json.RawMessage) (any, error) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !slices.Contains(values(), s) {
			return nil, fmt.Errorf("want one of %s", strings.Join(values(), ", "))
		}
		return s, nil
	}
}

// forbiddenRoots are never allowed as extra directories, nor anything in
// them.
var forbiddenRoots = []string{"/proc", "/sys", "/dev"}

func parseDirs(raw json.RawMessage) (any, error) {
	var dirs []string
	if err := json.Unmarshal(raw, &dirs); err != nil || dirs == nil {
		return nil, errors.New("want a list of absolute paths")
	}
	if len(dirs) > maxExtraDirs {
		return nil, fmt.Errorf("at most %d directories", maxExtraDirs)
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if len(d) > MaxPathBytes || !utf8.ValidString(d) || strings.ContainsRune(d, 0) || !filepath.IsAbs(d) {
			return nil, fmt.Errorf("%q: want an absolute path", d)
		}
		d = filepath.Clean(d)
		if d == "/" {
			return nil, errors.New(`"/" would allow the whole file system: name the directories`)
		}
		for _, root := range forbiddenRoots {
			if d == root || strings.HasPrefix(d, root+"/") {
				return nil, fmt.Errorf("%q: %s is never allowed", d, root)
			}
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// config is the effective configuration: every key's value, and which
// keys are set (not at their default).
type config struct {
	values map[string]any
	set    map[string]bool
}

// readConfig reads the configuration. A stored value that no longer
// passes its key's checks (edited by hand) counts as unset, with a
// warning in the log.
func (s *server) readConfig(ctx context.Context) (config, error) {
	cfg := config{values: make(map[string]any, len(Keys)), set: map[string]bool{}}
	for _, k := range Keys {
		cfg.values[k.Name] = k.Default
	}
	rows, err := s.db.Query(ctx, `SELECT key, value FROM app_settings WHERE starts_with(key, $1)`, ConfigPrefix)
	if err != nil {
		return config{}, fmt.Errorf("read config: %w", err)
	}
	var key string
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&key, &raw}, func() error {
		name := strings.TrimPrefix(key, ConfigPrefix)
		if _, known := keyByName(name); !known {
			return nil
		}
		v, err := ParseValue(name, raw)
		if err != nil {
			s.log.WarnContext(ctx, "stored config value ignored", "key", name, "err", err)
			return nil
		}
		cfg.values[name] = v
		cfg.set[name] = true
		return nil
	})
	if err != nil {
		return config{}, fmt.Errorf("read config: %w", err)
	}
	return cfg, nil
}

// configKeyJSON describes a key in the answer of /api/app/config.
type configKeyJSON struct {
	Key
	Set bool `json:"set"`
}

func (s *server) answerConfig(c *fiber.Ctx) error {
	cfg, err := s.readConfig(c.UserContext())
	if err != nil {
		return err
	}
	keys := make([]configKeyJSON, len(Keys))
	for i, k := range Keys {
		keys[i] = configKeyJSON{Key: k, Set: cfg.set[k.Name]}
	}
	return c.JSON(fiber.Map{"config": cfg.values, "keys": keys})
}

// getConfig: GET /api/app/config.
func (s *server) getConfig(c *fiber.Ctx) error { return s.answerConfig(c) }

// The members of GET /api/app/config's answer, which PUT takes back.
const (
	memberConfig = "config"
	memberKeys   = "keys"
)

// putConfig: PUT /api/app/config {"key": value, ...}: sets the keys named
// (null: back to the default), all or none. It also takes what GET
// answers, {"config": {...}, "keys": [...]}: then "keys" (the keys'
// descriptions) is ignored, and the keys of "config" whose value is the
// one in effect are left as they are, so that GET's answer PUT back
// changes nothing, and an edited copy changes what was edited.
func (s *server) putConfig(c *fiber.Ctx) error {
	var req map[string]json.RawMessage
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	wrapped, hasConfig := req[memberConfig]
	if hasConfig {
		for name := range req {
			if name != memberConfig && name != memberKeys {
				return badRequest("send either GET's answer {\"config\": {...}, \"keys\": [...]} or {\"<key>\": value, ...}, "+
					"not both: %q is not a member of GET's answer", name)
			}
		}
		req = nil
		if err := json.Unmarshal(wrapped, &req); err != nil || req == nil {
			return badRequest("config: want an object of keys and values")
		}
	}
	if len(req) == 0 {
		return badRequest("nothing to change: send {\"<key>\": value, ...}; the keys are %s", keyNames())
	}
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, name)
	}
	sort.Strings(names)
	values := make(map[string]any, len(req))
	for _, name := range names {
		v, err := ParseValue(name, req[name])
		if err != nil {
			return badRequest("%s", err.Error())
		}
		values[name] = v
	}
	if hasConfig {
		current, err := s.readConfig(ctx)
		if err != nil {
			return err
		}
		names = slices.DeleteFunc(names, func(name string) bool { return sameValue(values[name], current.values[name]) })
		if len(names) == 0 {
			return s.answerConfig(c)
		}
	}
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		for _, name := range names {
			if bytes.Equal(bytes.TrimSpace(req[name]), []byte("null")) {
				if _, err := tx.Exec(ctx, `DELETE FROM app_settings WHERE key = $1`, ConfigPrefix+name); err != nil {
					return err
				}
				continue
			}
			raw, err := json.Marshal(values[name])
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO app_settings (key, value) VALUES ($1, $2)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`,
				ConfigPrefix+name, string(raw)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store config: %w", err)
	}
	s.log.InfoContext(ctx, "config changed", "keys", names)
	if s.configChanged != nil {
		if err := s.configChanged(ctx); err != nil {
			s.log.WarnContext(ctx, "config change not announced: other services see it at their next periodic read", "err", err)
		}
	}
	return s.answerConfig(c)
}

// sameValue reports whether two normalised values are the same JSON.
func sameValue(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
