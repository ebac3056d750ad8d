package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Session is a row of the sessions table.
type Session struct {
	ID             string
	Title          string
	Cwd            string
	Provider       string
	ProviderLocked bool
	PermissionMode string
	Model          string
	Archived       bool
	// ParentID is the session this one was forked or archived from; "" if
	// none (or when that session was deleted).
	ParentID string
	// ProviderSessionID is the agent's own conversation id, for --resume;
	// "" until the agent reports one.
	ProviderSessionID string
	// CLISessionID is the Claude Code or Codex session (its id, the same as
	// the agent's conversation id) that this session was created to continue
	// ("Continue here"); "" for other sessions, and after Clear (the
	// archived copy keeps it).
	CLISessionID string
	CostUSD      float64
	Turns        int
	// LastLine is the last line given (sessions.next_line): the newest
	// message's, 0 for an empty log, unless the newest lines were lost
	// (Append.After) or cleared.
	LastLine  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewSession is what Create needs.
type NewSession struct {
	Cwd            string // required
	Provider       string // required
	Title          string
	PermissionMode string // "" means "default"
	Model          string
	// ProviderSessionID, when set, is the agent conversation the session's
	// first turn resumes (a CLI session continued here). Such a session's
	// provider is locked from the start: another provider could not resume
	// the conversation.
	ProviderSessionID string
	// CLISessionID marks a session made to continue that CLI session.
	CLISessionID string
}

const sessionColumns = `id, title, cwd, provider, provider_locked, permission_mode, model, archived,
	coalesce(parent_id, ''), coalesce(provider_session_id, ''), cost_usd::float8, turns, next_line,
	created_at, updated_at, coalesce(cli_session_id, '')`

func scanSession(row pgx.Row) (Session, error) {
	var s Session
	err := row.Scan(&s.ID, &s.Title, &s.Cwd, &s.Provider, &s.ProviderLocked, &s.PermissionMode, &s.Model,
		&s.Archived, &s.ParentID, &s.ProviderSessionID, &s.CostUSD, &s.Turns, &s.LastLine,
		&s.CreatedAt, &s.UpdatedAt, &s.CLISessionID)
	return s, err
}

// Create stores a new session with a new id.
func (s *Store) Create(ctx context.Context, n NewSession) (Session, error) {
	if n.PermissionMode == "" {
		n.PermissionMode = "default"
	}
	row := s.db.QueryRow(ctx, `INSERT INTO sessions (id, title, cwd, provider, provider_locked, permission_mode, model,
			provider_session_id, cli_session_id)
		VALUES ($1, $2, $3, $4, $7 <> '', $5, $6, nullif($7, ''), nullif($8, '')) RETURNING `+sessionColumns,
		NewID(), n.Title, n.Cwd, n.Provider, n.PermissionMode, n.Model, n.ProviderSessionID, n.CLISessionID)
	sess, err := scanSession(row)
	if err != nil {
		return Session{}, fmt.Errorf("create session: %w", err)
	}
	return sess, nil
}

// Get returns the session id.
func (s *Store) Get(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if err != nil {
		return Session{}, notFound(err, "get session", id)
	}
	return sess, nil
}

// update runs an UPDATE ... WHERE id = $1 with set, returning the session.
func (s *Store) update(ctx context.Context, op, id, set string, args ...any) (Session, error) {
	row := s.db.QueryRow(ctx, `UPDATE sessions SET `+set+`, updated_at = now() WHERE id = $1 RETURNING `+sessionColumns,
		append([]any{id}, args...)...)
	sess, err := scanSession(row)
	if err != nil {
		return Session{}, notFound(err, op, id)
	}
	return sess, nil
}

// UpdateTitle sets the session's title.
func (s *Store) UpdateTitle(ctx context.Context, id, title string) (Session, error) {
	return s.update(ctx, "update title of session", id, `title = $2`, title)
}

// SetPermissionMode stores the session's permission mode, the one its next
// process is launched with.
func (s *Store) SetPermissionMode(ctx context.Context, id, mode string) (Session, error) {
	return s.update(ctx, "set permission mode of session", id, `permission_mode = $2`, mode)
}

// SetArchived archives or unarchives the session.
func (s *Store) SetArchived(ctx context.Context, id string, archived bool) (Session, error) {
	return s.update(ctx, "archive session", id, `archived = $2`, archived)
}

// Patch sets, in one statement, the session's title when title is not
// nil and its archived flag when archived is not nil; both nil is a
// plain read that still bumps updated_at, so callers check first.
func (s *Store) Patch(ctx context.Context, id string, title *string, archived *bool) (Session, error) {
	return s.update(ctx, "update session", id, `title = coalesce($2::text, title), archived = coalesce($3::boolean, archived)`, title, archived)
}

// SetProviderSessionID stores the agent's conversation id, for --resume.
func (s *Store) SetProviderSessionID(ctx context.Context, id, providerSessionID string) (Session, error) {
	return s.update(ctx, "set provider session id of session", id, `provider_session_id = nullif($2, '')`, providerSessionID)
}

// SetProvider binds the session to provider. Once the provider is locked
// (after the first prompt, or from the start for a session that resumes an
// agent conversation), or while the session holds an agent conversation id,
// it fails with ErrProviderLocked, unless provider is the one already bound
// (then nothing changes).
func (s *Store) SetProvider(ctx context.Context, id, provider string) (Session, error) {
	row := s.db.QueryRow(ctx, `UPDATE sessions SET provider = $2, updated_at = now()
		WHERE id = $1 AND ((NOT provider_locked AND provider_session_id IS NULL) OR provider = $2)
		RETURNING `+sessionColumns, id, provider)
	sess, err := scanSession(row)
	switch {
	case err == nil:
		return sess, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return Session{}, fmt.Errorf("set provider of session %s: %w", id, err)
	}
	if _, err := s.Get(ctx, id); err != nil {
		return Session{}, err
	}
	return Session{}, fmt.Errorf("set provider of session %s: %w", id, ErrProviderLocked)
}

// RecordTurn counts a finished turn: turns + 1, its cost added, the
// provider locked (the first turn locks it).
func (s *Store) RecordTurn(ctx context.Context, id string, costUSD float64) (Session, error) {
	return s.update(ctx, "record turn of session", id,
		`turns = turns + 1, cost_usd = cost_usd + $2, provider_locked = true`, costUSD)
}

// Delete removes the session and its log. Forks of it keep their copy of
// the log and lose their parent_id.
//
// The rows it changes (the session's, and its forks' for their parent_id)
// are locked first, in id order, as append batches lock the sessions they
// append to (AppendMessages): deleting a parent would otherwise lock it,
// then its forks, and deadlock with a batch holding a fork and waiting
// for the parent.
func (s *Store) Delete(ctx context.Context, id string) error {
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 OR parent_id = $1 ORDER BY id FOR UPDATE`, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// Fork copies the session, its log included (same lines), into a new
// session whose parent_id is id. A session with an empty log can be forked.
//
// The fork keeps the provider, its lock, the permission mode, the model and
// the provider's conversation id: its first turn must continue that
// conversation as a fork of it (Claude Code: --resume with --fork-session),
// never append to the parent's. Its cost_usd and turns start at zero: they
// count what the fork itself runs.
func (s *Store) Fork(ctx context.Context, id string) (Session, error) {
	return s.ForkAt(ctx, id, 0)
}

// ForkAt is Fork keeping the log up to and including line upTo (0: the
// whole log). upTo must be from 1 to the parent's last line, else it
// fails with ErrBadLine and creates nothing. A fork that leaves lines out
// starts a new agent conversation (no provider_session_id): the agent's
// own conversation cannot be cut at a line, and continuing it whole would
// let the agent remember what the fork does not hold. Its next line
// comes after upTo.
func (s *Store) ForkAt(ctx context.Context, id string, upTo int64) (Session, error) {
	if upTo < 0 {
		return Session{}, fmt.Errorf("fork session %s at line %d: %w", id, upTo, ErrBadLine)
	}
	var fork Session
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// FOR SHARE holds appends to the parent (they update its row)
		// until the copy is done, so next_line matches the copied log.
		var last int64
		if err := tx.QueryRow(ctx, `SELECT next_line FROM sessions WHERE id = $1 FOR SHARE`, id).Scan(&last); err != nil {
			return err
		}
		if upTo > last {
			return fmt.Errorf("line %d is past the log's end (%d): %w", upTo, last, ErrBadLine)
		}
		cut := upTo > 0 && upTo < last
		if upTo == 0 {
			upTo = last
		}
		row := tx.QueryRow(ctx, `INSERT INTO sessions (id, title, cwd, provider, provider_locked, permission_mode,
				model, parent_id, provider_session_id, next_line)
			SELECT $2, title, cwd, provider, provider_locked, permission_mode, model, id,
				CASE WHEN $3 THEN NULL ELSE provider_session_id END, $4
			FROM sessions WHERE id = $1
			RETURNING `+sessionColumns, id, NewID(), cut, upTo)
		var err error
		if fork, err = scanSession(row); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO session_messages (session_id, line, kind, payload, is_favorite, created_at)
			SELECT $2, line, kind, payload, is_favorite, created_at FROM session_messages
			WHERE session_id = $1 AND line <= $3`,
			id, fork.ID, upTo)
		return err
	})
	if errors.Is(err, ErrBadLine) {
		return Session{}, fmt.Errorf("fork session %s: %w", id, err)
	}
	if err != nil {
		return Session{}, notFound(err, "fork session", id)
	}
	return fork, nil
}

