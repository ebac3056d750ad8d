package workspace

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Limits of favorites.
const (
	// MaxNoteRunes is the longest note on a favorite session.
	MaxNoteRunes = 2000
	// MaxFavoritePrompts is how many favorite prompts GET /api/favorites
	// lists, newest first.
	MaxFavoritePrompts = 1000
)

// favoriteSessionJSON is a favorite session as the favorite routes answer it.
type favoriteSessionJSON = protocol.FavoriteSession

// favoritePromptJSON is a favorite prompt in GET /api/favorites.
type favoritePromptJSON = protocol.FavoritePrompt

const favoriteSessionQuery = `SELECT f.session_id, f.note, s.title, s.cwd, s.archived, s.cost_usd::float8, s.turns,
	f.created_at, f.updated_at FROM session_favorites f JOIN sessions s ON s.id = f.session_id`

func scanFavoriteSession(row pgx.Row) (favoriteSessionJSON, error) {
	var f favoriteSessionJSON
	err := row.Scan(&f.SessionID, &f.Note, &f.Title, &f.Cwd, &f.Archived, &f.CostUSD, &f.Turns, &f.FavoritedAt, &f.UpdatedAt)
	f.FavoritedAt, f.UpdatedAt = f.FavoritedAt.UTC(), f.UpdatedAt.UTC()
	return f, err
}

// listFavorites: GET /api/favorites, the favorite sessions (most recently
// added first) and the favorite prompts (one per distinct text, its newest
// use, newest first).
func (s *server) listFavorites(c *fiber.Ctx) error {
	ctx := c.UserContext()
	rows, err := s.db.Query(ctx, favoriteSessionQuery+` ORDER BY f.created_at DESC, f.session_id`)
	if err != nil {
		return fmt.Errorf("list favorite sessions: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (favoriteSessionJSON, error) {
		return scanFavoriteSession(row)
	})
	if err != nil {
		return fmt.Errorf("list favorite sessions: %w", err)
	}
	rows, err = s.db.Query(ctx, `SELECT session_id, line, text, title, cwd, created_at FROM (
			SELECT DISTINCT ON (m.payload ->> 'content') m.session_id, m.line,
				coalesce(m.payload ->> 'content', '') AS text, s.title, s.cwd, m.created_at
			FROM session_messages m JOIN sessions s ON s.id = m.session_id
			WHERE m.is_favorite AND m.kind = 'user_prompt'
			ORDER BY m.payload ->> 'content', m.created_at DESC, m.session_id, m.line DESC
		) p ORDER BY created_at DESC, session_id, line LIMIT $1`, MaxFavoritePrompts)
	if err != nil {
		return fmt.Errorf("list favorite prompts: %w", err)
	}
	prompts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (favoritePromptJSON, error) {
		var p favoritePromptJSON
		err := row.Scan(&p.SessionID, &p.Line, &p.Text, &p.SessionTitle, &p.Cwd, &p.CreatedAt)
		p.PromptID = p.SessionID + ":" + strconv.FormatInt(p.Line, 10)
		p.CreatedAt = p.CreatedAt.UTC()
		return p, err
	})
	if err != nil {
		return fmt.Errorf("list favorite prompts: %w", err)
	}
	if sessions == nil {
		sessions = []favoriteSessionJSON{}
	}
	if prompts == nil {
		prompts = []favoritePromptJSON{}
	}
	return c.JSON(fiber.Map{"sessions": sessions, "prompts": prompts})
}

