package workspace

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Limits of the welcome routes.
const (
	// DefaultWelcomeLimit is how many rows a welcome list answers by default.
	DefaultWelcomeLimit = 20
	// MaxWelcomeLimit is the most a welcome list or search answers.
	MaxWelcomeLimit = 100
	// MaxFirstPromptRunes is how much of a session's first prompt the
	// welcome list shows.
	MaxFirstPromptRunes = 300
	// MaxSearchRunes is the longest search query.
	MaxSearchRunes = 500
)

// limitParam reads the query parameter limit: 1 to MaxWelcomeLimit,
// DefaultWelcomeLimit when absent.
func limitParam(c *fiber.Ctx) (int, error) {
	raw := query(c, "limit")
	if raw == "" {
		return DefaultWelcomeLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxWelcomeLimit {
		return 0, badRequest("limit %q: want a number from 1 to %d", raw, MaxWelcomeLimit)
	}
	return n, nil
}

// cwdParam reads the optional query parameter cwd, cleaned.
func cwdParam(c *fiber.Ctx) (string, error) {
	cwd := query(c, "cwd")
	clean, err := cleanCwd(&cwd)
	if err != nil || clean == nil {
		return "", err
	}
	return *clean, nil
}

// welcomeSessionJSON is a session of the welcome list.
type welcomeSessionJSON = protocol.WelcomeSession

// projectName is the last element of a project's directory.
func projectName(cwd string) string {
	return filepath.Base(cwd)
}

// welcomeSessions: GET /api/welcome/sessions?limit&cwd, the sessions that
// are not archived, most recently active first.
func (s *server) welcomeSessions(c *fiber.Ctx) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	cwd, err := cwdParam(c)
	if err != nil {
		return err
	}
	rows, err := s.db.Query(c.UserContext(), `SELECT s.id, s.title, s.cwd, s.provider,
			coalesce(fp.text, ''), s.cost_usd::float8, s.turns,
			(SELECT count(*) FROM session_files f WHERE f.session_id = s.id),
			EXISTS (SELECT 1 FROM session_favorites sf WHERE sf.session_id = s.id),
			s.next_line, s.created_at, s.updated_at
		FROM sessions s
		LEFT JOIN LATERAL (
			SELECT left(coalesce(m.payload ->> 'content', ''), $3) AS text FROM session_messages m
			WHERE m.session_id = s.id AND m.kind = 'user_prompt' ORDER BY m.line LIMIT 1
		) fp ON true
		WHERE NOT s.archived AND ($1 = '' OR s.cwd = $1)
		ORDER BY s.updated_at DESC, s.id DESC LIMIT $2`, cwd, limit, MaxFirstPromptRunes)
	if err != nil {
		return fmt.Errorf("welcome sessions: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (welcomeSessionJSON, error) {
		var w welcomeSessionJSON
		err := row.Scan(&w.SessionID, &w.Title, &w.Project, &w.Provider, &w.FirstPrompt, &w.CostUSD, &w.Turns,
			&w.FilesChanged, &w.IsFavorite, &w.LastLine, &w.CreatedAt, &w.UpdatedAt)
		w.ProjectName = projectName(w.Project)
		w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
		return w, err
	})
	if err != nil {
		return fmt.Errorf("welcome sessions: %w", err)
	}
	if sessions == nil {
		sessions = []welcomeSessionJSON{}
	}
	return c.JSON(fiber.Map{"sessions": sessions})
}

// welcomeProjectJSON is a project (a distinct session cwd) of the welcome view.
type welcomeProjectJSON = protocol.WelcomeProject

// welcomeProjects: GET /api/welcome/projects?limit, the distinct working
// directories of the sessions, most recently active first.
func (s *server) welcomeProjects(c *fiber.Ctx) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	rows, err := s.db.Query(c.UserContext(), `SELECT cwd,
			count(*) FILTER (WHERE NOT archived), count(*) FILTER (WHERE archived),
			sum(cost_usd)::float8, sum(turns), max(updated_at)
		FROM sessions GROUP BY cwd ORDER BY max(updated_at) DESC, cwd LIMIT $1`, limit)
	if err != nil {
		return fmt.Errorf("welcome projects: %w", err)
	}
	projects, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (welcomeProjectJSON, error) {
		var p welcomeProjectJSON
		err := row.Scan(&p.Cwd, &p.Sessions, &p.ArchivedSessions, &p.CostUSD, &p.Turns, &p.LastActivity)
		p.Name = projectName(p.Cwd)
		p.LastActivity = p.LastActivity.UTC()
		return p, err
	})
	if err != nil {
		return fmt.Errorf("welcome projects: %w", err)
	}
	if projects == nil {
		projects = []welcomeProjectJSON{}
	}
	return c.JSON(fiber.Map{"projects": projects})
}

