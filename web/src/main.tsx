import { render } from "preact";
import { loadFavourites, loadProviders, startEvents } from "./state/app";
import { App } from "./ui/App";
import "./styles.css";

render(<App />, document.getElementById("app")!);
startEvents();
loadProviders();
loadFavourites();

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
}