// putFavoriteSession: PUT /api/favorites/sessions/{id} {"note"?}: makes
// the session a favorite, or changes its note (an absent note keeps the
// one it has).
func (s *server) putFavoriteSession(c *fiber.Ctx) error {
	id := param(c, "id")
	var req struct {
		Note *string `json:"note"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Note != nil && (!utf8.ValidString(*req.Note) || utf8.RuneCountInString(*req.Note) > MaxNoteRunes) {
		return badRequest("note: at most %d characters of UTF-8", MaxNoteRunes)
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `INSERT INTO session_favorites (session_id, note)
		SELECT id, coalesce($2, '') FROM sessions WHERE id = $1
		ON CONFLICT (session_id) DO UPDATE SET note = coalesce($2, session_favorites.note), updated_at = now()`,
		id, req.Note)
	if err != nil {
		return goneSession(err, "favorite session "+id, id)
	}
	if tag.RowsAffected() == 0 { // deleted in between
		return notFound("no session %q", id)
	}
	s.changed(ctx, id)
	f, err := scanFavoriteSession(s.db.QueryRow(ctx, favoriteSessionQuery+` WHERE f.session_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("no session %q", id)
	}
	if err != nil {
		return fmt.Errorf("read favorite session %s: %w", id, err)
	}
	return c.JSON(f)
}

// deleteFavoriteSession: DELETE /api/favorites/sessions/{id}.
func (s *server) deleteFavoriteSession(c *fiber.Ctx) error {
	id := param(c, "id")
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM session_favorites WHERE session_id = $1`, id)
	if err != nil {
		return fmt.Errorf("unfavorite session %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("session %q is not a favorite", id)
	}
	s.changed(ctx, id)
	return c.JSON(fiber.Map{"ok": true, "session_id": id})
}

// ParsePromptID splits a prompt id "{session_id}:{line}" (the sid of a
// stored prompt, user_message_stored's promptId).
func ParsePromptID(promptID string) (sessionID string, line int64, ok bool) {
	i := strings.LastIndexByte(promptID, ':')
	if i <= 0 || i > maxIDBytes {
		return "", 0, false
	}
	line, err := strconv.ParseInt(promptID[i+1:], 10, 64)
	if err != nil || line < 1 || strconv.FormatInt(line, 10) != promptID[i+1:] {
		return "", 0, false
	}
	return promptID[:i], line, true
}

// putFavoritePrompt: PUT /api/favorites/prompts/{prompt_id}
// {"favorite": bool}. Marking a prompt favorite marks that stored prompt;
// unmarking unmarks every stored prompt with the same text, since a new
// prompt whose text is a favorite is stored as a favorite too.
func (s *server) putFavoritePrompt(c *fiber.Ctx) error {
	raw := param(c, "prompt_id")
	promptID, err := url.PathUnescape(raw)
	if err != nil {
		return badRequest("prompt id %q: want {session_id}:{line}", raw)
	}
	id, line, ok := ParsePromptID(promptID)
	if !ok {
		return badRequest("prompt id %q: want {session_id}:{line}", promptID)
	}
	var req struct {
		Favorite *bool `json:"favorite"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Favorite == nil {
		return badRequest("favorite (true or false) is required")
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	var tag int64
	if *req.Favorite {
		t, err := s.db.Exec(ctx, `UPDATE session_messages SET is_favorite = true
			WHERE session_id = $1 AND line = $2 AND kind = 'user_prompt'`, id, line)
		if err != nil {
			return fmt.Errorf("favorite prompt %s: %w", promptID, err)
		}
		tag = t.RowsAffected()
	} else {
		t, err := s.db.Exec(ctx, `WITH target AS (
				SELECT payload ->> 'content' AS text FROM session_messages
				WHERE session_id = $1 AND line = $2 AND kind = 'user_prompt'
			), same AS (
				UPDATE session_messages m SET is_favorite = false FROM target
				WHERE m.is_favorite AND m.kind = 'user_prompt' AND m.payload ->> 'content' = target.text
					AND NOT (m.session_id = $1 AND m.line = $2)
			)
			UPDATE session_messages SET is_favorite = false
			WHERE session_id = $1 AND line = $2 AND kind = 'user_prompt'`, id, line)
		if err != nil {
			return fmt.Errorf("unfavorite prompt %s: %w", promptID, err)
		}
		tag = t.RowsAffected()
	}
	if tag == 0 {
		return notFound("no prompt at line %d of session %q", line, id)
	}
	return c.JSON(fiber.Map{"prompt_id": promptID, "session_id": id, "line": line, "is_favorite": *req.Favorite})
}
