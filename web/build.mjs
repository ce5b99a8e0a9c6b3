// Builds the vendored front-end assets into app/static/vendor/ (committed, so that the
// service runs without npm): the CodeMirror bundle, KaTeX (script, CSS, woff2 fonts) and
// the two UI fonts. `./dev setup` runs `npm ci` and this script whenever a file of web/
// changed (it compares a hash of web/ with app/static/vendor/SOURCE_HASH).
//
//   cd web && npm ci && node build.mjs

import { build } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const nm = join(here, "node_modules");
const out = join(here, "..", "app", "static", "vendor");

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// 1. The editor bundle.
await build({
  entryPoints: [join(here, "src", "editor.js")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  legalComments: "none",
  outfile: join(out, "editor.js"),
  logLevel: "warning",
});

// 2. KaTeX: the script, the CSS pointing at woff2 fonts only (every browser that runs the
// editor reads woff2), the fonts and the licence.
const katex = join(nm, "katex", "dist");
mkdirSync(join(out, "katex", "fonts"), { recursive: true });
copyFileSync(join(katex, "katex.min.js"), join(out, "katex", "katex.min.js"));
const css = readFileSync(join(katex, "katex.min.css"), "utf8").replace(
  /src:url\((fonts\/[^)]+\.woff2)\) format\("woff2"\)(,url\([^)]+\) format\("[^"]+"\))*/g,
  'src:url($1) format("woff2")',
);
if (/\.woff\)|\.ttf\)/.test(css)) throw new Error("KaTeX CSS still names woff/ttf fonts");
writeFileSync(join(out, "katex", "katex.min.css"), css);
for (const f of readdirSync(join(katex, "fonts"))) {
  if (f.endsWith(".woff2")) copyFileSync(join(katex, "fonts", f), join(out, "katex", "fonts", f));
}
copyFileSync(join(nm, "katex", "LICENSE"), join(out, "katex", "LICENSE"));

// 3. Fonts: Inter and JetBrains Mono (variable, Latin and Latin Extended).
const fonts = [
  ["Inter Variable", "@fontsource-variable/inter", ["inter-latin-wght-normal", "inter-latin-ext-wght-normal"]],
  ["JetBrains Mono Variable", "@fontsource-variable/jetbrains-mono", ["jetbrains-mono-latin-wght-normal", "jetbrains-mono-latin-ext-wght-normal"]],
];
mkdirSync(join(out, "fonts"), { recursive: true });
let faces = "/* Built by web/build.mjs from @fontsource-variable packages (SIL Open Font License). */\n";
for (const [family, pkg, files] of fonts) {
  const srcCss = readFileSync(join(nm, pkg, "wght.css"), "utf8");
  for (const name of files) {
    copyFileSync(join(nm, pkg, "files", `${name}.woff2`), join(out, "fonts", `${name}.woff2`));
    const block = srcCss.split("@font-face").find((b) => b.includes(`${name}.woff2`));
    const range = /unicode-range:\s*([^;]+);/.exec(block)[1];
    faces +=
      `@font-face{font-family:'${family}';font-style:normal;font-display:swap;` +
      `font-weight:100 900;src:url(${name}.woff2) format('woff2-variations');` +
      `unicode-range:${range};}\n`;
  }
  copyFileSync(join(nm, pkg, "LICENSE"), join(out, "fonts", `LICENSE-${pkg.split("/")[1]}`));
}
writeFileSync(join(out, "fonts", "fonts.css"), faces);

console.log(`built ${out}`);
