import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { transformWithOxc } from "vite";
import { defineConfig, type Plugin } from "vitest/config";

// The gateway a `make ui-dev` server proxies to (a running stack). Its origin
// (this dev server's) must be listed in the gateway's allowed_origins.
const target = process.env.SVC_UI_TARGET ?? "http://127.0.0.1:8765";

// serviceWorker writes dist/sw.js from src/sw.js: the app shell's file list
// and a version derived from it, so a new build installs a new cache and an
// old page never mixes with new assets. src/push/notify.ts (what a push
// notification shows; pure, no imports) is transpiled and put at its top.
function serviceWorker(): Plugin {
  return {
    name: "svc-service-worker",
    apply: "build",
    async generateBundle(_opts, bundle) {
      const all = Object.keys(bundle)
        .filter((f) => f.startsWith("assets/"))
        .sort();
      // Installed ahead: the entry chunk, what it imports statically, and
      // their CSS (what the first page needs). The panes' chunks, editor
      // languages and grammars are cached when first fetched (hundreds of
      // chunks no page needs at once).
      const shell = new Set<string>();
      const visit = (name: string) => {
        const c = bundle[name];
        if (!c || shell.has(name)) return;
        shell.add(name);
        if (c.type !== "chunk") return;
        c.imports.forEach(visit);
        (c as any).viteMetadata?.importedCss?.forEach((css: string) => shell.add(css));
      };
      for (const [name, c] of Object.entries(bundle)) if (c.type === "chunk" && c.isEntry) visit(name);
      const assets = all.filter((f) => shell.has(f)).map((f) => "/" + f);
      const version = createHash("sha256").update(all.join("\n")).digest("hex").slice(0, 12);
      const notifyTs = readFileSync(new URL("./src/push/notify.ts", import.meta.url), "utf8");
      if (/^\s*import\s/m.test(notifyTs)) throw new Error("src/push/notify.ts must not import anything: it is inlined into sw.js");
      const notify = (await transformWithOxc(notifyTs, "notify.ts", { lang: "ts" })).code.replace(/^export\s+/gm, "");
      const src = readFileSync(new URL("./src/sw.js", import.meta.url), "utf8")
        .replace("/*__PUSH_NOTIFY__*/", () => notify)
        .replace("__VERSION__", version)
        .replace("__ASSETS__", JSON.stringify(assets));
      this.emitFile({ type: "asset", fileName: "sw.js", source: src });
    },
  };
}

export default defineConfig({
  base: "/",
  publicDir: false,
  plugins: [serviceWorker()],
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: process.env.SVC_UI_OUT ?? "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 400,
  },
  server: {
    port: Number(process.env.SVC_UI_PORT ?? 5173),
    strictPort: true,
    proxy: {
      "/api": { target, changeOrigin: true, ws: true },
      "/chat": { target, changeOrigin: true, ws: true },
      "/ws": { target, changeOrigin: true, ws: true },
      "/login": { target },
      "/static": { target },
      "/instance-icons": { target },
      "/manifest.json": { target },
    },
  },
  test: {
    environment: "happy-dom",
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
  },
});
