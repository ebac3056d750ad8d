package protocol

import (
	"encoding/json"
	"time"
)

// The bodies of the HTTP routes the browser UI uses (docs/api.md names
// each route). Field comments say only what the JSON does not.

// Session is the session object of every session route.
type Session struct {
	SessionID      string    `json:"session_id"`
	Title          string    `json:"title"`
	Cwd            string    `json:"cwd"`
	Provider       string    `json:"provider"`
	ProviderLocked bool      `json:"provider_locked"`
	PermissionMode string    `json:"permission_mode"`
	Model          string    `json:"model"`
	AgentRunning   bool      `json:"agent_running"`
	IsCompacting   bool      `json:"is_compacting"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Archived       bool      `json:"archived"`
	ParentID       *string   `json:"parent_id" tstype:"string | null,required"`
	CostUSD        float64   `json:"cost_usd"`
	Turns          int       `json:"turns"`
	LastLine       int64     `json:"last_line"`
	// CLISession is the Claude Code or Codex session this session was made
	// to continue ("Continue here"), absent on other sessions and once
	// the session is cleared (its archived copy keeps it).
	CLISession *CLISessionRef `json:"cli_session,omitempty"`
}

// SessionList is GET /api/sessions.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	NextCursor *string   `json:"next_cursor" tstype:"string | null,required"`
}

// CreateSessionRequest is POST /api/sessions.
type CreateSessionRequest struct {
	Cwd      string `json:"cwd"`
	Provider string `json:"provider,omitempty"`
	Title    string `json:"title,omitempty"`
}

// PatchSessionRequest is PATCH /api/session/{id}: at least one field.
// Archived hides the session from the default lists (or shows it again);
// it does not stop a running agent.
type PatchSessionRequest struct {
	Title    *string `json:"title,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
}

// ForkRequest is POST /api/session/{id}/fork's optional body: Line, when
// set, keeps the log up to and including that line.
type ForkRequest struct {
	Line *int64 `json:"line,omitempty"`
}

// DeleteSessionResponse is DELETE /api/session/{id}.
type DeleteSessionResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"session_id"`
}

// StopResponse is POST /api/session/{id}/stop.
type StopResponse struct {
	SessionID string `json:"session_id"`
	Stopped   bool   `json:"stopped"`
	Outcome   string `json:"outcome" tstype:"'idle' | 'acknowledged' | 'forced'"`
}

// PermissionModeRequest is PUT /api/session/{id}/permission-mode.
type PermissionModeRequest struct {
	Mode string `json:"mode"`
}

// PermissionModeResponse is its answer.
type PermissionModeResponse struct {
	SessionID string `json:"session_id"`
	Mode      string `json:"mode"`
	Applied   string `json:"applied" tstype:"'live' | 'next_turn'"`
}

// ProviderRequest is PUT /api/session/{id}/provider.
type ProviderRequest struct {
	Provider string `json:"provider"`
}

// LogMessage is one line of a session's log.
type LogMessage struct {
	SID        string          `json:"sid"`
	Line       int64           `json:"line"`
	Kind       string          `json:"kind" tstype:"'user_prompt' | 'agent' | 'notice'"`
	Payload    json.RawMessage `json:"payload" tstype:"JSONObject"`
	IsFavorite bool            `json:"is_favorite"`
	CreatedAt  time.Time       `json:"created_at"`
}

// LogsResponse is GET /api/sessions/{id}/logs.
type LogsResponse struct {
	Session  Session      `json:"session"`
	Messages []LogMessage `json:"messages"`
	HasMore  bool         `json:"has_more"`
}

// LogMessagesResponse is GET /api/sessions/{id}/logs/messages.
type LogMessagesResponse struct {
	SessionID string       `json:"session_id"`
	Messages  []LogMessage `json:"messages"`
	HasMore   bool         `json:"has_more"`
}

// ProviderExecutable is where a provider's program is (GET, PUT
// /api/app/provider-path/{name}, and each provider of GET /api/providers).
type ProviderExecutable struct {
	Name     string  `json:"name"`
	Provider string  `json:"provider"`
	Path     *string `json:"path" tstype:"string | null,required"`
	Resolved *string `json:"resolved" tstype:"string | null,required"`
	Found    bool    `json:"found"`
	Reason   string  `json:"reason,omitempty"`
}

// ModePolicy is what a permission mode means to Codex.
type ModePolicy struct {
	ApprovalPolicy string `json:"approval_policy"`
	Sandbox        string `json:"sandbox"`
}

// ProviderDefaults are a provider's defaults for new sessions (GET, PUT
// /api/app/provider-defaults/{name}).
type ProviderDefaults struct {
	Name           string                `json:"name"`
	Model          *string               `json:"model" tstype:"string | null,required"`
	PermissionMode string                `json:"permission_mode"`
	ApprovalPolicy *string               `json:"approval_policy,omitempty"`
	Sandbox        *string               `json:"sandbox,omitempty"`
	ModePolicies   map[string]ModePolicy `json:"mode_policies,omitempty"`
}

// Provider is one provider of GET /api/providers.
type Provider struct {
	Name            string             `json:"name"`
	DisplayName     string             `json:"display_name"`
	Default         bool               `json:"default"`
	Capabilities    ProviderCaps       `json:"capabilities"`
	PermissionModes []string           `json:"permission_modes"`
	Executable      ProviderExecutable `json:"executable"`
	Available       bool               `json:"available"`
	Reason          string             `json:"reason,omitempty"`
	Defaults        ProviderDefaults   `json:"defaults"`
}

// ProvidersResponse is GET /api/providers.
type ProvidersResponse struct {
	Default   string     `json:"default"`
	Providers []Provider `json:"providers"`
}

// WelcomeSession is a session of GET /api/welcome/sessions.
type WelcomeSession struct {
	SessionID    string    `json:"session_id"`
	Title        string    `json:"title"`
	Project      string    `json:"project"`
	ProjectName  string    `json:"project_name"`
	Provider     string    `json:"provider"`
	FirstPrompt  string    `json:"first_prompt"`
	CostUSD      float64   `json:"cost_usd"`
	Turns        int       `json:"turns"`
	FilesChanged int       `json:"files_changed"`
	IsFavorite   bool      `json:"is_favorite"`
	LastLine     int64     `json:"last_line"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// WelcomeSessionsResponse is GET /api/welcome/sessions.
