package workspace

import (
	"github.com/gofiber/fiber/v2"
)

// Pane is one pane of a layout preset: what it shows and its share of the
// width (split "columns") or height (split "rows"), in percent.
type Pane struct {
	Kind string `json:"kind"`
	Size int    `json:"size"`
}

// Preset is a layout the UI offers; the server configuration key
// layout.default_preset names the one a new window starts with.
type Preset struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Split       string `json:"split"`
	Panes       []Pane `json:"panes"`
}

// DefaultPreset is the default of layout.default_preset.
const DefaultPreset = "chat"

// Presets are the built-in layout presets; each one's pane sizes add up
// to 100.
var Presets = []Preset{
	{
		ID: "chat", Name: "Chat", Description: "The conversation alone.", Split: "columns",
		Panes: []Pane{{Kind: "chat", Size: 100}},
	},
	{
		ID: "chat-terminal", Name: "Chat and terminal", Description: "The conversation with a terminal beside it.",
		Split: "columns", Panes: []Pane{{Kind: "chat", Size: 60}, {Kind: "terminal", Size: 40}},
	},
	{
		ID: "files-chat", Name: "Files and chat", Description: "The project's files beside the conversation.",
		Split: "columns", Panes: []Pane{{Kind: "files", Size: 25}, {Kind: "chat", Size: 75}},
	},
	{
		ID: "review", Name: "Review", Description: "The conversation beside the session's changes.",
		Split: "columns", Panes: []Pane{{Kind: "chat", Size: 50}, {Kind: "changes", Size: 50}},
	},
	{
		ID: "workbench", Name: "Workbench", Description: "Files, conversation and terminal side by side.",
		Split: "columns", Panes: []Pane{{Kind: "files", Size: 20}, {Kind: "chat", Size: 50}, {Kind: "terminal", Size: 30}},
	},
	{
		ID: "terminal", Name: "Terminal", Description: "A terminal alone.", Split: "columns",
		Panes: []Pane{{Kind: "terminal", Size: 100}},
	},
}

// presetIDs lists the ids of Presets.
func presetIDs() []string {
	ids := make([]string, len(Presets))
	for i, p := range Presets {
		ids[i] = p.ID
	}
	return ids
}

// getPresets: GET /api/app/presets, the presets and the configured default.
func (s *server) getPresets(c *fiber.Ctx) error {
	cfg, err := s.readConfig(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"default": cfg.values[KeyDefaultPreset], "presets": Presets})
}
