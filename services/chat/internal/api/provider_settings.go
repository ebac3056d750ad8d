package api

import (
	"context"
	"os"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/svc-code/svc-code/libs/protocol"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
	"github.com/svc-code/svc-code/services/chat/internal/providers"
)

// MaxModels bounds a provider's model list.
const MaxModels = 200

// MaxAPIKeyLen bounds a stored API key.
const MaxAPIKeyLen = 4096

// defaultsJSON is the answer of GET and PUT /api/app/provider-defaults/{name}.
type defaultsJSON struct {
	Name           string  `json:"name"`
	Model          *string `json:"model"`           // null: the agent's own default
	PermissionMode string  `json:"permission_mode"` // of new sessions
	// app-server only: what the default mode means to Codex.
	ApprovalPolicy *string `json:"approval_policy,omitempty"`
	Sandbox        *string `json:"sandbox,omitempty"`
	// app-server only: the approval policy and sandbox of each mode.
	ModePolicies map[string]codex.Policy `json:"mode_policies,omitempty"`
}

func (s *server) providerDefaults(ctx context.Context, p providers.Provider) (defaultsJSON, error) {
	d, err := providers.LoadDefaults(ctx, s.Store, p)
	if err != nil {
		return defaultsJSON{}, err
	}
	out := defaultsJSON{Name: p.Name, PermissionMode: d.PermissionMode}
	if out.PermissionMode == "" {
		out.PermissionMode = providers.ModeDefault
	}
	if d.Model != "" {
		out.Model = &d.Model
	}
	if p.Name == providers.AppServer {
		override := codex.Policy{ApprovalPolicy: d.ApprovalPolicy, Sandbox: d.Sandbox}
		def := codex.PolicyFor(providers.ModeDefault, override)
		out.ApprovalPolicy, out.Sandbox = &def.ApprovalPolicy, &def.Sandbox
		out.ModePolicies = map[string]codex.Policy{}
		for _, m := range providers.PermissionModes {
			out.ModePolicies[m] = codex.PolicyFor(m, override)
		}
	}
	return out, nil
}

// lookupProvider finds the provider of a settings route by its name
// ("agent-sdk", "app-server") or its program ("claude", "codex").
func lookupProvider(name string) (providers.Provider, error) { return lookupProgram(name) }

