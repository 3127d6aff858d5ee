"""What a browser makes of a rendered report page: the DOM census and where to find the browser.

Shared by the report's rendering tests (tests/analysis/reporting) and the
committed study's (tests/analysis/seed_verdicts): a helper module, as
plot_inputs is, so that neither test folder imports the other's tests.
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser

BROWSERS = ("chromium", "chromium-browser")
BROWSER_TIMEOUT_SECONDS = 90  # a cold start of chromium on a busy 2-core machine takes a few seconds


class DomCensus(HTMLParser):
    """Counts, in a DOM serialisation, the <svg> directly inside figure[data-figure], the tables,
    their body rows, and collects the text of <caption>/<figcaption>."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.figure_svgs: list[str] = []
        self.svg_children: dict[str, int] = {}
        self.tables: list[str] = []
        self.body_rows: dict[str, int] = {}
        self.captions: list[str] = []
        self._caption: list[str] | None = None
        self.scripts = 0
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        parent = self.stack[-1] if self.stack else ("", {})
        if tag == "svg" and parent[0] == "figure" and "data-figure" in parent[1]:
            self.figure_svgs.append(str(parent[1].get("id")))
        if tag in ("path", "use", "g") and any(t == "svg" for t, _ in self.stack):
            figure = next((a.get("id") for t, a in reversed(self.stack) if t == "figure"), None)
            self.svg_children[str(figure)] = self.svg_children.get(str(figure), 0) + 1
        if tag == "table":
            self.tables.append(str(attributes.get("id")))
            self.body_rows[str(attributes.get("id"))] = 0
        if tag == "tr" and parent[0] == "tbody":
            self.body_rows[self.tables[-1]] += 1
        if tag in ("caption", "figcaption"):
            self._caption = []
        if tag == "body":
            self.body = attributes
        if tag == "script":
            self.scripts += 1
        if tag not in self.VOID:
            self.stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("caption", "figcaption") and self._caption is not None:
            self.captions.append(" ".join("".join(self._caption).split()))
            self._caption = None
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                break

    def handle_data(self, data: str) -> None:
        if self._caption is not None:
            self._caption.append(data)


def find_browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)
