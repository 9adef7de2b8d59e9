"""Look at the built site as a person would: serve it locally, open pages in headless
Chromium with every other host unreachable, save screenshots, and check the rendered DOM.

    python docsite/check_site.py --site site --out site-shots     # (`make docs-check`)

Checks, per page, on the DOM after its scripts ran: the page has its title, code is
highlighted (Pygments spans), and on the pages with math KaTeX rendered it (``.katex``
elements, no ``\\(`` left in the text) — with the network blocked, so a CDN dependency
would show as unrendered math. Exits 1 naming what failed; the PNGs are for a human.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# (file name, path on the site, what must be on it)
PAGES = [
    ("home", "", {"title": "contrastkit"}),
    ("guide", "getting-started/own-loop/", {"title": "own PyTorch loop"}),
    ("loss-macl", "losses/macl/", {"title": "MACL", "math": True}),
    ("api-ntxent", "api/losses/?focus=contrastkit.losses.NTXent", {"title": "NTXent"}),
]
# Headless Chromium's screenshot of a page scrolled to a #fragment comes out blank, so a
# page asked for with ?focus=ID is served with a script that removes the documented objects
# above that one instead of scrolling to it.
FOCUS = """<script>
(() => {
  const id = new URLSearchParams(location.search).get("focus");
  const target = id && document.getElementById(id);
  let node = target && target.closest(".doc-object");
  while (node && node.previousElementSibling) node.previousElementSibling.remove();
})();
</script>"""
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files, quietly; ``?focus=ID`` on a page adds :data:`FOCUS` to it."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if "?focus=" not in self.path:
            super().do_GET()
            return
        page = Path(self.translate_path(self.path.split("?")[0])) / "index.html"
        body = page.read_text(encoding="utf-8").replace("</body>", FOCUS + "</body>")
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    handler = functools.partial(Handler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def chromium(exe: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        # Only the local server answers: anything fetched from elsewhere fails to load.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--virtual-time-budget=8000",
        "--window-size=1280,1400",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def check_dom(dom: str, expect: dict[str, object]) -> list[str]:
    problems = []
    if str(expect["title"]).lower() not in dom.lower():
        problems.append(f"title text {expect['title']!r} not found")
    if expect.get("code", True) and not re.search(r'class="[^"]*\bhighlight\b', dom):
        problems.append("no highlighted code block")
    if expect.get("math"):
        if 'class="katex"' not in dom:
            problems.append("math not rendered (no .katex element)")
        text = re.sub(r"<[^>]+>", "", dom)
        if "\\(" in text and 'class="katex"' not in dom:
            problems.append("raw \\( \\) math left in the page")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="site", help="the built site (mkdocs build)")
    parser.add_argument("--out", default="site-shots", help="folder for the screenshots")
    args = parser.parse_args()
    site, out = Path(args.site), Path(args.out)
    if not (site / "index.html").is_file():
        print(f"check_site: {site}/index.html is missing: run `make docs` first")
        return 1
    exe = browser()
    if exe is None:
        print("check_site: no Chromium found (apt-get install chromium); nothing checked")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    server, port = serve(site)
    failures = 0
    try:
        with tempfile.TemporaryDirectory() as profile:
            for name, path, expect in PAGES:
                url = f"http://127.0.0.1:{port}/{path}"
                shot = out / f"{name}.png"
                chromium(exe, profile, f"--screenshot={shot.resolve()}", url)
                dom = chromium(exe, profile, "--dump-dom", url).stdout
                problems = check_dom(dom, expect)
                if not shot.is_file():
                    problems.append("no screenshot written")
                state = "ok" if not problems else "FAILED: " + "; ".join(problems)
                print(f"{name:12s} {url}  {shot}  {state}")
                failures += bool(problems)
    finally:
        server.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
