package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
)

// pathKey is the app_settings key of a provider's configured path.
func pathKey(p providers.Provider) string { return providers.PathKey(p) }

// configuredPath returns the provider's configured path, "" when unset.
func (s *server) configuredPath(ctx context.Context, p providers.Provider) (string, error) {
	var path string
	if _, err := s.Store.Setting(ctx, pathKey(p), &path); err != nil {
		return "", err
	}
	return path, nil
}

// providerPathJSON is the answer of GET and PUT /api/app/provider-path/{name}.
type providerPathJSON = protocol.ProviderExecutable

func (s *server) providerPath(ctx context.Context, p providers.Provider) (providerPathJSON, error) {
	configured, err := s.configuredPath(ctx, p)
	if err != nil {
		return providerPathJSON{}, err
	}
	out := providerPathJSON{Name: p.Program, Provider: p.Name}
	if configured != "" {
		out.Path = &configured
	}
	resolved, rerr := p.Resolve(configured, s.LookPath)
	switch {
	case rerr == nil:
		out.Found = true
		out.Resolved = &resolved
	case configured != "":
		out.Reason = "the configured path " + configured + " is " + problem(rerr) +
			"; set another with PUT /api/app/provider-path/" + p.Program
	default:
		out.Reason = p.Program + " was not found on PATH; set its path with PUT /api/app/provider-path/" + p.Program
	}
	return out, nil
}

// problem words a CheckExecutable failure.
func problem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case errors.Is(err, providers.ErrNotExecutable):
		return "not an executable file"
	case errors.Is(err, providers.ErrNotAbsolute):
		return "not an absolute path"
	}
	return "not usable"
}

// lookupProgram finds the provider of a path route: {name} is its program
// ("claude", "codex") or its provider name ("agent-sdk", "app-server").
func lookupProgram(name string) (providers.Provider, error) {
	if p, ok := providers.ByProgram(name); ok {
		return p, nil
	}
	if p, ok := providers.Lookup(name); ok {
		return p, nil
	}
	return providers.Provider{}, protocol.Errorf(protocol.CodeNotFound, "no provider %q", name)
}

// getProviderPath: GET /api/app/provider-path/{name}.
func (s *server) getProviderPath(c *fiber.Ctx) error {
	p, err := lookupProgram(param(c, "name"))
	if err != nil {
		return err
	}
	out, err := s.providerPath(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// nullableString is a JSON string field that may be null; Set tells a
// field that was sent from one that was not.
type nullableString struct {
	Set   bool
	Value string
}

func (n *nullableString) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(b, []byte("null")) {
		n.Value = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = v
	return nil
}

// putProviderPath: PUT /api/app/provider-path/{name} {"path"}. A path must
// be absolute and name an executable file; null or "" goes back to the
// lookup on PATH. The setting is stored in PostgreSQL for every instance.
func (s *server) putProviderPath(c *fiber.Ctx) error {
	p, err := lookupProgram(param(c, "name"))
	if err != nil {
		return err
	}
	var req struct {
		Path nullableString `json:"path"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if !req.Path.Set {
		return badRequest(`path is required: an absolute path, or null to look %s up on PATH`, p.Program)
	}
	ctx := c.UserContext()
	if req.Path.Value == "" {
		if err := s.Store.DeleteSetting(ctx, pathKey(p)); err != nil {
			return err
		}
	} else {
		path := req.Path.Value
		if !filepath.IsAbs(path) {
			return badRequest("path %q: want an absolute path", path)
		}
		path = filepath.Clean(path)
		if err := providers.CheckExecutable(path); err != nil {
			return badRequest("path %q: %s", path, problem(err))
		}
		if err := s.Store.SetSetting(ctx, pathKey(p), path); err != nil {
			return err
		}
	}
	out, err := s.providerPath(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// providerJSON is one entry of GET /api/providers.
type providerJSON struct {
	Name            string           `json:"name"`
	DisplayName     string           `json:"display_name"`
	Default         bool             `json:"default"`
	Capabilities    any              `json:"capabilities"`
	PermissionModes []string         `json:"permission_modes"`
	Executable      providerPathJSON `json:"executable"`
	Available       bool             `json:"available"`
	Reason          string           `json:"reason,omitempty"`
	Defaults        defaultsJSON     `json:"defaults"`
}

// providerCatalog: GET /api/providers. A provider is available when its
// executable is found; otherwise reason says how to set its path.
func (s *server) providerCatalog(c *fiber.Ctx) error {
	ctx := c.UserContext()
	def, err := providers.DefaultProvider(ctx, s.Store)
	if err != nil {
		return err
	}
	out := make([]providerJSON, 0, len(providers.Catalog))
	for _, p := range providers.Catalog {
		path, err := s.providerPath(ctx, p)
		if err != nil {
			return err
		}
		defaults, err := s.providerDefaults(ctx, p)
		if err != nil {
			return err
		}
		out = append(out, providerJSON{
			Name: p.Name, DisplayName: p.DisplayName, Default: p.Name == def.Name,
			Capabilities: p.Caps, PermissionModes: providers.PermissionModes,
			Executable: path, Available: path.Found, Reason: path.Reason, Defaults: defaults,
		})
	}
	return c.JSON(fiber.Map{"default": def.Name, "providers": out})
}
