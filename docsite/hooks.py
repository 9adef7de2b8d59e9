"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

* ``<!-- loss-params: NAME ... -->`` on a page becomes the parameter tables of those
  registered losses (:mod:`docsite.losstables`), generated from the registry at build time.
* ``<!-- claims-table -->`` becomes the claims table and the table of pending studies,
  printed by ``docs/studies/readme_table.py`` from the committed study reports (the same
  tables the README carries), with their links made relative to the page.
* A results page's link to a section of the repository's README.md points to the site page
  that now holds that section (``README_SECTIONS``), so the link survives the README's
  shortening and stays inside the site.
* A link to another repository file outside docs/ (a study config: the generated
  ``docs/studies/CLAIMS.md`` and ``CONFIRMATION.md`` and the claims table link
  ``configs/studies/*.yaml``, which work on GitHub) has no page on the site: it becomes its
  text followed by the path in code.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docsite import losstables  # noqa: E402

# README anchor -> the site page (relative to docs/) that holds that section now.
README_SECTIONS = {
    "": "index.md",
    "install": "getting-started/install.md",
    "using-a-loss": "getting-started/own-loop.md",
    "the-losses-and-the-equations-they-implement": "losses/index.md",
    "why-one-loss-beats-another-the-gradient-paradigm": "guides/gradient-anatomy.md",
    "amcl-several-heads-learned-pairwise-temperatures": "losses/amcl.md",
    "training-image-encoders-and-comparing-losses": "guides/images.md",
    "the-papers-claims-measured-contrastkit-study": "results/claims.md",
    "real-images-cifar-stl-10-image-folders-mnist-resnets-gpu-recipes": "guides/images.md",
    "sentence-embeddings-simcse-with-any-two-view-loss": "guides/sentences.md",
    "graphs-graphcl-on-tu-sets-macl-table-4-and-davis-lascon": "guides/graphs.md",
    "supervised-and-continuous-labels-supcon-and-lascon": "guides/label-aware.md",
    "fast-where-it-matters": "guides/performance.md",
    "huge-batches-memory-tiled-mode": "guides/performance.md",
    "distributed-training-with-gathered-negatives": "guides/distributed.md",
    "training-on-gpus": "guides/gpu.md",
    "reliability": "results/reliability.md",
    "fused-triton-kernels-backend": "guides/performance.md",
    "what-make-demo-runs": "development.md",
    "tests": "development.md",
    # the README's own sections since issue 41 (a few lines each, linking here)
    "a-loss-in-your-own-loop": "getting-started/own-loop.md",
    "contrastkit-train": "guides/images.md",
    "contrastkit-study": "guides/studies.md",
    "results": "results/claims.md",
    "documentation": "index.md",
}
README_LINK = re.compile(r"\]\(((?:\.\./)+)README\.md(?:#([^)\s]*))?\)")
REPOSITORY_LINK = re.compile(
    r"\[([^\]]*)\]\(((?:\.\./)*)((?:configs|benchmarks|contrastkit)/[^)\s]+)\)"
)
CLAIMS_MARKER = "<!-- claims-table -->"


def _readme_links(markdown: str, src_uri: str) -> str:
    depth = src_uri.count("/") + 1  # `../` steps from the page up to the repository root

    def point(match: re.Match[str]) -> str:
        if match.group(1).count("../") != depth:
            return match.group(0)  # some other README.md (e.g. docs/studies/README.md)
        anchor = match.group(2) or ""
        target = README_SECTIONS.get(anchor)
        if target is None:
            raise ValueError(
                f"{src_uri}: link to README.md#{anchor}, a section with no site page; "
                "add it to README_SECTIONS in docsite/hooks.py"
            )
        return "](" + posixpath.relpath(target, posixpath.dirname(src_uri) or ".") + ")"

    return README_LINK.sub(point, markdown)


def _repository_links(markdown: str, src_uri: str) -> str:
    depth = src_uri.count("/") + 1  # `../` steps from the page up to the repository root

    def plain(match: re.Match[str]) -> str:
        if match.group(2).count("../") != depth:
            return match.group(0)
        return f"{match.group(1)} (`{match.group(3)}`)"

    return REPOSITORY_LINK.sub(plain, markdown)


def _claims_tables(src_uri: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed = subprocess.run(
        [sys.executable, str(ROOT / "docs/studies/readme_table.py")],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    up = posixpath.relpath(".", posixpath.dirname(src_uri) or ".")
    printed = printed.replace("](docs/", f"]({up}/")
    # and its links to study configs, relative to the repository root as on GitHub
    printed = REPOSITORY_LINK.sub(lambda m: f"{m.group(1)} (`{m.group(3)}`)", printed)
    # The pending studies' commands name configs/; they are code, not links.
    return printed


def on_page_markdown(markdown, page, config, files):
    src_uri = page.file.src_uri
    markdown = _readme_links(markdown, src_uri)
    markdown = _repository_links(markdown, src_uri)
    if CLAIMS_MARKER in markdown:
        markdown = markdown.replace(CLAIMS_MARKER, _claims_tables(src_uri))
    if losstables.MARKER.search(markdown):
        markdown, _ = losstables.expand(markdown)
    return markdown
