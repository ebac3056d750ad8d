import { afterEach, describe, expect, it, vi } from "vitest";
import { signOut } from "../lib/signout";

// Sign out goes to the sign-in page with what the server said.
function answer(status: number, body: unknown) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async () => new Response(JSON.stringify(body), { status })),
  );
}

describe("signOut", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("posts /api/logout and goes to the sign-in page saying the cookie is revoked", async () => {
    answer(200, { ok: true, revoked: true });
    const go = vi.fn();
    await signOut(go);
    const f = globalThis.fetch as unknown as ReturnType<typeof vi.fn>;
    expect(f.mock.calls[0][0]).toBe("/api/logout");
    expect((f.mock.calls[0][1] as RequestInit).method).toBe("POST");
    expect(go).toHaveBeenCalledWith("/login?signed_out=1");
  });

  it("says so when the server could not record the sign-out yet", async () => {
    answer(200, { ok: true, revoked: false, pending: true, message: "…" });
    const go = vi.fn();
    await signOut(go);
    expect(go).toHaveBeenCalledWith("/login?signed_out=pending");
  });

  it("claims nothing when the sign-out was not confirmed", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => Promise.reject(new TypeError("network down"))));
    const go = vi.fn();
    await signOut(go);
    expect(go).toHaveBeenCalledWith("/login");
  });
});
