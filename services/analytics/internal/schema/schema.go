// Package schema is the one description of the analytics tables and views:
// their names (Tables, the exact set the read-only role may SELECT from) and
// their columns, as served by GET /api/shadow-db/schema and documented in
// docs/api.md. A test keeps it equal to the migrated database.
package schema

// Table describes one analytics table or view.
type Table struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"` // "table" or "view"
	Description string   `json:"description"`
	Columns     []Column `json:"columns"`
}

// Column describes one column of a Table.
type Column struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // PostgreSQL's type name, as format_type() prints it
	Nullable    bool   `json:"nullable"`
	Description string `json:"description"`
}

// Kinds of Table.
const (
	KindTable = "table"
	KindView  = "view"
)

// Tables lists the analytics tables and views, in the order they are
// documented. These, and nothing else, are granted SELECT to the read-only
// role (svc_readonly) after the migrations.
var Tables = []string{"turns", "turn_tools", "turn_tags", "session_tags", "turn_costs"}

// Describe returns the documented tables, in the order of Tables.
func Describe() []Table {
	out := make([]Table, len(described))
	copy(out, described)
	return out
}

var described = []Table{
	{
		Name: "turns", Kind: KindTable,
		Description: "one row per agent turn, from chat's turn events (idempotent by turn id)",
		Columns: []Column{
			{"id", "text", false, "the turn id, `<session_id>:<line of the prompt>`"},
			{"session_id", "text", false, "the chat session"},
			{"turn_number", "integer", true, "the turn's number in its session, 1-based (null when chat did not send it)"},
			{"started_at", "timestamp with time zone", false, "when the agent took the prompt; when only the end was seen, ended_at minus duration_ms"},
			{"ended_at", "timestamp with time zone", true, "when the turn ended (null while it runs)"},
			{"duration_ms", "bigint", true, "the agent's reported duration, else the wall time of the turn"},
			{"user_prompt", "text", false, "the prompt text"},
			{"model", "text", false, "the model (may be empty)"},
			{"provider", "text", false, "the provider, `agent-sdk` or `app-server` (may be empty)"},
			{"cost", "numeric(20,10)", false, "the turn's cost in USD (0 until it ends)"},
			{"input_tokens", "bigint", false, "input tokens"},
			{"output_tokens", "bigint", false, "output tokens"},
			{"cache_read_tokens", "bigint", false, "tokens read from the prompt cache"},
			{"cache_creation_tokens", "bigint", false, "tokens written to the prompt cache"},
			{"tool_calls", "integer", false, "the number of tool calls in the turn"},
			{"is_error", "boolean", false, "whether the turn failed (true for a turn cut off by the agent's exit)"},
			{"stop_reason", "text", false, "why it stopped (`end_turn`, `success`, `process_exited`, ...; empty while it runs)"},
			{"project", "text", false, "the project: the working directory, cleaned (no trailing slash, no `.`/`..`)"},
			{"cwd", "text", false, "the session's working directory"},
			{"prompt_tsv", "tsvector", false, "the prompt's first 100000 characters as a full-text search vector (`english` configuration), generated"},
		},
	},
	{
		Name: "turn_tools", Kind: KindTable,
		Description: "the tool calls of each turn, in the order they were made",
		Columns: []Column{
			{"turn_id", "text", false, "the turn (turns.id)"},
			{"seq", "integer", false, "position of the call in the turn, from 1"},
			{"name", "text", false, "the tool's name (`Bash`, `Edit`, ...)"},
			{"duration_ms", "bigint", true, "from the tool_use to its tool_result (null when no result came)"},
			{"outcome", "text", false, "`ok`, `error` or `denied`"},
		},
	},
	{
		Name: "turn_tags", Kind: KindTable,
		Description: "tags set on turns",
		Columns: []Column{
			{"turn_id", "text", false, "the turn (turns.id)"},
			{"tag", "text", false, "the tag (1 to 64 characters, no control characters)"},
			{"created_at", "timestamp with time zone", false, "when the tag was set"},
		},
	},
	{
		Name: "session_tags", Kind: KindTable,
		Description: "tags set on sessions; a session's tags apply to all its turns when filtering by tag",
		Columns: []Column{
			{"session_id", "text", false, "the chat session"},
			{"tag", "text", false, "the tag"},
			{"created_at", "timestamp with time zone", false, "when the tag was set"},
		},
	},
	{
		Name: "turn_costs", Kind: KindView,
		Description: "the cost of each ended turn per model (one row per turn and model)",
		Columns: []Column{
			{"turn_id", "text", true, "the turn"},
			{"session_id", "text", true, "its session"},
			{"project", "text", true, "its project"},
			{"model", "text", true, "the model"},
			{"provider", "text", true, "the provider"},
			{"day", "date", true, "the UTC day the turn started"},
			{"started_at", "timestamp with time zone", true, "when the turn started"},
			{"cost", "numeric(20,10)", true, "cost in USD"},
			{"input_tokens", "bigint", true, "input tokens"},
			{"output_tokens", "bigint", true, "output tokens"},
			{"cache_read_tokens", "bigint", true, "cache read tokens"},
			{"cache_creation_tokens", "bigint", true, "cache creation tokens"},
		},
	},
}
