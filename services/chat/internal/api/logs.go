package api

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Message page sizes of /logs and /logs/messages, and the batch size of
// the routes that read a whole log (/logs/raw, /logs/tools).
const (
	DefaultMessageLimit = 1000
	MaxMessageLimit     = 5000
	logBatch            = 1000
)

// messageJSON is one stored message.
type messageJSON = protocol.LogMessage

func toMessageJSON(msgs []store.Message) []messageJSON {
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageJSON{
			SID: m.SID(), Line: m.Line, Kind: m.Kind, Payload: m.Payload,
			IsFavorite: m.IsFavorite, CreatedAt: m.CreatedAt.UTC(),
		})
	}
	return out
}

// since reads the query parameter since (a line, default 0).
func since(c *fiber.Ctx) (int64, error) {
	raw := c.Query("since")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("since %q: want a line number, 0 or more", raw)
	}
	return n, nil
}

// messagePage reads since and limit and the page of messages after since;
// it fails with not_found for an unknown session.
func (s *server) messagePage(c *fiber.Ctx, id string) (store.Session, []store.Message, bool, error) {
	from, err := since(c)
	if err != nil {
		return store.Session{}, nil, false, err
	}
	limit := DefaultMessageLimit
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxMessageLimit {
			return store.Session{}, nil, false, badRequest("limit %q: want a number from 1 to %d", raw, MaxMessageLimit)
		}
		limit = n
	}
	ctx := c.UserContext()
	sess, err := s.Store.Get(ctx, id)
	if err != nil {
		return store.Session{}, nil, false, storeError(err, id)
	}
	msgs, err := s.Store.Messages(ctx, id, from, limit+1)
	if err != nil {
		return store.Session{}, nil, false, err
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	return sess, msgs, more, nil
}

// logs: GET /api/sessions/{id}/logs?since&limit: the session and a page of
// its messages.
func (s *server) logs(c *fiber.Ctx) error {
	id := param(c, "id")
	sess, msgs, more, err := s.messagePage(c, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"session":  s.sessionJSON(c.UserContext(), sess),
		"messages": toMessageJSON(msgs),
		"has_more": more,
	})
}

// logMessages: GET /api/sessions/{id}/logs/messages?since&limit: the
// messages after line since.
func (s *server) logMessages(c *fiber.Ctx) error {
	id := param(c, "id")
	_, msgs, more, err := s.messagePage(c, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "messages": toMessageJSON(msgs), "has_more": more})
}

// eachMessage calls fn for every message of the session after line from,
// reading the log in batches.
func (s *server) eachMessage(ctx context.Context, id string, from int64, fn func(store.Message)) error {
	for {
		msgs, err := s.Store.Messages(ctx, id, from, logBatch)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			fn(m)
		}
		if len(msgs) < logBatch {
			return nil
		}
		from = msgs[len(msgs)-1].Line
	}
}

// logRaw: GET /api/sessions/{id}/logs/raw?since: every stored payload
// after line since, one JSON value a line (NDJSON).
func (s *server) logRaw(c *fiber.Ctx) error {
	id := param(c, "id")
	from, err := since(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, err := s.Store.Get(ctx, id); err != nil {
		return storeError(err, id)
	}
	var buf bytes.Buffer
	err = s.eachMessage(ctx, id, from, func(m store.Message) {
		buf.Write(m.Payload)
		buf.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "application/x-ndjson")
	return c.Send(buf.Bytes())
}

// toolJSON is a tool call found in the agent messages, with its result
// once one was stored.
type toolJSON struct {
	ToolUseID string          `json:"tool_use_id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Line      int64           `json:"line"`
	Result    *toolResultJSON `json:"result"`
}

type toolResultJSON struct {
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
	Line    int64           `json:"line"`
}

// agentMessage is an agent-shaped message whose content may hold blocks:
// {"type":"assistant"|"user","message":{"content":[...]}}.
type agentMessage struct {
	Type    string `json:"type"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// pairTools pairs the tool_use blocks of assistant messages with the
// tool_result blocks of user messages, by id, in log order. Results whose
// call is not in msgs are left out.
func pairTools(msgs []store.Message) []toolJSON {
	tools := []toolJSON{}
	index := map[string]int{}
	for _, m := range msgs {
		if m.Kind != store.KindAgent {
			continue
		}
		var am agentMessage
		if json.Unmarshal(m.Payload, &am) != nil {
			continue
		}
		var blocks []contentBlock
		if json.Unmarshal(am.Message.Content, &blocks) != nil {
			continue // a string content has no blocks
		}
		for _, b := range blocks {
			switch {
			case am.Type == "assistant" && b.Type == "tool_use":
				input := b.Input
				if input == nil {
					input = json.RawMessage("null")
				}
				index[b.ID] = len(tools)
				tools = append(tools, toolJSON{ToolUseID: b.ID, Name: b.Name, Input: input, Line: m.Line})
			case am.Type == "user" && b.Type == "tool_result":
				i, ok := index[b.ToolUseID]
				if !ok {
					continue
				}
				content := b.Content
				if content == nil {
					content = json.RawMessage("null")
				}
				tools[i].Result = &toolResultJSON{Content: content, IsError: b.IsError, Line: m.Line}
			}
		}
	}
	return tools
}

// logTools: GET /api/sessions/{id}/logs/tools: every tool call of the
// session with its result.
func (s *server) logTools(c *fiber.Ctx) error {
	id := param(c, "id")
	ctx := c.UserContext()
	if _, err := s.Store.Get(ctx, id); err != nil {
		return storeError(err, id)
	}
	var msgs []store.Message
	if err := s.eachMessage(ctx, id, 0, func(m store.Message) {
		if m.Kind == store.KindAgent {
			msgs = append(msgs, m)
		}
	}); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "tools": pairTools(msgs)})
}