// getProviderDefaults: GET /api/app/provider-defaults/{name}.
func (s *server) getProviderDefaults(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	out, err := s.providerDefaults(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// putProviderDefaults: PUT /api/app/provider-defaults/{name} with any of
// {"model", "permission_mode", "approval_policy", "sandbox"}; a field sent
// as null (or "") goes back to its default, a field left out keeps its
// value.
func (s *server) putProviderDefaults(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	var req struct {
		Model          nullableString `json:"model"`
		PermissionMode nullableString `json:"permission_mode"`
		ApprovalPolicy nullableString `json:"approval_policy"`
		Sandbox        nullableString `json:"sandbox"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if !req.Model.Set && !req.PermissionMode.Set && !req.ApprovalPolicy.Set && !req.Sandbox.Set {
		return badRequest("send at least one of model, permission_mode, approval_policy, sandbox")
	}
	ctx := c.UserContext()
	d, err := providers.LoadDefaults(ctx, s.Store, p)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		in  nullableString
		out *string
	}{{req.Model, &d.Model}, {req.PermissionMode, &d.PermissionMode}, {req.ApprovalPolicy, &d.ApprovalPolicy}, {req.Sandbox, &d.Sandbox}} {
		if f.in.Set {
			*f.out = f.in.Value
		}
	}
	if err := d.Validate(p); err != nil {
		return badRequest("%v", err)
	}
	if err := s.Store.SetSetting(ctx, providers.DefaultsKey(p), d); err != nil {
		return err
	}
	out, err := s.providerDefaults(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// modelsJSON is the answer of GET and PUT /api/app/provider-models/{name}.
type modelsJSON struct {
	Name       string            `json:"name"`
	Models     []providers.Model `json:"models"`
	Configured bool              `json:"configured"` // false: the built-in list
}

func (s *server) providerModels(ctx context.Context, p providers.Provider) (modelsJSON, error) {
	models, configured, err := providers.LoadModels(ctx, s.Store, p)
	if err != nil {
		return modelsJSON{}, err
	}
	return modelsJSON{Name: p.Name, Models: models, Configured: configured}, nil
}

// getProviderModels: GET /api/app/provider-models/{name}.
func (s *server) getProviderModels(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	out, err := s.providerModels(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// putProviderModels: PUT /api/app/provider-models/{name}
// {"models": [{"id", "display_name"?, "price"?}]} replaces the list (the
// id "*", with a price, prices every model the table does not name);
// {"models": null} goes back to the built-in one. Prices (USD per million
// tokens) price app-server turns.
func (s *server) putProviderModels(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	var req struct {
		Models *[]providers.Model `json:"models"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	if req.Models == nil {
		if err := s.Store.DeleteSetting(ctx, providers.ModelsKey(p)); err != nil {
			return err
		}
	} else {
		models := *req.Models
		if len(models) > MaxModels {
			return badRequest("models: at most %d", MaxModels)
		}
		var seen []string
		for i, m := range models {
			switch {
			case m.ID == codex.AnyModel && m.Price == nil:
				return badRequest("models[%d]: the %q entry prices the models nothing else names and needs a price", i, codex.AnyModel)
			case m.ID != codex.AnyModel && !providers.ValidModel(m.ID):
				return badRequest("models[%d].id %q: want up to %d letters, digits or ._:/@[]-", i, m.ID, providers.MaxModelLen)
			case slices.Contains(seen, m.ID):
				return badRequest("models[%d].id %q appears twice", i, m.ID)
			case len(m.DisplayName) > 200:
				return badRequest("models[%d].display_name: at most 200 characters", i)
			case m.Price != nil && (m.Price.InputPerMTok < 0 || m.Price.CachedInputPerMTok < 0 || m.Price.OutputPerMTok < 0):
				return badRequest("models[%d].price: prices cannot be negative", i)
			}
			seen = append(seen, m.ID)
		}
		if models == nil {
			models = []providers.Model{}
		}
		if err := s.Store.SetSetting(ctx, providers.ModelsKey(p), models); err != nil {
			return err
		}
	}
	out, err := s.providerModels(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// authJSON is the answer of GET and PUT /api/app/provider-auth/{name}: where
// credentials may come from and whether any is there, never a secret.
type authJSON struct {
	Name       string                 `json:"name"`
	Configured bool                   `json:"configured"`
	APIKeySet  bool                   `json:"api_key_set"`
	APIKeyEnv  string                 `json:"api_key_env"`
	Sources    []providers.AuthSource `json:"sources"`
}

func (s *server) providerAuth(ctx context.Context, p providers.Provider) (authJSON, error) {
	var auth providers.Auth
	if _, err := s.Store.Setting(ctx, providers.AuthKey(p), &auth); err != nil {
		return authJSON{}, err
	}
	home, _ := os.UserHomeDir()
	sources := providers.AuthSources(p, os.Getenv, home, auth.APIKey != "")
	out := authJSON{Name: p.Name, APIKeySet: auth.APIKey != "", APIKeyEnv: p.APIKeyEnv(), Sources: sources}
	for _, src := range sources {
		out.Configured = out.Configured || src.Present
	}
	return out, nil
}

// getProviderAuth: GET /api/app/provider-auth/{name}.
func (s *server) getProviderAuth(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	out, err := s.providerAuth(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// putProviderAuth: PUT /api/app/provider-auth/{name} {"api_key": "..."}
// stores an API key that the provider's processes get in their
// environment (api_key_env); {"api_key": null} removes it. The key is
// never returned.
func (s *server) putProviderAuth(c *fiber.Ctx) error {
	p, err := lookupProvider(param(c, "name"))
	if err != nil {
		return err
	}
	var req struct {
		APIKey nullableString `json:"api_key"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	if !req.APIKey.Set {
		return badRequest("api_key is required: a key, or null to remove the stored one")
	}
	ctx := c.UserContext()
	key := req.APIKey.Value
	switch {
	case key == "":
		if err := s.Store.DeleteSetting(ctx, providers.AuthKey(p)); err != nil {
			return err
		}
	case len(key) > MaxAPIKeyLen:
		return badRequest("api_key: at most %d bytes", MaxAPIKeyLen)
	case !printableASCII(key):
		return badRequest("api_key: printable ASCII without spaces")
	default:
		if err := s.Store.SetSetting(ctx, providers.AuthKey(p), providers.Auth{APIKey: key}); err != nil {
			return err
		}
	}
	out, err := s.providerAuth(ctx, p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// getDefaultProvider: GET /api/app/default-provider.
func (s *server) getDefaultProvider(c *fiber.Ctx) error {
	p, err := providers.DefaultProvider(c.UserContext(), s.Store)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"provider": p.Name, "display_name": p.DisplayName})
}

// putDefaultProvider: PUT /api/app/default-provider {"provider"}: the
// provider of sessions created without one.
func (s *server) putDefaultProvider(c *fiber.Ctx) error {
	var req struct {
		Provider string `json:"provider"`
	}
	if err := svchttp.DecodeJSON(c, &req); err != nil {
		return err
	}
	p, ok := providers.Lookup(req.Provider)
	if !ok {
		return protocol.Errorf(protocol.CodeBadRequest, "unknown provider %q: use %q or %q", req.Provider, providers.AgentSDK, providers.AppServer)
	}
	if err := s.Store.SetSetting(c.UserContext(), providers.KeyDefaultProvider, p.Name); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"provider": p.Name, "display_name": p.DisplayName})
}
