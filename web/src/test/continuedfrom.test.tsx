import { cleanup, fireEvent, render, screen } from "@testing-library/preact";
import { afterEach, describe, expect, it } from "vitest";
import type { Session } from "../protocol/types";
import { route } from "../state/app";
import { ContinuedFrom, providerLockReason, transcriptHref } from "../ui/ContinuedFrom";

const ID = "4f76bc7a-af23-4a3d-9b3e-05f8f0f1c03b";
const session = (f: Partial<Session> = {}): Session => ({
  session_id: "S", title: "t", cwd: "/p", provider: "agent-sdk", provider_locked: true, permission_mode: "default",
  agent_running: false, is_compacting: false, created_at: "2026-11-27T00:00:00Z", updated_at: "2026-11-27T00:00:00Z",
  archived: false, cost_usd: 0, turns: 0, ...f,
});

describe("ContinuedFrom", () => {
  afterEach(() => {
    cleanup();
    history.replaceState(null, "", "/");
  });

  it("links to the transcript from the session's cli_session, with no ?from= in the URL", () => {
    history.replaceState(null, "", "/s/S");
    render(<ContinuedFrom session={session({ cli_session: { provider: "claude", id: ID } })} />);
    const link = screen.getByRole("link", { name: "the terminal session's transcript" });
    expect(link.getAttribute("href")).toBe(`/cli/claude/${ID}`);
    expect(screen.getByRole("status").textContent).toContain("its first prompt here resumes it");
    fireEvent.click(link);
    expect(location.pathname).toBe(`/cli/claude/${ID}`);
    expect(route.value.view).toBe("cli");
  });

  it("says where the earlier history is once the session has run", () => {
    render(<ContinuedFrom session={session({ turns: 2, cli_session: { provider: "codex", id: "th-1" } })} />);
    expect(screen.getByRole("link").getAttribute("href")).toBe("/cli/codex/th-1");
    expect(screen.getByRole("status").textContent).toContain("its history before this session is in");
  });

  it("shows nothing for another session, even with a ?from= in the URL", () => {
    history.replaceState(null, "", `/s/S?from=claude%2F${ID}`);
    const { container } = render(<ContinuedFrom session={session({ provider_locked: false })} />);
    expect(container.textContent).toBe("");
    render(<ContinuedFrom session={null} />);
    expect(screen.queryByRole("status")).toBeNull();
  });

  it("refuses a cli_session that is not a known provider (no link built from it)", () => {
    expect(transcriptHref(session({ cli_session: { provider: "x" as "claude", id: ID } }))).toBeNull();
    expect(transcriptHref(session({ cli_session: { provider: "codex", id: "a/../b" } }))).toBe("/cli/codex/a%2F..%2Fb");
  });

  it("can be dismissed", () => {
    render(<ContinuedFrom session={session({ cli_session: { provider: "claude", id: ID } })} />);
    fireEvent.click(screen.getByRole("button", { name: "Dismiss" }));
    expect(screen.queryByRole("status")).toBeNull();
  });

  it("says why the provider is locked", () => {
    expect(providerLockReason(session({ cli_session: { provider: "claude", id: ID } }))).toBe(
      `Continues the Claude Code session ${ID} from a terminal: another provider could not resume it`,
    );
    expect(providerLockReason(session())).toBe("The provider is locked after the first turn");
  });
});