type WelcomeSessionsResponse struct {
	Sessions []WelcomeSession `json:"sessions"`
}

// WelcomeProject is a project (a distinct working directory).
type WelcomeProject struct {
	Cwd              string    `json:"cwd"`
	Name             string    `json:"name"`
	Sessions         int       `json:"sessions"`
	ArchivedSessions int       `json:"archived_sessions"`
	CostUSD          float64   `json:"cost_usd"`
	Turns            int       `json:"turns"`
	LastActivity     time.Time `json:"last_activity"`
}

// WelcomeProjectsResponse is GET /api/welcome/projects.
type WelcomeProjectsResponse struct {
	Projects []WelcomeProject `json:"projects"`
}

// SearchRequest is POST /api/welcome/search.
type SearchRequest struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
	Cwd   string `json:"cwd,omitempty"`
}

// SearchHit is one result of the search.
type SearchHit struct {
	Kind      string    `json:"kind" tstype:"'session' | 'prompt'"`
	SessionID string    `json:"session_id"`
	PromptID  *string   `json:"prompt_id" tstype:"string | null,required"`
	Line      *int64    `json:"line" tstype:"number | null,required"`
	Title     string    `json:"title"`
	Cwd       string    `json:"cwd"`
	Archived  bool      `json:"archived"`
	Snippet   string    `json:"snippet"`
	Rank      float64   `json:"rank"`
	At        time.Time `json:"at"`
}

// SearchResponse is the search's answer.
type SearchResponse struct {
	Query   string      `json:"query"`
	Results []SearchHit `json:"results"`
}

