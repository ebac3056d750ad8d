import { signal } from "@preact/signals";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/preact";
import { afterEach, describe, expect, it, vi } from "vitest";

vi.mock("../lib/api", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../lib/api")>()),
  get: vi.fn(async () => ({ drafts: [] })),
  post: vi.fn(async () => ({ draft_id: "d1" })),
  put: vi.fn(async () => ({})),
  del: vi.fn(async () => ({})),
}));

import type { LiveSession } from "../state/live";
import { Composer } from "../ui/Composer";

describe("Composer", () => {
  afterEach(cleanup);

  // A prompt is handed to the outbox (IndexedDB) before it goes: what the
  // user types meanwhile is the next message and must survive the first
  // one's hand-over (it was wiped when the box was emptied afterwards).
  it("keeps what is typed while the previous prompt is handed over", async () => {
    let release!: () => void;
    const handed = new Promise<void>((r) => (release = r));
    const sendPrompt = vi.fn(() => handed);
    const live = { id: "S", store: { agentRunning: signal(true), cwd: signal("/tmp") }, sendPrompt } as unknown as LiveSession;
    render(<Composer live={live} onExec={() => {}} onStop={() => {}} />);
    const box = screen.getByRole("textbox", { name: "Message" }) as HTMLTextAreaElement;
    fireEvent.input(box, { target: { value: "first" } });
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(sendPrompt).toHaveBeenCalledWith("first", []);
    fireEvent.input(box, { target: { value: "second" } });
    await act(async () => {
      release();
      await handed;
    });
    expect(box.value).toBe("second");
  });

  it("puts the text back when the prompt cannot be kept", async () => {
    const sendPrompt = vi.fn(async () => {
      throw new Error("quota exceeded");
    });
    const live = { id: "S", store: { agentRunning: signal(false), cwd: signal("/tmp") }, sendPrompt } as unknown as LiveSession;
    render(<Composer live={live} onExec={() => {}} onStop={() => {}} />);
    const box = screen.getByRole("textbox", { name: "Message" }) as HTMLTextAreaElement;
    fireEvent.input(box, { target: { value: "keep me" } });
    await act(async () => {
      fireEvent.click(screen.getByRole("button", { name: "Send" }));
    });
    expect(box.value).toBe("keep me");
    expect(screen.getByText(/quota exceeded/)).toBeTruthy();
  });
});
