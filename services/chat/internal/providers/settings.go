package providers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/svc-code/svc-code/services/chat/internal/agent"
	"github.com/svc-code/svc-code/services/chat/internal/agent/claude"
	"github.com/svc-code/svc-code/services/chat/internal/agent/codex"
	"github.com/svc-code/svc-code/services/chat/internal/store"
)

// Settings is where the provider settings live: the server-wide
// app_settings of internal/store (PostgreSQL), so every instance sees them.
type Settings interface {
	Setting(ctx context.Context, key string, v any) (bool, error)
	SetSetting(ctx context.Context, key string, v any) error
	DeleteSetting(ctx context.Context, key string) error
}

var _ Settings = (*store.Store)(nil)

// KeyDefaultProvider is the setting (app_settings.key) of the default
// provider's name.
const KeyDefaultProvider = "default_provider"

// PathKey is the key of p's configured executable.
func PathKey(p Provider) string { return "provider_path/" + p.Program }

// DefaultsKey is the key of p's defaults for new sessions.
func DefaultsKey(p Provider) string { return "provider_defaults/" + p.Name }

// ModelsKey is the key of p's model list (and prices).
func ModelsKey(p Provider) string { return "provider_models/" + p.Name }

// AuthKey is the key of p's stored API key.
func AuthKey(p Provider) string { return "provider_auth/" + p.Name }

// Defaults are what a new session of a provider starts with. ApprovalPolicy
// and Sandbox exist for app-server only: they replace what the default
// permission mode means to Codex (codex.PolicyFor).
type Defaults struct {
	Model          string `json:"model"`
	PermissionMode string `json:"permission_mode"`
	ApprovalPolicy string `json:"approval_policy,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
}

// MaxModelLen bounds a model id.
const MaxModelLen = 200

var modelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]*$`)

// ValidModel reports whether id can name a model: 1 to MaxModelLen
// characters, letters, digits and ._:/@[]- (no spaces).
func ValidModel(id string) bool { return len(id) <= MaxModelLen && modelRE.MatchString(id) }

// Validate checks d for provider p; "" fields mean "not set".
func (d Defaults) Validate(p Provider) error {
	if d.Model != "" && !ValidModel(d.Model) {
		return fmt.Errorf("model %q: want up to %d letters, digits or ._:/@[]-", d.Model, MaxModelLen)
	}
	if d.PermissionMode != "" && !ValidMode(d.PermissionMode) {
		return fmt.Errorf("permission_mode %q: use one of %v", d.PermissionMode, PermissionModes)
	}
	if p.Name != AppServer && (d.ApprovalPolicy != "" || d.Sandbox != "") {
		return fmt.Errorf("approval_policy and sandbox apply to %s only", AppServer)
	}
	if d.ApprovalPolicy != "" && !slices.Contains(codex.ApprovalPolicies, d.ApprovalPolicy) {
		return fmt.Errorf("approval_policy %q: use one of %v", d.ApprovalPolicy, codex.ApprovalPolicies)
	}
	if d.Sandbox != "" && !slices.Contains(codex.SandboxModes, d.Sandbox) {
		return fmt.Errorf("sandbox %q: use one of %v", d.Sandbox, codex.SandboxModes)
	}
	return nil
}

// LoadDefaults reads p's defaults; unset fields stay "".
func LoadDefaults(ctx context.Context, st Settings, p Provider) (Defaults, error) {
	var d Defaults
	if _, err := st.Setting(ctx, DefaultsKey(p), &d); err != nil {
		return Defaults{}, err
	}
	return d, nil
}

// Model is an entry of a provider's model list. Price prices app-server
// turns (Codex reports no cost); agent-sdk reports its own costs.
type Model struct {
	ID          string       `json:"id"`
	DisplayName string       `json:"display_name,omitempty"`
	Price       *codex.Price `json:"price,omitempty"`
}

// DefaultModels are the model lists used until one is configured.
var DefaultModels = map[string][]Model{
	AgentSDK: {
		{ID: "claude-sonnet-4-5", DisplayName: "Claude Sonnet 4.5"},
		{ID: "claude-opus-4-1", DisplayName: "Claude Opus 4.1"},
		{ID: "claude-haiku-4-5", DisplayName: "Claude Haiku 4.5"},
	},
	AppServer: defaultCodexModels(),
}

func defaultCodexModels() []Model {
	ids := make([]string, 0, len(codex.DefaultPrices))
	for id := range codex.DefaultPrices {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]Model, 0, len(ids))
	for _, id := range ids {
		price := codex.DefaultPrices[id]
		out = append(out, Model{ID: id, Price: &price})
	}
	return out
}

// LoadModels reads p's model list: the configured one, else the default.
func LoadModels(ctx context.Context, st Settings, p Provider) (models []Model, configured bool, err error) {
	configured, err = st.Setting(ctx, ModelsKey(p), &models)
	if err != nil {
		return nil, false, err
	}
	if !configured {
		models = DefaultModels[p.Name]
	}
	if models == nil {
		models = []Model{}
	}
	return models, configured, nil
}