// Draft is a saved prompt draft.
type Draft struct {
	DraftID   string    `json:"draft_id"`
	Text      string    `json:"text"`
	Title     string    `json:"title"`
	Cwd       *string   `json:"cwd" tstype:"string | null,required"`
	SessionID *string   `json:"session_id" tstype:"string | null,required"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DraftRequest is POST /api/drafts and PUT /api/drafts/{draft_id}.
type DraftRequest struct {
	Text      string  `json:"text"`
	Cwd       *string `json:"cwd,omitempty"`
	SessionID *string `json:"session_id,omitempty"`
}

// DraftList is GET /api/drafts.
type DraftList struct {
	Drafts []Draft `json:"drafts"`
	Count  int     `json:"count"`
	Max    int     `json:"max"`
}

// DeleteDraftResponse is DELETE /api/drafts/{draft_id}.
type DeleteDraftResponse struct {
	OK      bool   `json:"ok"`
	DraftID string `json:"draft_id"`
}

// StashItem is an item of a session's stash.
type StashItem struct {
	ItemID    string     `json:"item_id"`
	SessionID string     `json:"session_id"`
	Text      string     `json:"text"`
	Sent      bool       `json:"sent"`
	SentAt    *time.Time `json:"sent_at" tstype:"string | null,required"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// StashList is GET /api/session/{id}/stash.
type StashList struct {
	SessionID string      `json:"session_id"`
	Items     []StashItem `json:"items"`
	Max       int         `json:"max"`
}

// StashCreateRequest is POST /api/session/{id}/stash.
type StashCreateRequest struct {
	Text string `json:"text"`
}

// StashPatchRequest is PATCH /api/session/{id}/stash/{item_id}.
type StashPatchRequest struct {
	Text *string `json:"text,omitempty"`
	Sent *bool   `json:"sent,omitempty"`
}

// StashSentRequest is POST /api/session/{id}/stash/sent.
type StashSentRequest struct {
	ItemIDs []string `json:"item_ids"`
}

// StashSentResponse is its answer.
type StashSentResponse struct {
	SessionID string      `json:"session_id"`
	Items     []StashItem `json:"items"`
}

// FavoriteSession is a favorite session.
type FavoriteSession struct {
	SessionID   string    `json:"session_id"`
	Note        string    `json:"note"`
	Title       string    `json:"title"`
	Cwd         string    `json:"cwd"`
	Archived    bool      `json:"archived"`
	CostUSD     float64   `json:"cost_usd"`
	Turns       int       `json:"turns"`
	FavoritedAt time.Time `json:"favorited_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// FavoritePrompt is a favorite prompt.
type FavoritePrompt struct {
	PromptID     string    `json:"prompt_id"`
	SessionID    string    `json:"session_id"`
	Line         int64     `json:"line"`
	Text         string    `json:"text"`
	SessionTitle string    `json:"session_title"`
	Cwd          string    `json:"cwd"`
	CreatedAt    time.Time `json:"created_at"`
}

// FavoritesResponse is GET /api/favorites.
type FavoritesResponse struct {
	Sessions []FavoriteSession `json:"sessions"`
	Prompts  []FavoritePrompt  `json:"prompts"`
}

// FavoriteSessionRequest is PUT /api/favorites/sessions/{id}.
type FavoriteSessionRequest struct {
	Note *string `json:"note,omitempty"`
}

// FavoritePromptRequest is PUT /api/favorites/prompts/{prompt_id}.
type FavoritePromptRequest struct {
	Favorite bool `json:"favorite"`
}

// FavoritePromptResponse is its answer.
type FavoritePromptResponse struct {
	PromptID   string `json:"prompt_id"`
	SessionID  string `json:"session_id"`
	Line       int64  `json:"line"`
	IsFavorite bool   `json:"is_favorite"`
}

// CatalogEntry is a command, agent or skill (GET /api/commands, ...).
type CatalogEntry struct {
	Name        string         `json:"name"`
	Kind        string         `json:"kind" tstype:"'command' | 'agent' | 'skill'"`
	Invocation  string         `json:"invocation,omitempty"`
	Provider    string         `json:"provider" tstype:"'claude' | 'codex'"`
	Scope       string         `json:"scope" tstype:"'personal' | 'project' | 'plugin' | 'codex'"`
	Plugin      string         `json:"plugin,omitempty"`
	Path        string         `json:"path"`
	Description string         `json:"description"`
	Frontmatter map[string]any `json:"frontmatter" tstype:"JSONObject"`
	Error       string         `json:"error,omitempty"`
	Size        int64          `json:"size"`
	UpdatedAt   time.Time      `json:"updated_at"`
	Active      bool           `json:"active"`
	ShadowedBy  string         `json:"shadowed_by,omitempty"`
	Content     string         `json:"content,omitempty"`
}

// CommandsResponse is GET /api/commands.
type CommandsResponse struct {
	Commands []CatalogEntry `json:"commands"`
}

// UploadedImageOriginal is the image as it was sent.
type UploadedImageOriginal struct {
	Name      string `json:"name"`
	Size      int    `json:"size"`
	MediaType string `json:"media_type"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

// UploadImageResponse is POST /api/upload-image.
type UploadImageResponse struct {
	SessionID string                `json:"session_id"`
	Path      string                `json:"path"`
	Name      string                `json:"name"`
	Size      int64                 `json:"size"`
	MediaType string                `json:"media_type"`
	Width     int                   `json:"width"`
	Height    int                   `json:"height"`
	Scaled    bool                  `json:"scaled"`
	Reencoded bool                  `json:"reencoded"`
	Original  UploadedImageOriginal `json:"original"`
	// Block goes as is into user_message's images.
	Block ImageBlock `json:"block"`
}

// UploadFileResponse is POST /api/upload-file.
type UploadFileResponse struct {
	SessionID    string `json:"session_id"`
	Path         string `json:"path"`
	Name         string `json:"name"`
	OriginalName string `json:"original_name"`
	Size         int64  `json:"size"`
	MediaType    string `json:"media_type"`
}

// ExecRequest is POST /api/exec (a bang command).
type ExecRequest struct {
	Command  string   `json:"command"`
	Cwd      string   `json:"cwd"`
	TimeoutS *float64 `json:"timeout_s,omitempty"`
}

// ExecResponse is its answer; a timeout (408) carries the same fields
// with the error envelope's.
type ExecResponse struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Truncated  bool   `json:"truncated"`
	Error      string `json:"error,omitempty"`
	Message    string `json:"message,omitempty"`
}

//tygo:emit
var _ = `/** The envelope of every error answer (ErrorBody, errors.go). */
export interface ErrorBody {
  error: string;
  message?: string;
}`
