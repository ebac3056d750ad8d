import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/preact";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Notifications } from "../panes/settings/Notifications";

// The settings section "Notifications" against a stubbed server and browser.
const devices = [{ id: "ps_1", name: "Pixel 8", endpoint_origin: "https://fcm.googleapis.com", created_at: "2026-11-27T05:00:00Z", last_success_at: null, last_error: "410 gone", user_agent: "x" }];

function server(routes: Record<string, (init?: RequestInit) => [number, unknown]>) {
  const calls: { path: string; init?: RequestInit }[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (path: string, init?: RequestInit) => {
      calls.push({ path, init });
      const key = `${init?.method ?? "GET"} ${path}`;
      const [status, body] = routes[key]?.(init) ?? [404, { error: "not_found", message: `no route ${key}` }];
      return new Response(body === undefined ? "" : JSON.stringify(body), { status });
    }),
  );
  return calls;
}

/** A browser with the Push API; Notification's permission as given. */
function pushBrowser(permission: NotificationPermission, answer: NotificationPermission = permission) {
  const sub = { endpoint: "https://push.example/abc", options: { applicationServerKey: null }, toJSON: () => ({ endpoint: "https://push.example/abc", keys: { p256dh: "p", auth: "a" } }), unsubscribe: vi.fn(async () => true) };
  const pushManager = { getSubscription: vi.fn(async () => null), subscribe: vi.fn(async () => sub) };
  const reg = { pushManager };
  vi.stubGlobal("isSecureContext", true);
  vi.stubGlobal("PushManager", function PushManager() {});
  vi.stubGlobal("Notification", { permission, requestPermission: vi.fn(async () => answer) });
  Object.defineProperty(navigator, "serviceWorker", { configurable: true, value: { ready: Promise.resolve(reg), getRegistration: async () => reg } });
  return { pushManager, sub };
}