// searchHitJSON is one result of POST /api/welcome/search.
type searchHitJSON = protocol.SearchHit

// searchSQL ranks session titles and prompts with the text search indexes
// of the migration *_welcome.sql, whose expressions it repeats exactly.
const searchSQL = `WITH q AS (SELECT websearch_to_tsquery('english', $1) AS q),
hits AS (
	(SELECT 'session' AS kind, s.id AS session_id, NULL::bigint AS line, s.title AS text, s.updated_at AS at,
		ts_rank(setweight(to_tsvector('english', s.title), 'A'), q.q) AS rank
	FROM sessions s, q
	WHERE to_tsvector('english', s.title) @@ q.q AND ($2 = '' OR s.cwd = $2)
	UNION ALL
	SELECT 'prompt', m.session_id, m.line, m.payload ->> 'content', m.created_at,
		ts_rank(to_tsvector('english', left(coalesce(m.payload ->> 'content', ''), 32768)), q.q)
	FROM session_messages m, q
	WHERE m.kind = 'user_prompt'
		AND to_tsvector('english', left(coalesce(m.payload ->> 'content', ''), 32768)) @@ q.q
		AND ($2 = '' OR m.session_id IN (SELECT id FROM sessions WHERE cwd = $2)))
	ORDER BY rank DESC, at DESC LIMIT $3
)
SELECT h.kind, h.session_id, h.line, s.title, s.cwd, s.archived,
	ts_headline('english', left(coalesce(h.text, ''), 32768), q.q,
		'MaxFragments=2, MaxWords=24, MinWords=8, StartSel=**, StopSel=**'),
	h.rank::float8, h.at
FROM hits h JOIN sessions s ON s.id = h.session_id, q
ORDER BY h.rank DESC, h.at DESC`

// welcomeSearch: POST /api/welcome/search {"query", "limit"?, "cwd"?}:
// full-text search over session titles and prompts, best first.
func (s *server) welcomeSearch(c *fiber.Ctx) error {
	var req struct {
		Query string  `json:"query"`
		Limit *int    `json:"limit"`
		Cwd   *string `json:"cwd"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	q := strings.TrimSpace(req.Query)
	switch {
	case q == "":
		return badRequest("query is required")
	case !utf8.ValidString(q) || strings.ContainsRune(q, 0) || utf8.RuneCountInString(q) > MaxSearchRunes:
		return badRequest("query: at most %d characters of UTF-8", MaxSearchRunes)
	}
	limit := DefaultWelcomeLimit
	if req.Limit != nil {
		if *req.Limit < 1 || *req.Limit > MaxWelcomeLimit {
			return badRequest("limit: a number from 1 to %d", MaxWelcomeLimit)
		}
		limit = *req.Limit
	}
	cwd, err := cleanCwd(req.Cwd)
	if err != nil {
		return err
	}
	filter := ""
	if cwd != nil {
		filter = *cwd
	}
	rows, err := s.db.Query(c.UserContext(), searchSQL, q, filter, limit)
	if err != nil {
		return fmt.Errorf("welcome search: %w", err)
	}
	hits, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (searchHitJSON, error) {
		var h searchHitJSON
		err := row.Scan(&h.Kind, &h.SessionID, &h.Line, &h.Title, &h.Cwd, &h.Archived, &h.Snippet, &h.Rank, &h.At)
		if h.Line != nil {
			id := h.SessionID + ":" + strconv.FormatInt(*h.Line, 10)
			h.PromptID = &id
		}
		h.At = h.At.UTC()
		return h, err
	})
	if err != nil {
		return fmt.Errorf("welcome search: %w", err)
	}
	if hits == nil {
		hits = []searchHitJSON{}
	}
	return c.JSON(fiber.Map{"query": q, "results": hits})
}
