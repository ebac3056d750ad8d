package workspace

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// Limits of drafts.
const (
	// MaxDrafts is how many drafts are kept: creating one more drops the
	// least recently updated ones beyond it.
	MaxDrafts = 500
	// MaxTextBytes is the longest draft or stash item text, in bytes.
	MaxTextBytes = 256 << 10
	// MaxTitleRunes is the longest derived draft title, in characters.
	MaxTitleRunes = 100
	// MaxPathBytes is the longest cwd accepted.
	MaxPathBytes = 4096
	// maxIDBytes is the longest id looked up; longer ones cannot exist.
	maxIDBytes = 128
)

// draftJSON is a draft as every draft route answers it.
type draftJSON = protocol.Draft

const draftColumns = `id, text, title, cwd, session_id, created_at, updated_at`

func scanDraft(row pgx.Row) (draftJSON, error) {
	var d draftJSON
	err := row.Scan(&d.DraftID, &d.Text, &d.Title, &d.Cwd, &d.SessionID, &d.CreatedAt, &d.UpdatedAt)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

// draftRequest is the body of POST /api/drafts and PUT /api/drafts/{id}.
type draftRequest struct {
	Text      string  `json:"text"`
	Cwd       *string `json:"cwd"`
	SessionID *string `json:"session_id"`
}

// Title derives a draft's title: its first line that is not blank,
// trimmed, cut to MaxTitleRunes characters.
func Title(text string) string {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > MaxTitleRunes {
			line = string([]rune(line)[:MaxTitleRunes])
		}
		return line
	}
	return ""
}

// validText checks the text of a draft or stash item.
func validText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return badRequest("text is required and must not be blank")
	case len(text) > MaxTextBytes:
		return badRequest("text: at most %d bytes", MaxTextBytes)
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return badRequest("text: must be UTF-8 without NUL characters")
	}
	return nil
}

// cleanCwd validates an optional cwd: nil or "" is none, else an absolute
// path, returned cleaned.
func cleanCwd(cwd *string) (*string, error) {
	if cwd == nil || *cwd == "" {
		return nil, nil
	}
	if len(*cwd) > MaxPathBytes || !utf8.ValidString(*cwd) || strings.ContainsRune(*cwd, 0) {
		return nil, badRequest("cwd: at most %d bytes of UTF-8", MaxPathBytes)
	}
	if !filepath.IsAbs(*cwd) {
		return nil, badRequest("cwd %q: want an absolute path", *cwd)
	}
	clean := filepath.Clean(*cwd)
	return &clean, nil
}

// checkSession answers 404 unless the session exists. q runs the query:
// the pool, or a transaction.
func checkSession(ctx context.Context, q querier, id string) error {
	if id == "" || len(id) > maxIDBytes {
		return notFound("no session %q", id)
	}
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, id).Scan(&ok); err != nil {
		return fmt.Errorf("look up session %s: %w", id, err)
	}
	if !ok {
		return notFound("no session %q", id)
	}
	return nil
}

// deref returns *p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// querier is what pgxpool.Pool and pgx.Tx share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// validDraft checks a draft body and returns its cleaned cwd and session.
func (s *server) validDraft(ctx context.Context, req draftRequest) (cwd, session *string, err error) {
	if err := validText(req.Text); err != nil {
		return nil, nil, err
	}
	if cwd, err = cleanCwd(req.Cwd); err != nil {
		return nil, nil, err
	}
	if req.SessionID != nil && *req.SessionID != "" {
		if err := checkSession(ctx, s.db, *req.SessionID); err != nil {
			return nil, nil, err
		}
		session = req.SessionID
	}
	return cwd, session, nil
}

// listDrafts: GET /api/drafts?cwd&session, most recently updated first.
func (s *server) listDrafts(c *fiber.Ctx) error {
	cwd, session := query(c, "cwd"), query(c, "session")
	if cwd != "" {
		clean, err := cleanCwd(&cwd)
		if err != nil {
			return err
		}
		cwd = *clean
	}
	rows, err := s.db.Query(c.UserContext(), `SELECT `+draftColumns+` FROM drafts
		WHERE ($1 = '' OR cwd = $1) AND ($2 = '' OR session_id = $2)
		ORDER BY updated_at DESC, id DESC`, cwd, session)
	if err != nil {
		return fmt.Errorf("list drafts: %w", err)
	}
	drafts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (draftJSON, error) { return scanDraft(row) })
	if err != nil {
		return fmt.Errorf("list drafts: %w", err)
	}
	if drafts == nil {
		drafts = []draftJSON{}
	}
	return c.JSON(fiber.Map{"drafts": drafts, "count": len(drafts), "max": MaxDrafts})
}

// createDraft: POST /api/drafts {"text", "cwd"?, "session_id"?}. Past
// MaxDrafts, the least recently updated drafts are dropped.
func (s *server) createDraft(c *fiber.Ctx) error {
	var req draftRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	cwd, session, err := s.validDraft(ctx, req)
	if err != nil {
		return err
	}
	var d draftJSON
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// One writer at a time, so the cap holds exactly.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('svc-code drafts'))`); err != nil {
			return err
		}
		d, err = scanDraft(tx.QueryRow(ctx, `INSERT INTO drafts (id, text, title, cwd, session_id)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+draftColumns,
			newID(), req.Text, Title(req.Text), cwd, session))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM drafts WHERE id IN (
			SELECT id FROM drafts ORDER BY updated_at DESC, id DESC OFFSET $1)`, MaxDrafts)
		return err
	})
	if err != nil {
		return goneSession(err, "create draft", deref(session))
	}
	return c.Status(fiber.StatusCreated).JSON(d)
}

// updateDraft: PUT /api/drafts/{draft_id}, the same body as POST; it
// replaces the draft's text, cwd and session (an absent one is cleared).
func (s *server) updateDraft(c *fiber.Ctx) error {
	id := param(c, "draft_id")
	var req draftRequest
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	cwd, session, err := s.validDraft(ctx, req)
	if err != nil {
		return err
	}
	d, err := scanDraft(s.db.QueryRow(ctx, `UPDATE drafts
		SET text = $2, title = $3, cwd = $4, session_id = $5, updated_at = now()
		WHERE id = $1 RETURNING `+draftColumns, id, req.Text, Title(req.Text), cwd, session))
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("no draft %q", id)
	}
	if err != nil {
		return goneSession(err, "update draft "+id, deref(session))
	}
	return c.JSON(d)
}

// deleteDraft: DELETE /api/drafts/{draft_id}.
func (s *server) deleteDraft(c *fiber.Ctx) error {
	id := param(c, "draft_id")
	tag, err := s.db.Exec(c.UserContext(), `DELETE FROM drafts WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete draft %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("no draft %q", id)
	}
	return c.JSON(fiber.Map{"ok": true, "draft_id": id})
}

// clearDrafts: DELETE /api/drafts, every draft; answers how many.
func (s *server) clearDrafts(c *fiber.Ctx) error {
	tag, err := s.db.Exec(c.UserContext(), `DELETE FROM drafts`)
	if err != nil {
		return fmt.Errorf("clear drafts: %w", err)
	}
	return c.JSON(fiber.Map{"ok": true, "deleted": tag.RowsAffected()})
}
