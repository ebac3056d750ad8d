// The shapes of the API the app uses. The frames and client messages are the
// generated types of libs/protocol (types.gen.ts, never edited by hand). The
// records below are the app's views where it merges two sources (a sidebar
// entry comes from the events socket or from /api/welcome); the checks at the
// end make the build fail when a generated type stops fitting them.

import type * as G from "./types.gen";

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
  /** Set on a session made by "Continue here": the terminal session it continues. */
  cli_session?: G.CLISessionRef;
}

/** A session in the sidebar: the events socket's SessionSummary or a /api/welcome entry. */
export interface SessionSummary {
  session_id: string;
  title: string;
  cwd: string;
  provider: string;
  provider_locked?: boolean;
  permission_mode?: string;
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
  parent_id?: string | null;
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

export type ImageBlock = G.ImageBlock;

export interface Suggestion {
  type?: string;
  behavior?: string;
  mode?: string;
  destination?: string;
  rules?: { toolName: string; ruleContent?: string }[];
  directories?: string[];
  [k: string]: unknown;
}

export type PermissionRequestFrame = G.PermissionRequestFrame;
export type PermissionResolvedFrame = G.PermissionResolvedFrame;

export type QueueItem = G.QueuedPrompt;

export interface StoredMessage {
  sid: string;
  line: number;
  kind: "user_prompt" | "agent" | "notice";
  payload: any;
  is_favorite?: boolean;
  created_at?: string;
}

/** Frames of /chat, server to client. */
export type ChatFrame = G.ChatFrame;
export type ConnectedFrame = G.ConnectedFrame;
/** Client messages of /chat. */
export type ClientMessage = G.ChatClientMessage;

/** Frames of the events socket (/api/events). */
export type EventFrame = G.EventFrame;

export interface PendingPermission {
  session_id: string;
  request_id: string;
  tool_name: string;
  input: Record<string, unknown>;
  suggestions?: unknown[];
}

// The generated records must fit the app's views (a compile error otherwise).
type Fits<T extends U, U> = T;
export type _checks = [
  Fits<G.SessionSummary, SessionSummary>,
  Fits<G.PendingPermission, PendingPermission>,
  Fits<G.LogMessage, StoredMessage>,
  Fits<G.Provider, Omit<Provider, "permission_modes"> & { permission_modes: string[] }>,
];
