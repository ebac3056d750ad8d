package svchttp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
)

func TestDecodeJSON(t *testing.T) {
	type body struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	tests := []struct {
		name        string
		contentType string // "-" sends none
		body        string
		wantCode    string // "" when the body is accepted
		wantMessage string // a part of the error message
		want        body
	}{
		{"valid", "application/json", `{"name":"a","count":2}`, "", "", body{Name: "a", Count: 2}},
		{"valid with spaces around", "application/json", " \n{\"name\":\"a\"}\n ", "", "", body{Name: "a"}},
		{"charset parameter", "application/json; charset=utf-8", `{"name":"a"}`, "", "", body{Name: "a"}},
		{"media type in capitals", "Application/JSON", `{"name":"a"}`, "", "", body{Name: "a"}},
		{"wrong content type", "text/plain", `{"name":"a"}`, protocol.CodeUnsupportedMedia, "send Content-Type: application/json", body{}},
		{"form content type", "application/x-www-form-urlencoded", `name=a`, protocol.CodeUnsupportedMedia, "send Content-Type: application/json", body{}},
		{"look-alike content type", "application/json-seq", `{"name":"a"}`, protocol.CodeUnsupportedMedia, "send Content-Type: application/json", body{}},
		{"malformed content type", "application/json; =", `{"name":"a"}`, protocol.CodeUnsupportedMedia, "send Content-Type: application/json", body{}},
		{"missing content type", "-", `{"name":"a"}`, protocol.CodeUnsupportedMedia, "send Content-Type: application/json", body{}},
		{"empty body", "application/json", ``, protocol.CodeBadRequest, "want one JSON object", body{}},
		{"blank body", "application/json", "  \n", protocol.CodeBadRequest, "want one JSON object", body{}},
		{"null", "application/json", `null`, protocol.CodeBadRequest, "want one JSON object", body{}},
		{"array", "application/json", `[{"name":"a"}]`, protocol.CodeBadRequest, "want one JSON object", body{}},
		{"string", "application/json", `"a"`, protocol.CodeBadRequest, "want one JSON object", body{}},
		{"unknown field", "application/json", `{"name":"a","extra":1}`, protocol.CodeBadRequest, `unknown field "extra"`, body{}},
		{"wrong field type", "application/json", `{"count":"2"}`, protocol.CodeBadRequest, "malformed JSON body", body{}},
		{"truncated", "application/json", `{"name":`, protocol.CodeBadRequest, "malformed JSON body", body{}},
		{"trailing object", "application/json", `{"name":"a"} {}`, protocol.CodeBadRequest, "trailing data after the object", body{}},
		{"trailing brace", "application/json", `{"name":"a"}}`, protocol.CodeBadRequest, "trailing data after the object", body{}},
		{"trailing word", "application/json", `{"name":"a"} x`, protocol.CodeBadRequest, "trailing data after the object", body{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got body
			var err error
			app := fiber.New()
			app.Post("/", func(c *fiber.Ctx) error {
				err = svchttp.DecodeJSON(c, &got)
				return nil
			})
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			if tt.contentType != "-" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, terr := app.Test(req, -1)
			if terr != nil {
				t.Fatalf("app.Test: %v", terr)
			}
			_ = resp.Body.Close()

			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if got != tt.want {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			var pe *protocol.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got error %v (%T), want a *protocol.Error", err, err)
			}
			if pe.Code != tt.wantCode {
				t.Errorf("got code %q, want %q", pe.Code, tt.wantCode)
			}
			if !strings.Contains(pe.Message, tt.wantMessage) {
				t.Errorf("got message %q, want it to contain %q", pe.Message, tt.wantMessage)
			}
		})
	}
}

// Through a service's app, the errors reach the client as the envelope with
// the status of their code.
func TestDecodeJSONStatus(t *testing.T) {
	app, _ := newTestApp(t)
	app.Post("/decode", func(c *fiber.Ctx) error {
		var v struct {
			Name string `json:"name"`
		}
		if err := svchttp.DecodeJSON(c, &v); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": v.Name})
	})
	tests := []struct {
		name, contentType, body string
		wantStatus              int
		wantError               string
	}{
		{"valid", "application/json", `{"name":"a"}`, http.StatusOK, ""},
		{"wrong content type", "text/plain", `{"name":"a"}`, http.StatusUnsupportedMediaType, protocol.CodeUnsupportedMedia},
		{"unknown field", "application/json", `{"x":1}`, http.StatusBadRequest, protocol.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(http.MethodPost, "/decode", testSecret, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.contentType)
			a := do(t, app, req)
			if a.status != tt.wantStatus {
				t.Errorf("got status %d, want %d (%s)", a.status, tt.wantStatus, a.raw)
			}
			if got, _ := a.body["error"].(string); got != tt.wantError {
				t.Errorf("got error %q, want %q", got, tt.wantError)
			}
			if tt.wantError == "" && a.body["name"] != "a" {
				t.Errorf("got body %s, want name a", a.raw)
			}
		})
	}
}
