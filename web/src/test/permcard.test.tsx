import { cleanup, fireEvent, render, screen } from "@testing-library/preact";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PermState } from "../state/permissions";
import { PermissionCard } from "../ui/Permission";

const pending = (input: any = { command: "rm -rf build && make all-the-things-with-a-very-long-command-line-that-must-wrap" }, tool = "Bash"): PermState => ({
  req: { session_id: "S", request_id: "r1", tool_name: tool, input, suggestions: [{ type: "addRules", rules: [{ toolName: "Bash", ruleContent: "make:*" }], behavior: "allow", destination: "session" }] },
  status: "pending",
});

describe("PermissionCard", () => {
  afterEach(cleanup);

  it("shows the whole command and answers Allow, a suggestion, Deny with a reason", () => {
    const h = { allow: vi.fn(() => true), deny: vi.fn(() => true), answers: vi.fn(() => true) };
    render(<PermissionCard p={pending()} h={h} />);
    const card = screen.getByRole("region", { name: "Permission request: Bash" });
    expect(card.textContent).toContain("make all-the-things-with-a-very-long-command-line-that-must-wrap");
    fireEvent.click(screen.getByRole("button", { name: "Allow" }));
    expect(h.allow).toHaveBeenCalledWith();
    fireEvent.click(screen.getByRole("button", { name: "Always allow Bash(make:*) (this session)" }));
    expect(h.allow).toHaveBeenLastCalledWith(undefined, 0);
    fireEvent.input(screen.getByRole("textbox", { name: "Reason" }), { target: { value: "not now" } });
    fireEvent.click(screen.getByRole("button", { name: "Deny" }));
    expect(h.deny).toHaveBeenCalledWith("not now");
  });

  it("Edit input → Tool input → Allow edited sends the edited command", () => {
    const h = { allow: vi.fn(() => true), deny: vi.fn(() => true), answers: vi.fn(() => true) };
    render(<PermissionCard p={pending({ command: "ls", description: "list" })} h={h} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit input" }));
    const box = screen.getByRole("textbox", { name: "Tool input" }) as HTMLTextAreaElement;
    expect(box.value).toBe("ls");
    fireEvent.input(box, { target: { value: "ls -la /tmp" } });
    fireEvent.click(screen.getByRole("button", { name: "Allow edited" }));
    expect(h.allow).toHaveBeenCalledWith({ command: "ls -la /tmp", description: "list" });
  });

  it("refuses edited JSON that does not parse, and sends nothing", () => {
    const h = { allow: vi.fn(() => true), deny: vi.fn(() => true), answers: vi.fn(() => true) };
    render(<PermissionCard p={pending({ file_path: "/a", content: "x" }, "Write")} h={h} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit input" }));
    fireEvent.input(screen.getByRole("textbox", { name: "Tool input" }), { target: { value: "{broken" } });
    fireEvent.click(screen.getByRole("button", { name: "Allow edited" }));
    expect(h.allow).not.toHaveBeenCalled();
    expect(screen.getByRole("alert").textContent).toMatch(/Not valid JSON/);
  });

  it("an answered card has no Allow or Deny and says who answered", () => {
    const h = { allow: vi.fn(() => true), deny: vi.fn(() => true), answers: vi.fn(() => true) };
    render(<PermissionCard p={{ ...pending(), status: "answered", behavior: "allow", answeredBy: "Safari on iOS · tab 9f2e" }} h={h} />);
    expect(screen.queryByRole("button", { name: "Allow" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Deny" })).toBeNull();
    expect(screen.getByRole("status").textContent).toBe("Answered on another device (Safari on iOS · tab 9f2e): allowed");
  });

  it("says when the answer could not be sent", () => {
    const h = { allow: vi.fn(() => false), deny: vi.fn(() => true), answers: vi.fn(() => true) };
    render(<PermissionCard p={pending()} h={h} />);
    fireEvent.click(screen.getByRole("button", { name: "Allow" }));
    expect(screen.getByRole("alert").textContent).toMatch(/connection is down/);
  });
});
