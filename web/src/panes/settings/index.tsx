// The settings pane (issue 18, item 7): one section at a time, chosen in a
// navigation "Settings sections" and kept in the URL (/settings?section=...),
// so the palette and links can open a section directly.

import type { ComponentType } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { navigate, route } from "../../state/app";
import type { PaneProps } from "../../ui/Panes";
import { Catalog } from "./Catalog";
import { AppConfigForm, ProjectConfigForm } from "./Config";
import { Helpers } from "./Helpers";
import { Layout } from "./Layout";
import { Notifications } from "./Notifications";
import { Providers } from "./Providers";
import { Security } from "./Security";
import { Tasks } from "./Tasks";
import "./settings.css";

const SECTIONS: { id: string; label: string; view: ComponentType<{ visible: boolean }> }[] = [
  { id: "providers", label: "Providers", view: Providers },
  {
    id: "config",
    label: "Config",
    view: () => (
      <>
        <AppConfigForm />
        <ProjectConfigForm />
      </>
    ),
  },
  { id: "layout", label: "Tabs and presets", view: Layout },
  { id: "helpers", label: "Helpers", view: Helpers },
  { id: "notifications", label: "Notifications", view: Notifications },
  { id: "security", label: "Password and access", view: Security },
  { id: "tasks", label: "Background tasks", view: Tasks },
  { id: "catalog", label: "Catalog", view: Catalog },
];

function current(): string {
  const s = new URLSearchParams(location.search).get("section");
  return SECTIONS.some((x) => x.id === s) ? s! : "providers";
}

export default function SettingsPane({ visible }: PaneProps) {
  void route.value; // re-render when the URL (and so the section) changes
  const sec = current();
  const S = SECTIONS.find((x) => x.id === sec)!;
  const nav = useRef<HTMLElement>(null);
  // On a phone the sections are a row that scrolls: keep the open one in view.
  useEffect(() => {
    if (visible) nav.current?.querySelector("[aria-current]")?.scrollIntoView({ block: "nearest", inline: "nearest" });
  }, [sec, visible]);
  return (
    <div class="settings">
      <nav class="set-nav" aria-label="Settings sections" ref={nav}>
        {SECTIONS.map((x) => (
          <a
            key={x.id}
            href={`/settings?section=${x.id}`}
            aria-current={x.id === sec ? "page" : undefined}
            onClick={(e) => {
              e.preventDefault();
              navigate(`/settings?section=${x.id}`);
            }}
          >
            {x.label}
          </a>
        ))}
      </nav>
      <div class="set-body">
        <h2 class="set-title">{S.label}</h2>
        <S.view key={sec} visible={visible} />
      </div>
    </div>
  );
}
