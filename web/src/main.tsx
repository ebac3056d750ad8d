import { render } from "preact";
import { startBadge } from "./lib/badge";
import { loadFavourites, loadProviders, navigate, pendingCount, startEvents } from "./state/app";
import { App } from "./ui/App";
import "./styles.css";

render(<App />, document.getElementById("app")!);
startEvents();
loadProviders();
loadFavourites();
startBadge(pendingCount);

// Keyboard on phones: keep the composer above it (iOS does not resize the
// layout viewport for the keyboard; visualViewport says how much is left).
const vv = window.visualViewport;
if (vv) {
  const fit = () => {
    const st = document.documentElement.style;
    st.setProperty("--vvh", `${vv.height}px`);
    st.setProperty("--vvtop", `${vv.offsetTop}px`);
  };
  vv.addEventListener("resize", fit);
  vv.addEventListener("scroll", fit);
  fit();
}

if ("serviceWorker" in navigator && location.protocol !== "file:" && !import.meta.env.DEV) {
  navigator.serviceWorker.register("/sw.js").catch(() => {
    /* the app works without it */
  });
  // A click on a push notification focuses this tab and names the page to
  // show (a permission request's card): route there without a reload.
  navigator.serviceWorker.addEventListener("message", (e) => {
    const m = e.data;
    if (m && m.type === "svc-open" && typeof m.url === "string" && m.url.startsWith("/") && !m.url.startsWith("//")) navigate(m.url);
  });
  navigator.serviceWorker.startMessages();
}
