package svcenv

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/svc-code/svc-code/libs/internalauth"
	"github.com/svc-code/svc-code/libs/protocol"
)

func TestLocalURL(t *testing.T) {
	tests := []struct {
		addr, want string
	}{
		{"127.0.0.1:8771", "http://127.0.0.1:8771/api/health/chat"},
		{"0.0.0.0:8771", "http://127.0.0.1:8771/api/health/chat"},
		{":8771", "http://127.0.0.1:8771/api/health/chat"},
		{"[::]:8771", "http://127.0.0.1:8771/api/health/chat"},
		{"[::1]:8771", "http://[::1]:8771/api/health/chat"},
		{"chat:8771", "http://chat:8771/api/health/chat"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, err := LocalURL(tt.addr, "/api/health/chat")
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := LocalURL("no-port", "/"); err == nil {
		t.Error("LocalURL accepted an address without a port")
	}
}

func TestHealthcheck(t *testing.T) {
	secret := internalauth.FromString("0123456789abcdef-hc")
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !secret.Check(r.Header.Get(protocol.HeaderInternal)) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"unauthorized"}`))
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"status":"degraded"}`))
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	tests := []struct {
		name    string
		url     string
		secret  internalauth.Secret
		status  int
		wantErr string
	}{
		{"healthy", srv.URL, secret, http.StatusOK, ""},
		{"degraded", srv.URL, secret, http.StatusServiceUnavailable, `503 Service Unavailable: {"status":"degraded"}`},
		{"wrong secret", srv.URL, internalauth.FromString("0123456789abcdef-no"), http.StatusOK, "401"},
		{"nothing listening", closedURL, secret, http.StatusOK, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status = tt.status
			err := Healthcheck(context.Background(), tt.url, tt.secret)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
