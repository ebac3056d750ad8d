// The shapes of the API the app uses, as docs/api.md and the UI contract
// describe them. h16-server generates types.gen.ts from libs/protocol; these
// hand-written types are the subset the app relies on, kept narrow on purpose
// (every field the app reads, optional where the server may omit it).

export type PermissionMode = "default" | "acceptEdits" | "bypassPermissions" | "plan";
export const PERMISSION_MODES: PermissionMode[] = ["default", "acceptEdits", "bypassPermissions", "plan"];

export interface Session {
  session_id: string;
  title: string;
  cwd: string;
  provider: string;
  provider_locked: boolean;
  permission_mode: PermissionMode;
  model?: string;
  agent_running: boolean;
  is_compacting: boolean;
  created_at: string;
  updated_at: string;
  archived: boolean;
  parent_id?: string | null;
  cost_usd: number;
  turns: number;
  last_line?: number;
}

/** A session in the sidebar: the events socket's SessionSummary or a /api/welcome entry. */
export interface SessionSummary {
  session_id: string;
  title: string;
  cwd: string;
  provider: string;
  provider_locked?: boolean;
  permission_mode?: PermissionMode;
  agent_running?: boolean;
  is_compacting?: boolean;
  archived?: boolean;
  is_favorite?: boolean;
  favourite?: boolean;
  cost_usd?: number;
  turns?: number;
  created_at?: string;
  updated_at?: string;
  last_line?: number;
  pending_permissions?: number;
  first_prompt?: string;
}

export interface Provider {
  name: string;
  display_name: string;
  default: boolean;
  available: boolean;
  reason?: string;
  capabilities: { live_controls: boolean; images: boolean; resume: boolean };
  permission_modes: PermissionMode[];
}

export interface ImageBlock {
  type: "image";
  source: { type: "base64"; media_type: string; data: string };
}

export interface Suggestion {
  type?: string;
  behavior?: string;
  mode?: string;
  destination?: string;
  rules?: { toolName: string; ruleContent?: string }[];
  directories?: string[];
  [k: string]: unknown;
}

export interface PermissionRequestFrame {
  type: "permission_request";
  session_id?: string;
  request_id: string;
  tool_name: string;
  input: Record<string, unknown>;
  suggestions?: Suggestion[];
  replay?: boolean;
}

export interface PermissionResolvedFrame {
  type: "permission_resolved";
  session_id?: string;
  request_id: string;
  behavior: string;
  ok: boolean;
  reason?: string;
  answered_by?: string;
}

export interface QueueItem {
  queue_id: string;
  content: string;
  images?: ImageBlock[];
  created_at?: string;
}

export interface StoredMessage {
  sid: string;
  line: number;
  kind: "user_prompt" | "agent" | "notice";
  payload: any;
  is_favorite?: boolean;
  created_at?: string;
}

/** Frames of /chat, server to client. */
export type ChatFrame =
  | ({ type: "connected" } & ConnectedFrame)
  | { type: "agent_message"; data: any; line: number }
  | { type: "message_stored"; message: { role: "user"; content: string; images?: ImageBlock[] }; line: number }
  | { type: "user_message_stored"; promptId: string; isFavorite: boolean }
  | { type: "user_message_queued"; queue_id: string }
  | { type: "raw_output"; line: string }
  | { type: "stderr"; line: string }
  | PermissionRequestFrame
  | PermissionResolvedFrame
  | { type: "session_cleared"; session_id: string; archived_session_id: string }
  | { type: "stopped"; outcome: "idle" | "acknowledged" | "forced" }
  | { type: "permission_mode_changed"; mode: PermissionMode; applied: "live" | "next_turn" }
  | { type: "compact_progress"; phase?: string; result?: string; trigger?: string; is_compacting: boolean; heartbeat?: boolean; elapsed_ms?: number; silent_ms?: number }
  | { type: "session_ended"; reason: string; cause: string; exit_code?: number }
  | { type: "error"; message: string }
  | { type: "queue"; items: QueueItem[] }
  | { type: "gap"; from_line?: number; to_line?: number; after_line?: number; message?: string }
  | { type: "pong" };

export interface ConnectedFrame {
  session_id: string;
  cwd: string;
  home?: string;
  is_reconnect: boolean;
  agent_running: boolean;
  is_compacting: boolean;
  provider: string;
  provider_display_name?: string;
  provider_caps?: { live_controls: boolean; images: boolean; resume: boolean };
  provider_locked: boolean;
  permission_mode: PermissionMode;
  queue?: QueueItem[];
}

/** Client messages of /chat. */
export type ClientMessage =
  | { type: "user_message"; content: string; images?: ImageBlock[]; client_id?: string }
  | { type: "ping" }
  | { type: "stop" }
  | { type: "set_permission_mode"; mode: PermissionMode }
  | { type: "permission_response"; request_id: string; behavior: "allow" | "deny"; updated_input?: unknown; suggestion_index?: number; message?: string; answered_by?: string }
  | { type: "tool_answer"; request_id: string; answers: Record<string, string>; answered_by?: string }
  | { type: "clear_session" }
  | { type: "cancel_queued"; queue_id: string }
  | { type: "send_now"; queue_id: string };

/** Frames of the events socket (/api/events). */
export type EventFrame =
  | { type: "snapshot"; sessions: SessionSummary[]; pending: PendingPermission[] }
  | { type: "session"; session: SessionSummary }
  | { type: "session_deleted"; session_id: string }
  | (PermissionRequestFrame & { session_id: string })
  | (PermissionResolvedFrame & { session_id: string })
  | { type: "pong" }
  | { type: "heartbeat" };

export interface PendingPermission {
  session_id: string;
  request_id: string;
  tool_name: string;
  input: Record<string, unknown>;
  suggestions?: Suggestion[];
}
