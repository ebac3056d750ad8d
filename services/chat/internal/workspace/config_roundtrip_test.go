package workspace_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// setKeys lists the keys GET /api/app/config says are set.
func setKeys(t *testing.T, a answer) []string {
	t.Helper()
	var out []string
	for _, k := range a.list("keys") {
		k := k.(map[string]any)
		if k["set"] == true {
			out = append(out, k["key"].(string))
		}
	}
	return out
}

// TestConfigRoundTrip: what GET /api/app/config answers can be PUT back as
// it came (issue 15: {"config": {...}} was refused), changing nothing;
// an edited copy changes what was edited, and only that.
func TestConfigRoundTrip(t *testing.T) {
	e := mustEnv(t)
	got := e.do(http.MethodGet, "/api/app/config", "").want(t, http.StatusOK, "")

	back := e.do(http.MethodPut, "/api/app/config", got.raw).want(t, http.StatusOK, "")
	if fmt.Sprint(back.body) != fmt.Sprint(got.body) {
		t.Errorf("PUT of GET's answer changed the config:\n got %s\nwant %s", back.raw, got.raw)
	}
	if n := e.count(`SELECT count(*) FROM app_settings WHERE starts_with(key, 'config/')`); n != 0 {
		t.Errorf("PUT of GET's answer stored %d keys, want none (all are at their defaults)", n)
	}

	// Edit one value of GET's answer, PUT the whole answer back.
	var edited map[string]any
	if err := json.Unmarshal([]byte(got.raw), &edited); err != nil {
		t.Fatal(err)
	}
	edited["config"].(map[string]any)["shadow_db.sql_timeout_s"] = 12
	body, _ := json.Marshal(edited)
	after := e.do(http.MethodPut, "/api/app/config", string(body)).want(t, http.StatusOK, "")
	cfg := after.body["config"].(map[string]any)
	if cfg["shadow_db.sql_timeout_s"] != 12.0 || fmt.Sprint(setKeys(t, after)) != "[shadow_db.sql_timeout_s]" {
		t.Errorf("after the edited PUT: %s, want only shadow_db.sql_timeout_s set, to 12", after.raw)
	}
	// Again, as GET now answers: still only that key is set.
	again := e.do(http.MethodGet, "/api/app/config", "")
	if a := e.do(http.MethodPut, "/api/app/config", again.raw).want(t, http.StatusOK, ""); a.raw != again.raw {
		t.Errorf("second round trip: %s, want %s", a.raw, again.raw)
	}
	// The flat form still works, beside it.
	e.do(http.MethodPut, "/api/app/config", `{"ui.theme":"dark"}`).want(t, http.StatusOK, "")
	// null in the wrapped form resets a key.
	reset := e.do(http.MethodPut, "/api/app/config", `{"config":{"ui.theme":null}}`).want(t, http.StatusOK, "")
	if reset.body["config"].(map[string]any)["ui.theme"] != "system" {
		t.Errorf("wrapped null: %s", reset.raw)
	}

	before := e.do(http.MethodGet, "/api/app/config", "")
	for _, tt := range []struct{ name, body, want string }{
		{"config and a key", `{"config":{"ui.theme":"dark"},"ui.font_size":16}`, "not both"},
		{"config not an object", `{"config":"dark"}`, "config: want an object"},
		{"config null", `{"config":null}`, "config: want an object"},
		{"config empty", `{"config":{}}`, "nothing to change"},
		{"unknown key inside", `{"config":{"colour":"red"},"keys":[]}`, `unknown key "colour"`},
		{"bad value inside", `{"config":{"ui.theme":"blue","ui.font_size":16},"keys":[]}`, "ui.theme: want one of"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := e.do(http.MethodPut, "/api/app/config", tt.body).want(t, http.StatusBadRequest, "bad_request")
			if !strings.Contains(got.str("message"), tt.want) {
				t.Errorf("message %q, want it to say %q", got.str("message"), tt.want)
			}
			if now := e.do(http.MethodGet, "/api/app/config", ""); now.raw != before.raw {
				t.Errorf("a refused PUT changed the config: %s", now.raw)
			}
		})
	}
}
