/**
 * Holds docs/architecture.md's import table against the code. The table has a row per layer: each folder
 * under `src/` (everything in `src/<folder>/**`, subfolders included, is that folder) and each file directly
 * in `src/` (`errors.ts`, `index.ts`, …). Its second column lists, comma-separated, the layers that layer
 * imports, each optionally followed by a note in parentheses; the note `types only` means every import of that
 * layer is `import type`/`export type`. The rows are in stack order, bottom first.
 *
 * The imports of each layer are computed from the source with the TypeScript parser (static imports and
 * re-exports, `import("…")` calls and types, module augmentations). The test fails naming the offending import (file, line,
 * specifier) when the code imports a layer its row does not list, a layer not below it, or a value where the
 * row says types only; and naming the row when it lists an import the code no longer makes, or names a
 * layer that does not exist, or a layer has no row.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = join(ROOT, "src");
const DOC = "docs/architecture.md";

interface Row {
  readonly layer: string;
  readonly imports: ReadonlyMap<string, { readonly typesOnly: boolean }>;
  readonly line: number;
}

/** The rows of the table whose header is `| layer | imports |`, in order. */
function parseTable(markdown: string): Row[] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => /^\|\s*layer\s*\|\s*imports\s*\|\s*$/.test(l));
  if (start < 0) throw new Error(`${DOC} has no table with the header "| layer | imports |"`);
  const rows: Row[] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith("|"); i++) {
    const cells = lines[i]!.split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length !== 2) throw new Error(`${DOC}:${i + 1}: a row needs two cells: ${lines[i]}`);
    const layer = cells[0]!.replace(/`/g, "");
    const imports = new Map<string, { typesOnly: boolean }>();
    if (cells[1] !== "nothing") {
      for (const entry of cells[1]!.split(/,(?![^(]*\))/)) {
        const m = /^`?([\w.-]+)`?\s*(?:\(([^)]*)\))?$/.exec(entry.trim());
        if (!m) throw new Error(`${DOC}:${i + 1}: cannot read the import "${entry.trim()}" of row ${layer}`);
        imports.set(m[1]!, { typesOnly: m[2]?.trim() === "types only" });
      }
    }
    rows.push({ layer, imports, line: i + 1 });
  }
  return rows;
}

interface Import {
  readonly from: string;
  readonly to: string;
  readonly where: string;
  readonly specifier: string;
  readonly typeOnly: boolean;
}

/** The layer a path under src/ belongs to: its first folder, or the file itself for files in src/. */
function layerOf(path: string): string {
  const parts = relative(SRC, path).split(sep);
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.js$/, ".ts");
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every import from one layer of src/ into another. */
function importsAcrossLayers(): Import[] {
  const found: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const add = (specifier: ts.Expression, typeOnly: boolean): void => {
      if (!ts.isStringLiteralLike(specifier) || !specifier.text.startsWith(".")) return;
      const target = resolve(dirname(file), specifier.text);
      if (!target.startsWith(SRC + sep)) return;
      const from = layerOf(file);
      const to = layerOf(target);
      if (from === to) return;
      const { line } = source.getLineAndCharacterOfPosition(specifier.getStart());
      found.push({ from, to, where: `${relative(ROOT, file)}:${line + 1}`, specifier: specifier.text, typeOnly });
    };
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node)) {
        const clause = node.importClause;
        const typeOnly =
          clause !== undefined &&
          (clause.isTypeOnly ||
            (clause.name === undefined &&
              clause.namedBindings !== undefined &&
              ts.isNamedImports(clause.namedBindings) &&
              clause.namedBindings.elements.length > 0 &&
              clause.namedBindings.elements.every((e) => e.isTypeOnly)));
        add(node.moduleSpecifier, typeOnly);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
        const typeOnly =
          node.isTypeOnly ||
          (node.exportClause !== undefined &&
            ts.isNamedExports(node.exportClause) &&
            node.exportClause.elements.length > 0 &&
            node.exportClause.elements.every((e) => e.isTypeOnly));
        add(node.moduleSpecifier, typeOnly);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0]) {
        add(node.arguments[0], false);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        add(node.argument.literal, true);
      } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
        add(node.name, true); // a module augmentation (declare module "…") depends on that module's types
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

/** What is wrong with the table against the code, one message per finding; empty when they agree. */
function findings(rows: Row[], imports: Import[], layers: string[]): string[] {
  const problems: string[] = [];
  const place = new Map(rows.map((r, i) => [r.layer, i]));
  for (const r of rows) {
    if (!layers.includes(r.layer)) problems.push(`${DOC}:${r.line}: row ${r.layer} names no folder or file of src/`);
    for (const name of r.imports.keys()) {
      if (!place.has(name)) problems.push(`${DOC}:${r.line}: row ${r.layer} lists ${name}, which has no row`);
      else if (place.get(name)! >= place.get(r.layer)!) {
        problems.push(`${DOC}:${r.line}: row ${r.layer} lists ${name}, which is not below it in the table`);
      } else if (!imports.some((i) => i.from === r.layer && i.to === name)) {
        problems.push(`${DOC}:${r.line}: row ${r.layer} lists ${name}, but no file of ${r.layer} imports it`);
      }
    }
  }
  for (const layer of layers) if (!place.has(layer)) problems.push(`${DOC}: src/${layer} has no row in the import table`);
  for (const i of imports) {
    const row = rows.find((r) => r.layer === i.from);
    if (!row) continue;
    const allowed = row.imports.get(i.to);
    if (!allowed) problems.push(`${i.where}: ${i.from} imports ${i.to} ("${i.specifier}"), which its row in ${DOC} does not list`);
    else if (allowed.typesOnly && !i.typeOnly) {
      problems.push(`${i.where}: ${i.from} imports a value from ${i.to} ("${i.specifier}"), where its row in ${DOC} says types only`);
    }
  }
  return problems;
}

describe(`${DOC}'s import table`, () => {
  it("is the import graph of src/, in stack order", () => {
    const rows = parseTable(readFileSync(join(ROOT, DOC), "utf8"));
    const layers = readdirSync(SRC)
      .filter((name) => statSync(join(SRC, name)).isDirectory() || /\.tsx?$/.test(name))
      .map((name) => name.replace(/\.tsx$/, ".ts"));
    expect(findings(rows, importsAcrossLayers(), layers)).toEqual([]);
  });

  it("fails naming the import the table does not allow and the row the code does not bear out", () => {
    const rows = parseTable("| layer | imports |\n|---|---|\n| `errors.ts` | nothing |\n| `kv` | errors.ts |\n| `http` | kv (types only), errors.ts |\n");
    const imports: Import[] = [
      { from: "kv", to: "errors.ts", where: "src/kv/a.ts:1", specifier: "../errors.js", typeOnly: false },
      { from: "http", to: "kv", where: "src/http/m.ts:3", specifier: "../kv/contract.js", typeOnly: false },
      { from: "errors.ts", to: "kv", where: "src/errors.ts:2", specifier: "./kv/x.js", typeOnly: true },
    ];
    expect(findings(rows, imports, ["errors.ts", "kv", "http", "cli"])).toEqual([
      `${DOC}:5: row http lists errors.ts, but no file of http imports it`,
      `${DOC}: src/cli has no row in the import table`,
      `src/http/m.ts:3: http imports a value from kv ("../kv/contract.js"), where its row in ${DOC} says types only`,
      `src/errors.ts:2: errors.ts imports kv ("./kv/x.js"), which its row in ${DOC} does not list`,
    ]);
  });
});
