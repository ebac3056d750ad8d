package app

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"testing"

	"github.com/svc-code/svc-code/libs/protocol"
)

// strict decodes raw into v, refusing any field v's type lacks: a route's
// answer must be exactly what its libs/protocol type (and so the UI's
// generated TypeScript) says.
func strict(t *testing.T, what, raw string, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Errorf("%s does not match its protocol type: %v\n%s", what, err, raw)
	}
}

// TestRouteBodiesMatchProtocol: the answers and frames the UI reads decode
// strictly into their libs/protocol types.
func TestRouteBodiesMatchProtocol(t *testing.T) {
	c := startFakeChat(t)
	w, conn := c.connect()
	id := conn.str("session_id")
	b, _ := json.Marshal(conn)
	strict(t, "connected", string(b), &protocol.ConnectedFrame{})
	w.send(map[string]any{"type": "user_message", "content": "RUN_BASH"})
	for _, f := range w.until("permission_request", isType("permission_request")) {
		b, _ := json.Marshal(f)
		switch f.str("type") {
		case "message_stored":
			strict(t, "message_stored", string(b), &protocol.MessageStoredFrame{})
		case "user_message_stored":
			strict(t, "user_message_stored", string(b), &protocol.UserMessageStoredFrame{})
		case "agent_message":
			strict(t, "agent_message", string(b), &protocol.AgentMessageFrame{})
		case "permission_request":
			strict(t, "permission_request", string(b), &protocol.PermissionRequestFrame{})
		}
	}

	get := func(path string) string {
		t.Helper()
		a := c.do(http.MethodGet, path, "")
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, a.status, a.raw)
		}
		return a.raw
	}
	strict(t, "GET /api/session/{id}", get("/api/session/"+id), &protocol.Session{})
	strict(t, "GET /api/sessions", get("/api/sessions"), &protocol.SessionList{})
	strict(t, "GET /api/sessions/{id}/logs", get("/api/sessions/"+id+"/logs"), &protocol.LogsResponse{})
	strict(t, "GET /api/providers", get("/api/providers"), &protocol.ProvidersResponse{})
	strict(t, "GET /api/welcome/sessions", get("/api/welcome/sessions"), &protocol.WelcomeSessionsResponse{})
	strict(t, "GET /api/welcome/projects", get("/api/welcome/projects"), &protocol.WelcomeProjectsResponse{})
	strict(t, "GET /api/commands", get("/api/commands"), &protocol.CommandsResponse{})
	search := c.do(http.MethodPost, "/api/welcome/search", `{"query":"bash"}`)
	strict(t, "POST /api/welcome/search", search.raw, &protocol.SearchResponse{})

	draft := c.do(http.MethodPost, "/api/drafts", `{"text":"later","session_id":"`+id+`"}`)
	strict(t, "POST /api/drafts", draft.raw, &protocol.Draft{})
	strict(t, "GET /api/drafts", get("/api/drafts"), &protocol.DraftList{})
	item := c.do(http.MethodPost, "/api/session/"+id+"/stash", `{"text":"then"}`)
	strict(t, "POST stash", item.raw, &protocol.StashItem{})
	strict(t, "GET stash", get("/api/session/"+id+"/stash"), &protocol.StashList{})
	c.do(http.MethodPut, "/api/favorites/sessions/"+id, `{}`).want(t, http.StatusOK, "")
	strict(t, "GET /api/favorites", get("/api/favorites"), &protocol.FavoritesResponse{})

	file := c.upload("/api/upload-file?session="+id, "notes.md", []byte("# notes\n"))
	strict(t, "POST /api/upload-file", file.raw, &protocol.UploadFileResponse{})
	var img bytes.Buffer
	m := image.NewRGBA(image.Rect(0, 0, 4, 4))
	m.Set(1, 1, color.RGBA{R: 255, A: 255})
	if err := png.Encode(&img, m); err != nil {
		t.Fatal(err)
	}
	pic := c.upload("/api/upload-image?session="+id, "dot.png", img.Bytes())
	strict(t, "POST /api/upload-image", pic.raw, &protocol.UploadImageResponse{})

	fork := c.do(http.MethodPost, "/api/session/"+id+"/fork", `{"line":1}`)
	strict(t, "POST fork", fork.raw, &protocol.Session{})
	del := c.do(http.MethodDelete, "/api/session/"+fork.str("session_id"), "")
	strict(t, "DELETE session", del.raw, &protocol.DeleteSessionResponse{})
	bad := c.do(http.MethodPost, "/api/session/"+id+"/fork", `{"line":0}`)
	strict(t, "an error", bad.raw, &protocol.ErrorBody{})

	e, snap := c.dialEvents()
	b, _ = json.Marshal(snap)
	strict(t, "snapshot", string(b), &protocol.SnapshotEvent{})
	c.do(http.MethodPatch, "/api/session/"+id, `{"title":"t"}`).want(t, http.StatusOK, "")
	f := e.until("session", isType("session"))
	b, _ = json.Marshal(f[len(f)-1])
	strict(t, "session event", string(b), &protocol.SessionEvent{})
}