describe("settings: Notifications", () => {
  beforeEach(() => localStorage.clear());
  afterEach(() => {
    cleanup();
    vi.unstubAllGlobals();
    delete (navigator as any).serviceWorker;
  });

  it("says a browser without the Push API cannot get notifications", async () => {
    vi.stubGlobal("isSecureContext", true);
    server({ "GET /api/push/subscriptions": () => [200, { subscriptions: [] }], "GET /api/app/config": () => [200, { config: {}, keys: [] }] });
    render(<Notifications />);
    expect(screen.getByRole("alert").textContent).toMatch(/cannot get push notifications/);
    expect(screen.queryByRole("button", { name: "Enable notifications" })).toBeNull();
    await screen.findByText("No device gets notifications yet.");
  });

  it("says notifications are blocked when the permission is denied", async () => {
    pushBrowser("denied");
    server({ "GET /api/push/subscriptions": () => [200, { subscriptions: [] }], "GET /api/app/config": () => [200, { config: {}, keys: [] }] });
    render(<Notifications />);
    expect(screen.getByRole("alert").textContent).toMatch(/blocked for this site/);
    fireEvent.click(screen.getByRole("button", { name: "Enable notifications" }));
    await waitFor(() => expect(screen.getAllByRole("alert").length).toBe(2));
  });

  it("enables this device: the server's key to subscribe, then the subscription posted under the name", async () => {
    const { pushManager } = pushBrowser("default", "granted");
    const key = "B" + "A".repeat(86);
    let listed: unknown[] = [];
    const calls = server({
      "GET /api/push/subscriptions": () => [200, { subscriptions: listed }],
      "GET /api/app/config": () => [200, { config: {}, keys: [] }],
      "GET /api/push/key": () => [200, { public_key: key }],
      "POST /api/push/subscriptions": (init) => {
        const b = JSON.parse(String(init!.body));
        listed = [{ ...devices[0], id: "ps_9", name: b.name, last_error: null }];
        return [201, { subscription: listed[0] }];
      },
    });
    render(<Notifications />);
    fireEvent.input(screen.getByRole("textbox", { name: "Device name" }), { target: { value: "My laptop" } });
    fireEvent.click(screen.getByRole("button", { name: "Enable notifications" }));
    await screen.findByText(/This device \(My laptop\) gets notifications now/);
    expect(pushManager.subscribe).toHaveBeenCalledTimes(1);
    const opts = (pushManager.subscribe.mock.calls[0] as any[])[0];
    expect(opts.userVisibleOnly).toBe(true);
    expect(opts.applicationServerKey.length).toBe(65);
    const post = calls.find((c) => c.path === "/api/push/subscriptions" && c.init?.method === "POST")!;
    expect(JSON.parse(String(post.init!.body))).toEqual({ name: "My laptop", subscription: { endpoint: "https://push.example/abc", keys: { p256dh: "p", auth: "a" } } });
  });

  it("shows the server's refusal, and the devices with their last error", async () => {
    pushBrowser("granted");
    server({
      "GET /api/push/subscriptions": () => [200, { subscriptions: devices }],
      "GET /api/app/config": () => [200, { config: { push_turn_seconds: 60 }, keys: [{ key: "push_turn_seconds", default: 60, description: "Seconds." }] }],
      "GET /api/push/key": () => [200, { public_key: "B" + "A".repeat(86) }],
      "POST /api/push/subscriptions": () => [400, { error: "bad_request", message: "endpoint: must be https" }],
    });
    render(<Notifications />);
    const item = await screen.findByRole("listitem", { name: "Pixel 8" });
    expect(item.textContent).toContain("via https://fcm.googleapis.com");
    expect(item.textContent).toContain("Last delivered: never");
    expect(item.textContent).toContain("Last error: 410 gone");
    expect(await screen.findByRole("spinbutton", { name: /Notify when a turn ran longer than/ })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Enable notifications" }));
    await screen.findByText("The server refused: endpoint: must be https");
  });

  it("says when the devices cannot be read", async () => {
    pushBrowser("granted");
    server({ "GET /api/push/subscriptions": () => [500, { error: "internal", message: "database down" }], "GET /api/app/config": () => [200, { config: {}, keys: [] }] });
    render(<Notifications />);
    await screen.findByText("The devices could not be read: database down");
  });
  it("Send a test: waits for the push service's answer, says it, and shows the device's new record at once", async () => {
    pushBrowser("granted");
    let listed: Record<string, unknown>[] = [{ ...devices[0], last_error: null }];
    let answer: (v: [number, unknown]) => void = () => undefined;
    const calls = server({
      "GET /api/push/subscriptions": () => [200, { subscriptions: listed }],
      "GET /api/app/config": () => [200, { config: {}, keys: [] }],
    });
    const fetchStub = globalThis.fetch as unknown as ReturnType<typeof vi.fn>;
    const plain = fetchStub.getMockImplementation() as (path: string, init?: RequestInit) => Promise<Response>;
    fetchStub.mockImplementation(async (path: string, init?: RequestInit) => {
      if (path !== "/api/push/test") return plain(path, init);
      calls.push({ path, init });
      const [status, body] = await new Promise<[number, unknown]>((r) => (answer = r));
      return new Response(JSON.stringify(body), { status });
    });
    render(<Notifications />);
    const item = await screen.findByRole("listitem", { name: "Pixel 8" });
    fireEvent.click(screen.getByRole("button", { name: "Send a test to Pixel 8" }));
    // While the server waits for the push service: the button says so and takes no second click.
    await waitFor(() => expect(screen.getByRole("button", { name: "Send a test to Pixel 8" }).textContent).toBe("Sending…"));
    expect((screen.getByRole("button", { name: "Send a test to Pixel 8" }) as HTMLButtonElement).disabled).toBe(true);
    expect(JSON.parse(String(calls.find((c) => c.path === "/api/push/test")!.init!.body))).toEqual({ id: "ps_1" });
    listed = [{ ...devices[0], last_success_at: new Date().toISOString(), last_error: null }];
    answer([200, { delivered: true, status: 201 }]);
    // The outcome shows under the device.
    expect((await within(item).findByRole("status")).textContent).toBe("The push service took the test: it should show on the device within seconds.");
    await waitFor(() => expect(item.textContent).not.toContain("Last delivered: never"));
    expect(screen.getByRole("button", { name: "Send a test to Pixel 8" }).textContent).toBe("Send a test");

    // Refused: the error, as an alert.
    fireEvent.click(screen.getByRole("button", { name: "Send a test to Pixel 8" }));
    await waitFor(() => expect(calls.filter((c) => c.path === "/api/push/test").length).toBe(2));
    listed = [{ ...devices[0], last_error: "the push service refused the push: 400" }];
    answer([200, { delivered: false, status: 400, error: "the push service refused the push: 400" }]);
    expect((await within(item).findByRole("alert")).textContent).toBe("The test was not delivered: the push service refused the push: 400.");
    expect(within(item).queryByRole("status")).toBeNull();
    await waitFor(() => expect(item.textContent).toContain("Last error: the push service refused the push: 400"));

    // Gone: the push service dropped it and so did the server; the list follows.
    fireEvent.click(screen.getByRole("button", { name: "Send a test to Pixel 8" }));
    await waitFor(() => expect(calls.filter((c) => c.path === "/api/push/test").length).toBe(3));
    listed = [];
    answer([200, { delivered: false, status: 410, removed: true, error: "the push service says this subscription is gone (410): it was removed" }]);
    const devicesSection = screen.getByRole("region", { name: "Devices" });
    expect((await within(devicesSection).findByRole("alert")).textContent).toMatch(/^Pixel 8 was removed: the push service says this subscription is gone \(410\)/);
    await screen.findByText("No device gets notifications yet.");
  });

  it("Send a test still being tried (202): the list is read again until the device's record changes", async () => {
    pushBrowser("granted");
    let listed = [{ ...devices[0], last_error: null as string | null }];
    const calls = server({
      "GET /api/push/subscriptions": () => [200, { subscriptions: listed }],
      "GET /api/app/config": () => [200, { config: {}, keys: [] }],
      "POST /api/push/test": () => [202, { queued: true }],
    });
    render(<Notifications />);
    const item = await screen.findByRole("listitem", { name: "Pixel 8" });
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      fireEvent.click(screen.getByRole("button", { name: "Send a test to Pixel 8" }));
      expect((await within(item).findByRole("status")).textContent).toMatch(/^The test is still being tried/);
      const reads = () => calls.filter((c) => c.path === "/api/push/subscriptions").length;
      const before = reads();
      await vi.advanceTimersByTimeAsync(2000);
      await waitFor(() => expect(reads()).toBe(before + 1));
      await vi.advanceTimersByTimeAsync(2000);
      await waitFor(() => expect(reads()).toBe(before + 2));
      listed = [{ ...devices[0], last_error: "could not reach the push service: timeout" }];
      await vi.advanceTimersByTimeAsync(2000);
      await waitFor(() => expect(item.textContent).toContain("Last error: could not reach the push service: timeout"));
      const settled = reads();
      await vi.advanceTimersByTimeAsync(10000);
      expect(reads()).toBe(settled);
    } finally {
      vi.useRealTimers();
    }
  });
});
