package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/svchttp"
)

// Limits of tabs.
const (
	// MaxTabs is how many tabs one profile keeps.
	MaxTabs = 100
	// MaxTabStateBytes is the largest state object of one tab, encoded.
	MaxTabStateBytes = 16 << 10
	// DefaultProfile is the profile of a request that names none.
	DefaultProfile = "default"
)

var (
	profilePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	tabIDPattern   = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	tabKindPattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
)

// Tab is one open tab. Only id and kind are required; the other fields
// say what the tab shows, state is the client's own (scroll position,
// split sizes, ...), kept as it is.
type Tab struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Title     string          `json:"title,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Cwd       string          `json:"cwd,omitempty"`
	Path      string          `json:"path,omitempty"`
	URL       string          `json:"url,omitempty"`
	Pinned    bool            `json:"pinned,omitempty"`
	State     json.RawMessage `json:"state,omitempty"`
}

// tabsJSON is the answer of GET and POST /api/app/tabs.
type tabsJSON struct {
	Profile   string     `json:"profile"`
	Tabs      []Tab      `json:"tabs"`
	Active    *string    `json:"active"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// ValidTabs checks a set of tabs and the active one: ids unique, the
// active one (if any) among them.
func ValidTabs(tabs []Tab, active *string) error {
	if len(tabs) > MaxTabs {
		return badRequest("tabs: at most %d", MaxTabs)
	}
	seen := make(map[string]bool, len(tabs))
	for i, t := range tabs {
		if err := validTab(t); err != nil {
			return badRequest("tabs[%d]: %s", i, err.Error())
		}
		if seen[t.ID] {
			return badRequest("tabs[%d]: id %q is used twice", i, t.ID)
		}
		seen[t.ID] = true
	}
	if active != nil && !seen[*active] {
		return badRequest("active %q: not the id of one of the tabs (null when none is active)", *active)
	}
	return nil
}

func validTab(t Tab) error {
	switch {
	case !tabIDPattern.MatchString(t.ID):
		return errors.New("id: 1 to 64 of A-Z a-z 0-9 _ . : -")
	case !tabKindPattern.MatchString(t.Kind):
		return errors.New("kind: 1 to 32 of a-z 0-9 _ -, starting with a letter (chat, terminal, file, ...)")
	case !utf8.ValidString(t.Title) || utf8.RuneCountInString(t.Title) > 200:
		return errors.New("title: at most 200 characters of UTF-8")
	case len(t.SessionID) > maxIDBytes:
		return fmt.Errorf("session_id: at most %d bytes", maxIDBytes)
	case t.Cwd != "" && (!filepath.IsAbs(t.Cwd) || len(t.Cwd) > MaxPathBytes):
		return errors.New("cwd: an absolute path")
	case t.Path != "" && (!filepath.IsAbs(t.Path) || len(t.Path) > MaxPathBytes):
		return errors.New("path: an absolute path")
	case len(t.State) > MaxTabStateBytes:
		return fmt.Errorf("state: at most %d bytes", MaxTabStateBytes)
	case len(t.State) > 0 && !bytes.HasPrefix(bytes.TrimSpace(t.State), []byte("{")) && !bytes.Equal(bytes.TrimSpace(t.State), []byte("null")):
		return errors.New("state: a JSON object")
	}
	if t.URL != "" {
		u, err := url.Parse(t.URL)
		if err != nil || len(t.URL) > MaxPathBytes || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("url: an absolute http or https URL")
		}
	}
	return nil
}

// profile reads the query parameter profile, DefaultProfile when absent.
func profile(c *fiber.Ctx) (string, error) {
	p := query(c, "profile")
	if p == "" {
		return DefaultProfile, nil
	}
	if !profilePattern.MatchString(p) {
		return "", badRequest("profile %q: 1 to 64 of A-Z a-z 0-9 _ . -", p)
	}
	return p, nil
}

// getTabs: GET /api/app/tabs?profile. A profile never saved has no tabs.
func (s *server) getTabs(c *fiber.Ctx) error {
	p, err := profile(c)
	if err != nil {
		return err
	}
	out := tabsJSON{Profile: p, Tabs: []Tab{}}
	var raw []byte
	var at time.Time
	err = s.db.QueryRow(c.UserContext(), `SELECT tabs, active, updated_at FROM app_tabs WHERE profile = $1`, p).
		Scan(&raw, &out.Active, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return c.JSON(out)
	}
	if err != nil {
		return fmt.Errorf("read tabs of %s: %w", p, err)
	}
	if err := json.Unmarshal(raw, &out.Tabs); err != nil {
		return fmt.Errorf("read tabs of %s: %w", p, err)
	}
	at = at.UTC()
	out.UpdatedAt = &at
	return c.JSON(out)
}

// putTabs: POST /api/app/tabs?profile {"tabs": [...], "active": id|null}
// replaces the profile's tabs.
func (s *server) putTabs(c *fiber.Ctx) error {
	p, err := profile(c)
	if err != nil {
		return err
	}
	var req struct {
		Tabs   *[]Tab  `json:"tabs"`
		Active *string `json:"active"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Tabs == nil {
		return badRequest("tabs is required (an empty list closes every tab)")
	}
	tabs := *req.Tabs
	for i := range tabs {
		if bytes.Equal(bytes.TrimSpace(tabs[i].State), []byte("null")) {
			tabs[i].State = nil
		}
	}
	if err := ValidTabs(tabs, req.Active); err != nil {
		return err
	}
	raw, err := json.Marshal(tabs)
	if err != nil {
		return fmt.Errorf("store tabs of %s: %w", p, err)
	}
	var at time.Time
	err = s.db.QueryRow(c.UserContext(), `INSERT INTO app_tabs (profile, tabs, active) VALUES ($1, $2, $3)
		ON CONFLICT (profile) DO UPDATE SET tabs = excluded.tabs, active = excluded.active, updated_at = now()
		RETURNING updated_at`, p, string(raw), req.Active).Scan(&at)
	if err != nil {
		return fmt.Errorf("store tabs of %s: %w", p, err)
	}
	at = at.UTC()
	return c.JSON(tabsJSON{Profile: p, Tabs: tabs, Active: req.Active, UpdatedAt: &at})
}
