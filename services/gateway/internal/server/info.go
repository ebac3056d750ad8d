package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/services/gateway/internal/route"
)

// ServiceHealth is one backend's line in /api/info.
type ServiceHealth struct {
	Status     string          `json:"status"` // ok, degraded, unreachable
	HTTPStatus int             `json:"http_status,omitempty"`
	LatencyMS  float64         `json:"latency_ms"`
	Detail     json.RawMessage `json:"detail,omitempty"`
	Error      string          `json:"error,omitempty"`
}

var infoClient = &http.Client{Timeout: 2 * time.Second}

// info reports the version, uptime and each backend's health, asked over
// the same internal credential the proxy uses.
func (s *Server) info(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	services := make(map[string]ServiceHealth, len(route.Services))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, svc := range route.Services {
		wg.Go(func() {
			h := s.probe(ctx, svc)
			mu.Lock()
			services[svc] = h
			mu.Unlock()
		})
	}
	wg.Wait()
	e := s.d.Store.Epochs()
	return c.JSON(fiber.Map{
		"name":         "svc-code",
		"version":      s.d.Version,
		"instance":     s.d.Instance,
		"started_at":   s.d.Started.UTC().Format(time.RFC3339),
		"uptime_s":     int64(time.Since(s.d.Started).Seconds()),
		"services":     services,
		"cookie_epoch": e.Cookie,
		"bearer_epoch": e.Bearer,
	})
}

func (s *Server) probe(ctx context.Context, svc string) ServiceHealth {
	target := s.d.Backends[svc]
	if target == "" {
		return ServiceHealth{Status: "unreachable", Error: "not configured"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/api/health/"+svc, nil)
	if err != nil {
		return ServiceHealth{Status: "unreachable", Error: err.Error()}
	}
	req.Header.Set(protocol.HeaderInternal, s.d.Secret.Value())
	start := time.Now()
	resp, err := infoClient.Do(req)
	lat := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return ServiceHealth{Status: "unreachable", LatencyMS: lat, Error: "no answer from " + target}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	h := ServiceHealth{Status: "ok", HTTPStatus: resp.StatusCode, LatencyMS: lat}
	if json.Valid(body) {
		h.Detail = body
	}
	if resp.StatusCode != http.StatusOK {
		h.Status = "degraded"
	}
	return h
}
