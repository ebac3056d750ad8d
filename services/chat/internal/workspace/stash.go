package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

// MaxStashItems is how many items one session's stash holds; adding one
// more is refused with 409 conflict (stashed items are unsent work, never
// dropped silently).
const MaxStashItems = 200

// stashItemJSON is a stash item as every stash route answers it.
type stashItemJSON = protocol.StashItem

const stashColumns = `id, session_id, text, sent_at, created_at, updated_at`

func scanStashItem(row pgx.Row) (stashItemJSON, error) {
	var it stashItemJSON
	err := row.Scan(&it.ItemID, &it.SessionID, &it.Text, &it.SentAt, &it.CreatedAt, &it.UpdatedAt)
	it.Sent = it.SentAt != nil
	if it.SentAt != nil {
		t := it.SentAt.UTC()
		it.SentAt = &t
	}
	it.CreatedAt, it.UpdatedAt = it.CreatedAt.UTC(), it.UpdatedAt.UTC()
	return it, err
}

// sentFilter reads the optional query parameter sent=true|false; nil
// means every item.
func sentFilter(c *fiber.Ctx) (*bool, error) {
	switch raw := query(c, "sent"); raw {
	case "":
		return nil, nil
	case "true", "false":
		sent := raw == "true"
		return &sent, nil
	default:
		return nil, badRequest("sent %q: want true or false", raw)
	}
}

// listStash: GET /api/session/{id}/stash?sent, oldest first.
func (s *server) listStash(c *fiber.Ctx) error {
	id := param(c, "id")
	sent, err := sentFilter(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	rows, err := s.db.Query(ctx, `SELECT `+stashColumns+` FROM stash_items
		WHERE session_id = $1 AND ($2::boolean IS NULL OR (sent_at IS NOT NULL) = $2)
		ORDER BY created_at, id`, id, sent)
	if err != nil {
		return fmt.Errorf("list stash of %s: %w", id, err)
	}
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stashItemJSON, error) { return scanStashItem(row) })
	if err != nil {
		return fmt.Errorf("list stash of %s: %w", id, err)
	}
	if items == nil {
		items = []stashItemJSON{}
	}
	return c.JSON(fiber.Map{"session_id": id, "items": items, "max": MaxStashItems})
}

// addStash: POST /api/session/{id}/stash {"text"}.
func (s *server) addStash(c *fiber.Ctx) error {
	id := param(c, "id")
	var req struct {
		Text string `json:"text"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := validText(req.Text); err != nil {
		return err
	}
	ctx := c.UserContext()
	var it stashItemJSON
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// One writer per session at a time, so the cap holds exactly.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('svc-code stash ' || $1))`, id); err != nil {
			return err
		}
		if err := checkSession(ctx, tx, id); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM stash_items WHERE session_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n >= MaxStashItems {
			return protocol.Errorf(protocol.CodeConflict,
				"the stash of session %q is full (%d items): send or delete some first", id, MaxStashItems)
		}
		var err error
		it, err = scanStashItem(tx.QueryRow(ctx, `INSERT INTO stash_items (id, session_id, text)
			VALUES ($1, $2, $3) RETURNING `+stashColumns, newID(), id, req.Text))
		return err
	})
	if err != nil {
		return goneSession(err, "add to the stash of "+id, id)
	}
	return c.Status(fiber.StatusCreated).JSON(it)
}

// clearStash: DELETE /api/session/{id}/stash?sent: every item, or with
// sent=true only the sent ones (sent=false: only the unsent); answers how
// many were deleted.
func (s *server) clearStash(c *fiber.Ctx) error {
	id := param(c, "id")
	sent, err := sentFilter(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM stash_items
		WHERE session_id = $1 AND ($2::boolean IS NULL OR (sent_at IS NOT NULL) = $2)`, id, sent)
	if err != nil {
		return fmt.Errorf("clear stash of %s: %w", id, err)
	}
	return c.JSON(fiber.Map{"ok": true, "session_id": id, "deleted": tag.RowsAffected()})
}

// updateStash: PATCH /api/session/{id}/stash/{item_id} {"text"?, "sent"?}:
// replaces the text, marks the item sent (sent_at = now) or not sent.
func (s *server) updateStash(c *fiber.Ctx) error {
	id, itemID := param(c, "id"), param(c, "item_id")
	var req struct {
		Text *string `json:"text"`
		Sent *bool   `json:"sent"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if req.Text == nil && req.Sent == nil {
		return badRequest("nothing to change: send text, sent or both")
	}
	if req.Text != nil {
		if err := validText(*req.Text); err != nil {
			return err
		}
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	// sent_at is kept when an already sent item is marked sent again.
	it, err := scanStashItem(s.db.QueryRow(ctx, `UPDATE stash_items SET
			text = coalesce($3, text),
			sent_at = CASE WHEN $4::boolean IS NULL THEN sent_at
				WHEN $4 THEN coalesce(sent_at, now()) ELSE NULL END,
			updated_at = now()
		WHERE session_id = $1 AND id = $2 RETURNING `+stashColumns, id, itemID, req.Text, req.Sent))
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("no stash item %q in session %q", itemID, id)
	}
	if err != nil {
		return fmt.Errorf("update stash item %s: %w", itemID, err)
	}
	return c.JSON(it)
}

// deleteStash: DELETE /api/session/{id}/stash/{item_id}.
func (s *server) deleteStash(c *fiber.Ctx) error {
	id, itemID := param(c, "id"), param(c, "item_id")
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM stash_items WHERE session_id = $1 AND id = $2`, id, itemID)
	if err != nil {
		return fmt.Errorf("delete stash item %s: %w", itemID, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("no stash item %q in session %q", itemID, id)
	}
	return c.JSON(fiber.Map{"ok": true, "session_id": id, "item_id": itemID})
}

// markStashSent: POST /api/session/{id}/stash/sent {"item_ids": [...]}:
// marks several items sent at once (the UI sent them together). Every id
// must be an item of the session, or nothing changes (404).
func (s *server) markStashSent(c *fiber.Ctx) error {
	id := param(c, "id")
	var req struct {
		ItemIDs []string `json:"item_ids"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if len(req.ItemIDs) == 0 || len(req.ItemIDs) > MaxStashItems {
		return badRequest("item_ids: 1 to %d item ids", MaxStashItems)
	}
	ctx := c.UserContext()
	if err := checkSession(ctx, s.db, id); err != nil {
		return err
	}
	var items []stashItemJSON
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE stash_items SET sent_at = coalesce(sent_at, now()), updated_at = now()
			WHERE session_id = $1 AND id = ANY($2) RETURNING `+stashColumns, id, req.ItemIDs)
		if err != nil {
			return err
		}
		items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (stashItemJSON, error) { return scanStashItem(row) })
		if err != nil {
			return err
		}
		if missing := missingIDs(req.ItemIDs, items); len(missing) > 0 {
			return notFound("no stash item %q in session %q", missing[0], id)
		}
		return nil
	})
	if err != nil {
		return goneSession(err, "mark stash items sent in "+id, id)
	}
	slices.SortFunc(items, func(a, b stashItemJSON) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ItemID, b.ItemID))
	})
	return c.JSON(fiber.Map{"session_id": id, "items": items})
}

// missingIDs returns the ids that no item has.
func missingIDs(ids []string, items []stashItemJSON) []string {
	found := make(map[string]bool, len(items))
	for _, it := range items {
		found[it.ItemID] = true
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return missing
}
