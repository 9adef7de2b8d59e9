// Render the math that pymdownx.arithmatex (generic mode) leaves as \( \) and \[ \],
// with the KaTeX vendored in assets/katex (no network). Material's document$ observable
// re-runs this after instant navigation; a plain load event covers the first page.
function contrastkitRenderMath(root) {
  renderMathInElement(root, {
    delimiters: [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: false,
  });
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => contrastkitRenderMath(body));
} else {
  window.addEventListener("load", () => contrastkitRenderMath(document.body));
}
