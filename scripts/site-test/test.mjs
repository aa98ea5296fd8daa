// Read the rendered book the way a person would: headless Chromium opens chapter 2 (and
// the notation chapter's graph) from a local server, and we check what it shows.
//
//   node test.mjs BASE_URL SITE_DIR OUT_DIR
//
// BASE_URL is the served book (http://127.0.0.1:PORT/), SITE_DIR the rendered files
// (target/book), OUT_DIR receives screenshots. Run by scripts/test-site.sh.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [base, siteDir, outDir] = process.argv.slice(2);
if (!base || !siteDir || !outDir) {
  console.error("usage: node test.mjs BASE_URL SITE_DIR OUT_DIR");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

const failures = [];
// Figures drawn before their text was enlarged, which train TinyAgent and must be redrawn on a
// machine that reproduces the book's numbers (docs/rendering.md): exempt from the text-size
// check, which instead fails once one of them no longer needs the exemption.
const PENDING_REDRAW = [];
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? `: ${detail}` : ""}`);
  if (!ok) failures.push(what);
}

function isLocal(url) {
  const u = new URL(url);
  if (["data:", "blob:", "about:", "chrome-error:"].includes(u.protocol)) return true;
  return ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
}

// 1. The files: no page, script or stylesheet loads anything from another host.
function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? walk(p) : [p];
  });
}
const remoteTag = /<(?:script|link|img|iframe|source|audio|video|embed|object|use)\b[^>]*?\b(?:src|href|data|srcset)\s*=\s*["']?((?:https?:)?\/\/[^"'\s>]+)/gi;
const remoteCss = /(?:url\(\s*["']?|@import\s+["'])((?:https?:)?\/\/[^"')\s]+)/gi;
const staticRemote = [];
for (const file of walk(siteDir)) {
  const isHtml = file.endsWith(".html");
  if (!isHtml && !file.endsWith(".css")) continue;
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(isHtml ? remoteTag : remoteCss)) {
    const url = m[1].startsWith("//") ? `https:${m[1]}` : m[1];
    if (!isLocal(url)) staticRemote.push(`${path.relative(siteDir, file)}: ${url}`);
  }
}
check(staticRemote.length === 0, "no HTML or CSS file references a resource on another host", staticRemote.slice(0, 5).join("; "));

// 2. The browser: a fresh profile, every request recorded, anything non-local refused.
const profile = fs.mkdtempSync(path.join(os.tmpdir(), "agentrl-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  chromiumSandbox: false,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  viewport: { width: 1280, height: 900 },
  deviceScaleFactor: 1,
});
// One test, in every page, of whether a box scrolls sideways where it is too wide: overflow-x
// auto or scroll, with a scrollbar a reader can see (scrollbar-width none hides it).
await context.addInitScript(() => {
  window.arlScrolls = (box) => {
    const style = getComputedStyle(box);
    return ["auto", "scroll"].includes(style.overflowX) && style.scrollbarWidth !== "none";
  };
});
const requests = [];
context.on("request", (r) => requests.push(r.url()));
await context.route("**/*", (route) =>
  isLocal(route.request().url()) ? route.continue() : route.abort("blockedbyclient"),
);

async function open(file, width = 1280) {
  const page = await context.newPage();
  // mdBook decides at load whether the sidebar covers the page: load at the width tested.
  if (width !== 1280) await page.setViewportSize({ width, height: 844 });
  page.on("websocket", (ws) => requests.push(ws.url()));
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  const response = await page.goto(new URL(file, base).href, { waitUntil: "load" });
  await page.waitForLoadState("networkidle");
  check(response.status() === 200, `${file} is served`, `HTTP ${response.status()}`);
  return { page, errors };
}

try {
  // --- Chapter 2 -----------------------------------------------------------------------
  const { page, errors } = await open("02-rl-fundamentals.html");
  const r = await page.evaluate(() => {
    const main = document.querySelector("main");
    const box = (e) => e.getBoundingClientRect();
    const maths = [...main.querySelectorAll("math")];
    const typeset = maths.filter((m) => getComputedStyle(m).display.includes("math") && box(m).width > 0);
    // A subscript is typeset when it sits lower than its base, in a smaller font.
    const msub = main.querySelector("math msub");
    const [mb, ms] = msub ? [msub.children[0], msub.children[1]] : [];
    const subLowered = !!msub && box(ms).bottom > box(mb).bottom + 1;
    const subSmaller = !!msub && parseFloat(getComputedStyle(ms).fontSize) < parseFloat(getComputedStyle(mb).fontSize);
    const blocks = [...main.querySelectorAll('math[display="block"]')];
    // Prose outside code must show no LaTeX source left untypeset, nor MathML shown as text.
    const prose = main.cloneNode(true);
    prose.querySelectorAll("pre, code").forEach((e) => e.remove());
    const leftover = (prose.textContent.match(/\$|<\/?m[a-z]+|\\(?:gamma|pi|sum|max|mathbb|frac|theta)\b/g) || []).slice(0, 5);

    const rustCode = [...main.querySelectorAll("pre > code.language-rust")];
    const hljsSpans = main.querySelectorAll('pre > code.language-rust span[class^="hljs-"]').length;
    const codeBg = rustCode.length ? getComputedStyle(rustCode[0]).backgroundColor : "";

    const outputs = [...main.querySelectorAll(".arl-output")];
    const o = outputs[0];
    const os = o ? getComputedStyle(o) : null;
    const oLabel = o?.querySelector("p")?.textContent.trim();
    const oHasText = !!o?.querySelector("pre > code.language-text");
    const oCodeBg = o?.querySelector("pre") ? getComputedStyle(o.querySelector("pre > code")).backgroundColor : "";

    const saved = [...main.querySelectorAll(".arl-saved")];
    const savedLink = saved[0]?.querySelector(".arl-saved-label a");
    const savedBorder = saved[0] ? getComputedStyle(saved[0]).borderLeftWidth : "";
    const marker = main.innerText.includes("//@save");

    const figs = [...main.querySelectorAll("img")].filter((i) => i.src.includes("/figures/"));
    const figOk = figs.filter((i) => i.complete && i.naturalWidth > 0);
    const figCaption = figs[0]?.closest("p")?.nextElementSibling?.textContent.trim().slice(0, 60) ?? "";

    const sidebar = [...document.querySelectorAll("#sidebar a, .sidebar a")];
    const active = document.querySelector("#sidebar a.active, .sidebar a.active");
    const links = [...main.querySelectorAll("a[href]")].map((a) => a.href);
    return {
      maths: maths.length, typeset: typeset.length, subLowered, subSmaller,
      blocks: blocks.length, blockDisplay: blocks[0] ? getComputedStyle(blocks[0]).display : "",
      leftover,
      rustCode: rustCode.length, hljsSpans, codeBg,
      outputs: outputs.length, oLabel, oHasText, oBorder: os?.borderLeftWidth, oBg: os?.backgroundColor, oCodeBg,
      saved: saved.length, savedHref: savedLink?.getAttribute("href"), savedText: saved[0]?.querySelector(".arl-saved-label")?.textContent, savedBorder, marker,
      figs: figs.length, figOk: figOk.length, figWidth: figOk[0]?.naturalWidth, figShown: figOk[0] ? box(figOk[0]).width : 0, figCaption,
      sidebar: sidebar.length, active: active?.getAttribute("href"),
      links,
      sidebarLinks: [...document.querySelectorAll("#sidebar a[href], .sidebar a[href]")].map((a) => a.href),
    };
  });

  check(r.typeset > 0 && r.typeset === r.maths, "math is typeset as MathML", `${r.typeset} of ${r.maths} <math> elements laid out`);
  check(r.subLowered && r.subSmaller, "MathML subscripts are lowered and smaller than their base");
  check(r.blocks > 0 && r.blockDisplay === "block math", "display math is a block formula", `${r.blocks}, display: ${r.blockDisplay}`);
  check(r.leftover.length === 0, "no LaTeX source is left in the prose", r.leftover.join(" "));
  check(r.hljsSpans > 20, "Rust code is highlighted", `${r.hljsSpans} hljs spans in ${r.rustCode} Rust blocks`);
  check(
    r.outputs > 0 && r.oLabel === "Output:" && r.oHasText && parseFloat(r.oBorder) >= 3 && r.oBg !== "rgba(0, 0, 0, 0)" && r.oBg !== r.codeBg,
    "Output blocks are styled apart from code",
    `${r.outputs} boxes, border ${r.oBorder}, background ${r.oBg} (code ${r.codeBg})`,
  );
  check(
    r.saved > 0 && !r.marker && parseFloat(r.savedBorder) >= 3 && /^library\.html#/.test(r.savedHref ?? ""),
    "saved blocks are labelled as agentrl, without //@save",
    `${r.saved} blocks; "${r.savedText}"`,
  );
  check(r.figs > 0 && r.figOk === r.figs && r.figShown > 300, "the figure is embedded and loaded", `${r.figOk}/${r.figs}, natural width ${r.figWidth}px, shown ${Math.round(r.figShown)}px; caption "${r.figCaption}…"`);
  check(r.sidebar >= 4 && r.active?.includes("02-rl-fundamentals"), "sidebar TOC lists the chapters, this one active", `${r.sidebar} links`);
  check(errors.length === 0, "no script errors", errors.slice(0, 3).join("; "));

  // Internal links, on every page of the book: each must resolve, #anchors included. A
  // chapter not written yet is named in plain text, never linked, so a dead link fails.
  const pages = new Map();
  const fetchPage = async (key) => {
    if (!pages.has(key)) {
      const resp = await context.request.get(key);
      pages.set(key, resp.status() === 200 ? await resp.text() : null);
    }
    return pages.get(key);
  };
  const bookPages = [...new Set(r.sidebarLinks.filter(isLocal).map((h) => h.split("#")[0]))];
  const dead = [];
  let good = 0;
  for (const pageUrl of bookPages) {
    const html = await fetchPage(pageUrl);
    if (html === null) { dead.push(`${pageUrl} (listed in the sidebar)`); continue; }
    const main = html.slice(html.indexOf("<main"), html.indexOf("</main>"));
    for (const [, raw] of main.matchAll(/<a\b[^>]*\bhref="([^"]+)"/g)) {
      const u = new URL(raw.replaceAll("&amp;", "&"), pageUrl);
      if (!isLocal(u.href)) continue;
      const target = await fetchPage(u.origin + u.pathname);
      const from = pageUrl.split("/").pop();
      if (target === null) {
        dead.push(`${from} -> ${u.pathname.slice(1)}`);
      } else if (u.hash && !target.includes(`id="${decodeURIComponent(u.hash.slice(1))}"`)) {
        dead.push(`${from} -> ${u.pathname.slice(1)}${u.hash}`);
      } else {
        good += 1;
      }
    }
  }
  check(good > 0 && dead.length === 0, `internal links resolve on all ${bookPages.length} pages`,
    dead.length ? `dead: ${[...new Set(dead)].slice(0, 8).join(", ")}` : `${good} resolved`);

  // Every chapter as a reader opens it, at 1280 px and at a phone's 390 px: its figures
  // load, its math is typeset in the bundled math font with no entity or micro sign shown,
  // no code, Output or table is cut at 1280 px (and one that scrolls at 390 px scrolls), it
  // has a table of sections and named previous/next links, its callouts are told apart, and
  // no script fails. A screenshot of its top at each width goes to OUT_DIR.
  const callColors = {};
  // Full-page screenshots (every section, code, Output, math and figure) of the chapters a
  // reviewer reads first; the others get the top of the page.
  const FULL_PAGE = ["03-", "08-", "09-", "10-", "19-"];
  for (const pageUrl of bookPages.filter((u) => /\/(\d\d|[A-Z])-[^/]*\.html$/.test(u))) {
    const name = pageUrl.split("/").pop();
    const { page: chapter, errors: chapterErrors } = await open(name);
    await chapter.evaluate(() => document.fonts.ready);
    // diagrams are drawn after load by the bundled mermaid script
    await chapter.waitForFunction(() => [...document.querySelectorAll("pre.mermaid")].every((p) => p.querySelector("svg")),
      null, { timeout: 15000 }).catch(() => {});
    const c = await chapter.evaluate(() => {
      const main = document.querySelector("main");
      const imgs = [...main.querySelectorAll("img")];
      const text = main.innerText.replace(/```[\s\S]*?```/g, "");
      const prose = [...main.querySelectorAll("p, li, td")].map((e) => e.innerText).join("\n");
      const maths = [...main.querySelectorAll("math")];
      // The box that scrolls is a pre's code element (highlight.js), or a table.
      const boxes = [...main.querySelectorAll("pre > code, table")];
      const wide = boxes.filter((b) => b.scrollWidth > b.clientWidth + 1);
      // Code must fit; an Output line or a table may run on only where it scrolls with a
      // scrollbar (headless Chromium hides scrollbars, so the stylesheet's promise is checked).
      const scrolls = window.arlScrolls;
      const cut = wide.filter((b) => b.matches("code.language-rust") || !scrolls(b));
      // Display math wider than the column must scroll too.
      // (its scroller is the span around it, which Firefox needs: it does not scroll <math>)
      const mathCut = [...main.querySelectorAll('math[display="block"]')]
        .map((m) => m.closest(".arl-math-block") ?? m)
        .filter((m) => !m.classList.contains("arl-math-block") || (m.scrollWidth > m.clientWidth + 1 && !scrolls(m)));
      const kinds = {};
      for (const q of main.querySelectorAll("blockquote")) {
        const k = q.querySelector('strong[class^="arl-callout-"]')?.className;
        if (k) kinds[k] = getComputedStyle(q).borderLeftColor;
      }
      const diagrams = [...main.querySelectorAll("pre.mermaid")];
      const drawn = diagrams.filter((d) => d.querySelector("svg") && !/Syntax error|Parse error/i.test(d.textContent));
      const pager = main.querySelector(".arl-pager");
      const figures = imgs.filter((i) => i.src.includes("/figures/")).map((i) => ({
        file: decodeURIComponent(new URL(i.src).pathname.split("/").pop()),
        scale: i.getBoundingClientRect().width / Math.max(1, i.naturalWidth),
      }));
      return {
        figures,
        imgs: imgs.length,
        loaded: imgs.filter((i) => i.complete && i.naturalWidth > 0).length,
        maths: maths.length,
        rawDollars: (prose.match(/\$[^$\s][^$]*\$/g) || []).length,
        entities: maths.map((m) => m.textContent).filter((t) => /&[a-z]+;|\u00b5/.test(t)).slice(0, 3),
        mathFont: maths.length ? getComputedStyle(maths[0]).fontFamily : "",
        stix: document.fonts.check('16px "STIX Two Math"'),
        scrolling: wide.length - cut.length,
        cut: cut.map((b) => `${b.tagName.toLowerCase()} ${b.scrollWidth}>${b.clientWidth}: ${b.innerText.split("\n").find((l) => l.length > 84)?.slice(0, 40) ?? ""}`).slice(0, 3),
        mathCut: mathCut.map((m) => `display math ${m.scrollWidth}>${m.clientWidth}${m.classList.contains("arl-math-block") ? "" : " (no scrolling span)"}`).slice(0, 3),
        sections: main.querySelectorAll("h2[id]").length,
        toc: main.querySelectorAll(".arl-toc li").length,
        pager: pager ? [...pager.querySelectorAll("a")].map((a) => a.textContent) : [],
        kinds,
        text: text.length,
        diagrams: diagrams.length,
        drawn: drawn.length,
      };
    });
    check(c.loaded === c.imgs && c.rawDollars === 0 && chapterErrors.length === 0,
      `${name}: figures load, math typeset, no script errors`,
      `${c.loaded}/${c.imgs} figures, ${c.maths} formulas, ${c.rawDollars} raw $…$, ${chapterErrors.length} errors`);
    if (c.diagrams > 0) {
      check(c.drawn === c.diagrams, `${name}: its diagrams are drawn`, `${c.drawn} of ${c.diagrams}`);
    }
    check(c.entities.length === 0 && (c.maths === 0 || (c.stix && c.mathFont.includes("STIX Two Math"))),
      `${name}: math in STIX Two Math, no entity or micro sign shown as text`,
      c.entities.length ? c.entities.join(" | ") : `font ${c.mathFont}`);
    check(c.cut.length === 0 && c.mathCut.length === 0,
      `${name}: at 1280 px code fits, and a longer Output line, table or display formula scrolls with a visible scrollbar`,
      [...c.cut, ...c.mathCut].join("; ") || `${c.scrolling} box(es) scroll`);
    check((c.sections < 3 || c.toc === c.sections) && c.pager.length > 0 && c.pager.every((t) => /[A-Za-z]{3}/.test(t)),
      `${name}: a table of its ${c.sections} sections and named previous/next links`, c.pager.join(" | "));
    Object.assign(callColors, c.kinds);
    // Figure text as shown: the smallest font-size in the SVG times the scale it is drawn at.
    for (const fig of c.figures) {
      const svg = fs.readFileSync(path.join(siteDir, "figures", fig.file), "utf8");
      const sizes = [...svg.matchAll(/font-size="([0-9.]+)"/g)].map((m) => parseFloat(m[1]));
      const shown = Math.min(...sizes) * fig.scale;
      if (PENDING_REDRAW.includes(fig.file)) {
        check(shown < 12, `${fig.file} still awaits its redraw (remove it from PENDING_REDRAW once redrawn)`, `${shown.toFixed(1)} px`);
      } else {
        check(shown >= 12, `${fig.file}: its smallest text is at least 12 px as shown`, `${shown.toFixed(1)} px`);
      }
    }
    await chapter.evaluate(() => window.scrollTo(0, 0));
    const full = FULL_PAGE.some((p) => name.startsWith(p));
    await chapter.screenshot({ path: path.join(outDir, `${name.replace(".html", "")}-1280.png`), fullPage: full });
    await chapter.close();
    const { page: small } = await open(name, 390);
    const phone = await small.evaluate(() => {
      const boxes = [...document.querySelectorAll("main pre > code, main table")].filter((b) => b.scrollWidth > b.clientWidth + 1);
      const scrolls = window.arlScrolls;
      // the page itself must not scroll sideways: only its boxes may
      return { cut: boxes.filter((b) => !scrolls(b)).length, page: document.documentElement.scrollWidth - window.innerWidth };
    });
    check(phone.cut === 0 && phone.page <= 1, `${name}: at 390 px what is too wide scrolls sideways, inside its box`,
      `${phone.cut} box(es) cut without a scrollbar; the page is ${Math.max(0, phone.page)} px wider than the screen`);
    await small.screenshot({ path: path.join(outDir, `${name.replace(".html", "")}-390.png`), fullPage: full });
    await small.close();
  }
  // The reference pages are mostly tables: at both widths a table wider than its column
  // scrolls inside its box, and the page itself never scrolls sideways.
  for (const name of ["sources.html", "library.html"]) {
    for (const width of [1280, 390]) {
      const { page: ref } = await open(name, width);
      const r = await ref.evaluate(() => {
        const scrolls = window.arlScrolls;
        const boxes = [...document.querySelectorAll("main table, main pre > code")];
        const wide = boxes.filter((b) => b.scrollWidth > b.clientWidth + 1);
        return { tables: boxes.length, cut: wide.filter((b) => !scrolls(b)).length,
          page: document.documentElement.scrollWidth - window.innerWidth };
      });
      check(r.tables > 0 && r.cut === 0 && r.page <= 1, `${name} at ${width} px: wide tables scroll inside their box`,
        `${r.tables} tables, ${r.cut} cut, page ${Math.max(0, r.page)} px wider than the screen`);
      await ref.close();
    }
  }
  const colors = Object.values(callColors);
  check(colors.length === 3 && new Set(colors).size === 3, "the three callout kinds (Evidence, Pitfall, In production) look different",
    Object.entries(callColors).map(([k, v]) => `${k} ${v}`).join(", "));

  // Search, as a reader uses it: open the search bar, type, get results.
  await page.click("#search-toggle");
  // The index loads when the search bar opens; type once it is there.
  await page.waitForSelector("#search-index", { state: "attached" });
  await page.waitForLoadState("networkidle");
  await page.locator("#searchbar").pressSequentially("Bellman", { delay: 20 });
  const hits = await page
    .waitForSelector("#searchresults li", { timeout: 5000 })
    .then(() => page.locator("#searchresults li").count())
    .catch(() => 0);
  check(hits > 0, "search finds 'Bellman'", `${hits} results`);
  await page.keyboard.press("Escape");

  // Screenshots: the top of the chapter, and section 2.5 (display math, a saved block,
  // a run block, its Output and the figure).
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, "ch02-top.png") });
  const clip = await page.evaluate(() => {
    const h = [...document.querySelectorAll("main h2")];
    const i = h.findIndex((e) => e.textContent.startsWith("2.5"));
    const top = h[i].getBoundingClientRect().top + window.scrollY - 10;
    const fig = [...document.querySelectorAll("main img")].find((e) => e.src.includes("/figures/"));
    const end = fig?.closest("p")?.nextElementSibling ?? h[i + 1];
    const bottom = end.getBoundingClientRect().bottom + window.scrollY + 10;
    const main = document.querySelector("main").getBoundingClientRect();
    return { x: Math.max(0, main.left - 20), y: top, width: main.width + 40, height: bottom - top };
  });
  await page.screenshot({ path: path.join(outDir, "ch02.png"), clip, fullPage: true });
  console.log(`screenshots: ${path.join(outDir, "ch02.png")} (section 2.5), ${path.join(outDir, "ch02-top.png")}`);
  await page.close();

  // --- Chapter 0: the chapter graph is drawn offline by the bundled mermaid -------------
  const ch0 = await open("00-notation.html");
  const graph = await ch0.page
    .waitForSelector("pre.mermaid svg", { timeout: 10000 })
    .then(() =>
      ch0.page.evaluate(() => {
        const svg = document.querySelector("pre.mermaid svg");
        return { nodes: svg.querySelectorAll(".node").length, width: svg.getBoundingClientRect().width };
      }),
    )
    .catch(() => ({ nodes: 0, width: 0 }));
  check(graph.nodes >= 20 && graph.width > 300, "the chapter graph is drawn as a diagram", `${graph.nodes} nodes, ${Math.round(graph.width)}px wide`);
  check(ch0.errors.length === 0, "no script errors on the notation page", ch0.errors.slice(0, 3).join("; "));
  if (graph.nodes) {
    await ch0.page.locator("pre.mermaid").screenshot({ path: path.join(outDir, "ch00-graph.png") });
    // Fitted to the column; a click shows it at natural size.
    await ch0.page.click("pre.mermaid");
    const zoomed = await ch0.page.evaluate(() => document.querySelector("pre.mermaid svg").getBoundingClientRect().width);
    check(zoomed > graph.width * 1.5, "a click enlarges the graph", `${Math.round(graph.width)}px -> ${Math.round(zoomed)}px`);
  }
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}

const remote = [...new Set(requests.filter((u) => !isLocal(u)))];
check(remote.length === 0, "the browser requested nothing outside localhost", remote.slice(0, 5).join(", "));
console.log(`${requests.length} requests, ${requests.length - remote.length} of them to ${new URL(base).host}`);

if (failures.length) {
  console.log(`site test: ${failures.length} check(s) failed`);
  process.exit(1);
}
console.log("site test: all checks passed");