// Prices is the price table of app-server turns: codex.DefaultPrices with
// the prices of the configured model list over it.
func Prices(models []Model) codex.Prices {
	out := make(codex.Prices, len(codex.DefaultPrices)+len(models))
	for id, p := range codex.DefaultPrices {
		out[id] = p
	}
	for _, m := range models {
		if m.Price != nil {
			out[m.ID] = *m.Price
		}
	}
	return out
}

// DefaultProvider is the provider of sessions created without one: the
// stored setting, else Default.
func DefaultProvider(ctx context.Context, st Settings) (Provider, error) {
	var name string
	if _, err := st.Setting(ctx, KeyDefaultProvider, &name); err != nil {
		return Provider{}, err
	}
	if p, ok := Lookup(name); ok {
		return p, nil
	}
	p, _ := Lookup(Default)
	return p, nil
}

// FillNewSession completes n with the settings: the default provider when
// n names none, and that provider's default permission mode and model when
// n sets none.
func FillNewSession(ctx context.Context, st Settings, n *store.NewSession) error {
	if n.Provider == "" {
		p, err := DefaultProvider(ctx, st)
		if err != nil {
			return err
		}
		n.Provider = p.Name
	}
	p, ok := Lookup(n.Provider)
	if !ok {
		return fmt.Errorf("unknown provider %q", n.Provider)
	}
	d, err := LoadDefaults(ctx, st, p)
	if err != nil {
		return err
	}
	if n.PermissionMode == "" {
		n.PermissionMode = d.PermissionMode
	}
	if n.Model == "" {
		n.Model = d.Model
	}
	return nil
}

// Auth is p's stored credential.
type Auth struct {
	APIKey string `json:"api_key"`
}

// APIKeyEnv is the variable p's program reads its API key from.
func (p Provider) APIKeyEnv() string {
	if p.Name == AppServer {
		return "OPENAI_API_KEY"
	}
	return "ANTHROPIC_API_KEY"
}

// NewAgent makes the agent provider of a session bound to p, with the
// settings: its executable (the configured path, else its program looked
// up with lookPath), its stored API key in the environment, and for
// app-server the default policy and the price table.
func NewAgent(ctx context.Context, st Settings, p Provider, opts agent.Options, lookPath func(string) (string, error)) (agent.Provider, error) {
	var configured string
	if _, err := st.Setting(ctx, PathKey(p), &configured); err != nil {
		return nil, err
	}
	resolved, err := p.Resolve(configured, lookPath)
	if err != nil {
		return nil, &agent.MissingExecutableError{Provider: p.Name, Program: resolved, PathName: p.Program, Err: err}
	}
	opts.Executable = resolved
	var auth Auth
	if _, err := st.Setting(ctx, AuthKey(p), &auth); err != nil {
		return nil, err
	}
	if auth.APIKey != "" {
		opts.Env = append(slices.Clip(opts.Env), p.APIKeyEnv()+"="+auth.APIKey)
	}
	switch p.Name {
	case AgentSDK:
		return claude.New(claude.Config{Options: opts}), nil
	case AppServer:
		d, err := LoadDefaults(ctx, st, p)
		if err != nil {
			return nil, err
		}
		models, _, err := LoadModels(ctx, st, p)
		if err != nil {
			return nil, err
		}
		return codex.New(codex.Config{
			Options:       opts,
			DefaultPolicy: codex.Policy{ApprovalPolicy: d.ApprovalPolicy, Sandbox: d.Sandbox},
			Prices:        Prices(models),
		}), nil
	}
	return nil, fmt.Errorf("provider %q cannot be run by this server", p.Name)
}

// AuthSource is one place a provider's credentials may come from.
type AuthSource struct {
	Kind    string `json:"kind"` // "env", "file" or "setting"
	Name    string `json:"name"` // the variable, the file's path, or the setting
	Present bool   `json:"present"`
}

// AuthSources lists where p's credentials may come from and whether each
// is there, without reading any secret: API key variables in the server's
// environment (getenv), login state files under home (Claude Code's
// ~/.claude/.credentials.json; Codex's $CODEX_HOME/auth.json, default
// ~/.codex), and the API key stored with PUT /api/app/provider-auth.
func AuthSources(p Provider, getenv func(string) string, home string, stored bool) []AuthSource {
	var envs, files []string
	switch p.Name {
	case AppServer:
		envs = []string{"OPENAI_API_KEY", "CODEX_API_KEY"}
		codexHome := getenv("CODEX_HOME")
		if codexHome == "" {
			codexHome = filepath.Join(home, ".codex")
		}
		files = []string{filepath.Join(codexHome, "auth.json")}
	default:
		envs = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}
		cfgDir := getenv("CLAUDE_CONFIG_DIR")
		if cfgDir == "" {
			cfgDir = filepath.Join(home, ".claude")
		}
		files = []string{filepath.Join(cfgDir, ".credentials.json")}
	}
	out := make([]AuthSource, 0, len(envs)+len(files)+1)
	for _, e := range envs {
		out = append(out, AuthSource{Kind: "env", Name: e, Present: getenv(e) != ""})
	}
	for _, f := range files {
		info, err := os.Stat(f)
		out = append(out, AuthSource{Kind: "file", Name: f, Present: err == nil && info.Mode().IsRegular() && info.Size() > 0})
	}
	out = append(out, AuthSource{Kind: "setting", Name: AuthKey(p), Present: stored})
	return out
}
