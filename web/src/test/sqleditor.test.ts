import { CompletionContext } from "@codemirror/autocomplete";
import { EditorState } from "@codemirror/state";
import { describe, expect, it } from "vitest";
import { columnSource, schemaNamespace, type SchemaTable } from "../panes/sql/Editor";

const tables: SchemaTable[] = [
  { name: "turns", kind: "table", description: "one row per turn", columns: [{ name: "id", type: "text", nullable: false }, { name: "stop_reason", type: "text", nullable: false, description: "why it ended" }] },
  { name: "turn_tools", kind: "table", columns: [{ name: "turn_id", type: "text", nullable: false }, { name: "name", type: "text", nullable: false }] },
  { name: "turn_costs", kind: "view", columns: [{ name: "turn_id", type: "text", nullable: true }] },
];

function complete(doc: string, pos = doc.length, explicit = false) {
  const state = EditorState.create({ doc });
  return columnSource(tables)(new CompletionContext(state, pos, explicit));
}

describe("SQL completion", () => {
  it("offers bare column names with their tables and type, those of the tables named first", () => {
    const r = complete("SELECT stop_r FROM turns", "SELECT stop_r".length)!;
    expect(r.from).toBe("SELECT ".length);
    const stop = r.options.find((o) => o.label === "stop_reason")!;
    expect(stop.detail).toBe("turns · text");
    expect(stop.info).toBe("why it ended");
    expect(stop.boost).toBe(1);
    expect(r.options.find((o) => o.label === "name")!.boost).toBe(-1);
    // A column of several tables is offered once, with each table.
    expect(r.options.filter((o) => o.label === "turn_id").map((o) => o.detail)).toEqual(["turn_tools, turn_costs · text"]);
  });

  it("leaves a qualified name (after a dot) to the schema's own completion", () => {
    expect(complete("SELECT turns.sto")).toBeNull();
  });

  it("describes tables and views for lang-sql's schema completion", () => {
    const ns = schemaNamespace(tables) as any;
    expect(ns.turns.self).toMatchObject({ label: "turns", detail: "table", info: "one row per turn" });
    expect(ns.turn_costs.children.map((c: any) => c.detail)).toEqual(["text"]);
    expect(ns.turns.children[0]).toMatchObject({ label: "id", detail: "text not null" });
  });
});
