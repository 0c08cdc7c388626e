/**
 * Bundles the web explorer (web/src/main.tsx, Preact) with esbuild into one minified ES module plus
 * its stylesheet and index.html: `npm run build` writes dist/web, which the server serves at `/`.
 * The e2e tests call buildWeb() into a temp directory.
 *
 * The explorer talks to the server through the project's typed client (src/client), which takes
 * its types from the http layer: those imports are types only and vanish, and the build fails if
 * any module of the server side reaches the bundle.
 */
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
/** What the bundle may hold: the explorer, the client, and Preact. */
const BUNDLED = [/^web\/src\//, /^src\/client\//, /(^|\/)node_modules\/preact\//];

export async function buildWeb(outdir: string = resolve(here, "../dist/web")): Promise<{ outdir: string; files: string[] }> {
  await mkdir(outdir, { recursive: true });
  const result = await build({
    entryPoints: { app: join(here, "src/main.tsx") },
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: "linked",
    jsx: "automatic",
    jsxImportSource: "preact",
    outdir,
    metafile: true,
    logLevel: "warning",
    absWorkingDir: resolve(here, ".."),
  });
  const strays = Object.keys(result.metafile.inputs).filter((input) => !BUNDLED.some((allowed) => allowed.test(input)));
  if (strays.length > 0) throw new Error(`the web bundle pulls in modules it must not: ${strays.join(", ")}`);
  await copyFile(join(here, "style.css"), join(outdir, "app.css"));
  await copyFile(join(here, "index.html"), join(outdir, "index.html"));
  await copyFile(join(here, "favicon.svg"), join(outdir, "favicon.svg"));
  return { outdir, files: Object.keys(result.metafile.outputs) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { outdir } = await buildWeb(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`web explorer built into ${outdir}`);
}
