// Builds static/dist/icons.svg, the sprite of the icons the pages use
// (views.Icon), from lucide-static's SVG files: one <symbol> per icon,
// with its id the icon's name. Run by 'make assets'.
import { readFileSync, writeFileSync } from "node:fs";

const names = [
  "activity", "bell", "boxes", "building-2", "chart-line", "check", "chevron-right",
  "circle", "circle-alert", "circle-check", "clipboard-list", "code", "copy",
  "credit-card", "download", "gauge", "globe", "house", "inbox", "key-round",
  "languages", "layers", "layout-dashboard", "list-checks", "log-out", "mail",
  "menu", "network", "panel-left", "plus", "receipt", "refresh-cw", "server",
  "settings", "shield", "terminal", "trash-2", "triangle-alert", "user", "users", "x",
];

const symbols = names.map((name) => {
  const svg = readFileSync(`node_modules/lucide-static/icons/${name}.svg`, "utf8");
  const inner = svg.replace(/<!--[\s\S]*?-->/g, "").replace(/^[\s\S]*?<svg[^>]*>/, "").replace(/<\/svg>\s*$/, "").trim();
  return `<symbol id="${name}" viewBox="0 0 24 24">${inner.replace(/\s*\n\s*/g, "")}</symbol>`;
});
writeFileSync(
  "static/dist/icons.svg",
  `<svg xmlns="http://www.w3.org/2000/svg"><!-- lucide-static, ISC licence -->${symbols.join("")}</svg>\n`,
);
