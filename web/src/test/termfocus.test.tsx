import { afterEach, describe, expect, it } from "vitest";
import { focusTakenElsewhere } from "../panes/terminal/TermView";

afterEach(() => {
  document.body.innerHTML = "";
});

describe("the terminal takes the focus", () => {
  it("unless a dialog or a visible field has it", () => {
    document.body.innerHTML = `<div id="box"><textarea id="xt"></textarea></div><div role="dialog"><input id="search"></div>`;
    const box = document.getElementById("box")!;
    expect(focusTakenElsewhere(box)).toBe(false); // nothing focused
    (document.getElementById("xt") as HTMLElement).focus();
    expect(focusTakenElsewhere(box)).toBe(false); // its own
    (document.getElementById("search") as HTMLElement).focus();
    expect(focusTakenElsewhere(box)).toBe(true); // the palette's search box
  });
});