// Clear archives the session's conversation and resets the session, in one
// transaction, for clear_session. The conversation moves to a new session
// (returned): archived, parent_id = id, the same cwd, provider, its lock,
// permission mode and model, the title with " (archived)" appended, the
// provider's conversation id, cost_usd and turns, and the whole log with its
// lines. The session itself keeps its id and settings, with an empty log,
// cost_usd and turns at zero and no provider conversation id (its next turn
// starts a fresh conversation). Its next_line is kept: lines stay monotonic
// per session id, so the first message after a clear gets the line after the
// last archived one and sids ({session_id}:{line}) are never reused.
func (s *Store) Clear(ctx context.Context, id string) (Session, error) {
	var archived Session
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// FOR UPDATE holds appends (they update the row) until the log
		// has moved.
		row := tx.QueryRow(ctx, `INSERT INTO sessions (id, title, cwd, provider, provider_locked, permission_mode,
				model, archived, parent_id, provider_session_id, cli_session_id, cost_usd, turns, next_line, created_at)
			SELECT $2, CASE WHEN title = '' THEN '(archived)' ELSE title || ' (archived)' END, cwd, provider,
				provider_locked, permission_mode, model, true, id, provider_session_id, cli_session_id, cost_usd, turns,
				next_line, now()
			FROM (SELECT * FROM sessions WHERE id = $1 FOR UPDATE) AS cur
			RETURNING `+sessionColumns, id, NewID())
		var err error
		if archived, err = scanSession(row); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `UPDATE session_messages SET session_id = $2 WHERE session_id = $1`, id, archived.ID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET provider_session_id = NULL, cli_session_id = NULL, cost_usd = 0,
			turns = 0, updated_at = now() WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return Session{}, notFound(err, "clear session", id)
	}
	return archived, nil
}
