-- The session_files trigger (0005) called its PL/pgSQL function for every
-- assistant message, yet only one with a tool_use block can name a file:
-- its condition now checks that first, by jsonb containment, which costs
-- a fraction of the call. What the trigger collects is unchanged.
DROP TRIGGER session_messages_collect_files ON session_messages;
CREATE TRIGGER session_messages_collect_files
	AFTER INSERT ON session_messages
	FOR EACH ROW WHEN (NEW.kind = 'agent' AND NEW.payload ->> 'type' = 'assistant'
		AND NEW.payload -> 'message' -> 'content' @> '[{"type": "tool_use"}]')
	EXECUTE FUNCTION session_files_collect();
