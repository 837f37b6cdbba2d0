"""Web tools of the reference agent: an offline search index, page fetching through the egress proxy,
HTML and (simple) PDF to text.

Search backend. In the sandbox the only way to the web is the egress proxy; in replay mode it serves a
frozen corpus and knows no search engine. The offline backend is therefore a search *index*: a list of
{url, title} entries (the corpus's page list, handed over by the harness in OMNIDR_SEARCH_INDEX as JSON
or a path to a JSON file). A search ranks titles and URLs by word overlap with the query and returns
url + title only: no page text. To read a page the agent must fetch it, which goes through the proxy
and is logged in network.jsonl. Backend "none" disables search (the agent may still fetch URLs it
learns from the video or the instruction).
"""

import html
import json
import re
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

USER_AGENT = "omnidr-reference-agent/1"
MAX_FETCH_BYTES = 20 * 1024 * 1024


# ---- search -------------------------------------------------------------------------------------

def _terms(text: str) -> set[str]:
    """Latin words (lower case, 2+ letters or digits) and CJK character bigrams."""
    text = text.lower()
    words = set(re.findall(r"[a-z0-9][a-z0-9.-]*[a-z0-9]|[a-z0-9]", text))
    for run in re.findall(r"[\u4e00-\u9fff\u3400-\u4dbf]+", text):
        words.update(run[i:i + 2] for i in range(max(1, len(run) - 1)))
    return {w for w in words if len(w) > 1 or not w.isascii()}


def classify(entry: dict) -> str:
    """web, video, document or image, from content type and URL."""
    ctype = (entry.get("content_type") or "").lower()
    url = entry.get("url", "").lower()
    if "pdf" in ctype or url.endswith(".pdf"):
        return "document"
    if ctype.startswith("image/") or re.search(r"\.(png|jpe?g|gif|webp)$", url):
        return "image"
    if ctype.startswith("video/") or "/watch" in url or re.search(r"\.(mp4|webm|mov)$", url):
        return "video"
    return "web"


class SearchIndex:
    """A local index of {url, title[, content_type]} entries."""

    def __init__(self, entries: list[dict]):
        self.entries = [e for e in entries if isinstance(e, dict) and e.get("url")]

    @classmethod
    def from_env(cls, value: str | None) -> "SearchIndex | None":
        """OMNIDR_SEARCH_INDEX: inline JSON ({"pages": [...]} or [...]) or a path to such a file."""
        if not value:
            return None
        text = Path(value).read_text("utf-8") if not value.lstrip().startswith(("[", "{")) else value
        data = json.loads(text)
        return cls(data.get("pages", []) if isinstance(data, dict) else data)

    def search(self, query: str, kind: str | None = None, limit: int = 8) -> list[dict]:
        """Entries ranked by the summed rarity (inverse document frequency) of the query terms they share."""
        import math

        q = _terms(query)
        docs = [(e, _terms(e.get("title", "") + " " + re.sub(r"[/._?=-]+", " ", e["url"]))) for e in self.entries]
        df: dict[str, int] = {}
        for _e, terms in docs:
            for t in terms & q:
                df[t] = df.get(t, 0) + 1
        scored = []
        for order, (e, terms) in enumerate(docs):
            k = classify(e)
            if kind and kind != "any" and k != kind:
                continue
            shared = terms & q
            if shared:
                score = sum(math.log(1 + len(docs) / df[t]) for t in shared)
                scored.append((-score, order, {"url": e["url"], "title": e.get("title", ""), "kind": k}))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [s[2] for s in scored[:limit]]


# ---- the search door: a provider reached through the egress proxy ------------------------------------

_DOOR_PATHS = {  # (provider, kind) -> path and extra query parameters
    ("searxng", "web"): ("/search", {"format": "json", "categories": "general"}),
    ("searxng", "image"): ("/search", {"format": "json", "categories": "images"}),
    ("searxng", "video"): ("/search", {"format": "json", "categories": "videos"}),
    ("brave", "web"): ("/res/v1/web/search", {}),
    ("brave", "image"): ("/res/v1/images/search", {}),
    ("brave", "video"): ("/res/v1/videos/search", {}),
}


def _denied(url: str, denylist: list[str]) -> bool:
    """Whether `url` falls under a denylist entry: a host (its subdomains too; `*.host` the same) or a host
    with a path prefix (`github.com/org/repo`), as the egress proxy reads them."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, path = (parts.hostname or "").lower(), parts.path or "/"
    for entry in denylist:
        d_host, _, d_path = entry.lower().removeprefix("*.").partition("/")
        if (host == d_host or host.endswith("." + d_host)) and path.lower().startswith("/" + d_path):
            return True
    return False


def door_search(door: str, query: str, kind: str | None, denylist: Sequence[str] = (), limit: int = 8,
                timeout_s: float = 30.0) -> list[dict]:
    """Search through the door `PROVIDER@BASE_URL` (OMNIDR_SEARCH_DOOR). The request goes through the egress
    proxy like any page, which injects the provider's key and logs (or records, or replays) it. Documents
    are web results restricted to PDFs (`filetype:pdf`). Results on denylisted hosts (the benchmark's own
    release hosts) are left out. Returns [{url, title, kind}]."""
    from urllib.parse import urlencode

    provider, _, base = door.partition("@")
    want = kind if kind in ("web", "image", "video", "document") else "web"
    door_path = _DOOR_PATHS.get((provider, "web" if want == "document" else want))
    if door_path is None or not base:
        raise ValueError(f"OMNIDR_SEARCH_DOOR={door!r}: give searxng@URL or brave@URL")
    path, params = door_path
    q = query + (" filetype:pdf" if want == "document" else "")
    url = base.rstrip("/") + path + "?" + urlencode({"q": q, **params, **({"count": limit} if provider == "brave" else {})})
    page = fetch(url, timeout_s)
    if page["status"] != 200:
        raise OSError(f"the search door answered {page['status']}: {page['text'][:200]}")
    data = json.loads(page["raw"] or b"{}")
    if provider == "brave":
        items = (data.get("web") or {}).get("results") if want in ("web", "document") else data.get("results")
    else:
        items = data.get("results")
    out = []
    for item in items or []:
        link = item.get("url") or ""
        if not link or _denied(link, list(denylist)):
            continue
        out.append({"url": link, "title": item.get("title") or "", "kind": classify({"url": link}) if want == "web"
                    else want})
        if len(out) >= limit:
            break
    return out


# ---- fetch --------------------------------------------------------------------------------------

class _Text(HTMLParser):
    SKIP = {"script", "style", "noscript", "template", "svg"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "header",
             "footer", "table", "ul", "ol", "blockquote", "pre", "figcaption", "dd", "dt", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "title":
            self._in_title = True
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        if tag == "title":
            self._in_title = False
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text): visible text, one block per line, runs of spaces collapsed."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    lines = [re.sub(r"[ \t\r\f\v]+", " ", ln).strip() for ln in "".join(parser.parts).split("\n")]
    return html.unescape(parser.title.strip()), "\n".join(ln for ln in lines if ln)


_STREAM = re.compile(rb"<<(?P<dict>.*?)>>\s*stream\r?\n(?P<data>.*?)\r?\nendstream", re.DOTALL)
_PDF_STRING = re.compile(rb"\((?P<s>(?:\\.|[^\\)])*)\)\s*Tj|\[(?P<a>.*?)\]\s*TJ", re.DOTALL)


def _pdf_unescape(raw: bytes) -> str:
    out, i = bytearray(), 0
    while i < len(raw):
        c = raw[i]
        if c == 0x5C and i + 1 < len(raw):  # backslash
            n = raw[i + 1:i + 2]
            table = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}
            if n in table:
                out += table[n]
                i += 2
            elif m := re.match(rb"[0-7]{1,3}", raw[i + 1:i + 4]):  # octal (\8, \9: backslash ignored, below)
                out.append(int(m.group(0), 8) & 0xFF)
                i += 1 + len(m.group(0))
            else:
                out += n
                i += 2
        else:
            out.append(c)
            i += 1
    return out.decode("cp1252", "replace")


_TJ_PART = re.compile(rb"\((?P<s>(?:\\.|[^\\)])*)\)|(?P<n>-?\d+(?:\.\d*)?|-?\.\d+)")


def _content_lines(body: bytes) -> list[str]:
    """The strings a content stream shows with Tj and TJ, one text operator a line."""
    lines = []
    for t in _PDF_STRING.finditer(body):
        if t.group("s") is not None:
            lines.append(_pdf_unescape(t.group("s")))
        else:  # a TJ array: strings and kerning adjustments; a large gap (a quarter em or more) is a space
            text = ""
            for part in _TJ_PART.finditer(t.group("a")):
                if part.group("s") is not None:
                    text += _pdf_unescape(part.group("s"))
                elif text and not text.endswith(" ") and float(part.group("n")) <= -250:
                    text += " "
            lines.append(text)
    return lines


def pdf_to_text(data: bytes) -> str:
    """Text shown by Tj/TJ operators of (Flate or plain) content streams, one text operator a line.
    Minimal by design: enough for simple text PDFs, nothing for scans or CID fonts."""
    lines = []
    for m in _STREAM.finditer(data):
        body = m.group("data")
        if b"FlateDecode" in m.group("dict"):
            try:
                body = zlib.decompress(body)
            except zlib.error:
                continue
        lines += _content_lines(body)
    return "\n".join(ln.strip() for ln in lines if ln.strip())


_OBJ = re.compile(rb"(\d+)\s+\d+\s+obj\b")
_REF = re.compile(rb"(\d+)\s+\d+\s+R\b")
_STREAM_START = re.compile(rb">>\s*stream\r?\n")


def _pdf_decode(head: bytes, raw: bytes) -> bytes | None:
    """A stream's bytes: plain, or Flate-decoded; None for filters this reader does not know (images)."""
    filters = re.findall(rb"/(\w+Decode)\b", head)
    if not filters:
        return raw
    if filters != [b"FlateDecode"]:
        return None
    try:
        return zlib.decompressobj().decompress(raw)  # tolerant of a missing end of stream
    except zlib.error:
        return None


def _pdf_objects(data: bytes) -> dict[int, tuple[bytes, bytes | None]]:
    """Indirect objects: number -> (its text before any stream, its decoded stream or None). A later
    revision of an object wins; objects packed in object streams (PDF 1.5 and later) are unpacked."""
    objs: dict[int, tuple[bytes, bytes | None]] = {}
    marks = list(_OBJ.finditer(data))
    for i, m in enumerate(marks):
        body = data[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(data)]
        start = _STREAM_START.search(body)
        if start is None:
            objs[int(m.group(1))] = (body.split(b"endobj", 1)[0], None)
            continue
        head = body[:start.start() + 2]
        raw = body[start.end():]
        length = re.search(rb"/Length\s+(\d+)(?!\s+\d+\s+R)", head)
        if length and raw[int(length.group(1)):].lstrip().startswith(b"endstream"):
            raw = raw[:int(length.group(1))]
        else:
            raw = raw[:raw.rfind(b"endstream")].rstrip(b"\r\n")
        objs[int(m.group(1))] = (head, _pdf_decode(head, raw))
    for head, stream in list(objs.values()):
        if stream is None or not re.search(rb"/Type\s*/ObjStm\b", head):
            continue
        n, first = re.search(rb"/N\s+(\d+)", head), re.search(rb"/First\s+(\d+)", head)
        if not (n and first):
            continue
        nums = [int(x) for x in stream[:int(first.group(1))].split()]
        pairs = list(zip(nums[0::2], nums[1::2], strict=False))[:int(n.group(1))]
        for k, (num, off) in enumerate(pairs):
            end = pairs[k + 1][1] if k + 1 < len(pairs) else len(stream) - int(first.group(1))
            base = int(first.group(1))
            objs.setdefault(num, (stream[base + off:base + end], None))
    return objs


def pdf_pages(data: bytes) -> list[str] | None:
    """The text of each page, in page order (the same Tj/TJ reading as `pdf_to_text`, page by page through the
    document's page tree). None when the page tree cannot be found (a damaged or unusual file)."""
    objs = _pdf_objects(data)
    catalogs = [h for h, _s in objs.values() if re.search(rb"/Type\s*/Catalog\b", h)]
    root = re.search(rb"/Pages\s+(\d+)\s+\d+\s+R", catalogs[-1]) if catalogs else None
    if root is None:
        return None
    pages: list[int] = []
    seen: set[int] = set()

    def walk(num: int) -> None:
        if num in seen or num not in objs or len(seen) > 100_000:
            return
        seen.add(num)
        head = objs[num][0]
        if re.search(rb"/Type\s*/Pages\b", head):
            kids = re.search(rb"/Kids\s*\[(.*?)\]", head, re.DOTALL)
            for ref in _REF.finditer(kids.group(1) if kids else b""):
                walk(int(ref.group(1)))
        elif re.search(rb"/Type\s*/Page\b", head):
            pages.append(num)

    walk(int(root.group(1)))
    if not pages:
        return None
    out = []
    for num in pages:
        head = objs[num][0]
        contents = re.search(rb"/Contents\s*(\[.*?\]|\d+\s+\d+\s+R)", head, re.DOTALL)
        refs = [int(r.group(1)) for r in _REF.finditer(contents.group(1))] if contents else []
        if len(refs) == 1 and objs.get(refs[0], (b"", None))[1] is None:  # an array of streams held elsewhere
            refs = [int(r.group(1)) for r in _REF.finditer(objs.get(refs[0], (b"", None))[0])]
        lines: list[str] = []
        for ref in refs:
            stream = objs.get(ref, (b"", None))[1]
            if stream is not None:
                lines += _content_lines(stream)
        out.append("\n".join(ln.strip() for ln in lines if ln.strip()))
    return out


def fetch(url: str, timeout_s: float = 30.0) -> dict:
    """GET `url` through the environment's proxy (HTTP_PROXY/HTTPS_PROXY; the CA from SSL_CERT_FILE).
    Returns status, content type, title, text (HTML and PDF converted), and the raw bytes."""
    if not re.match(r"^https?://", url, re.I):
        raise ValueError("only http:// and https:// URLs can be fetched")
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            status, ctype, body = r.status, r.headers.get("Content-Type", ""), r.read(MAX_FETCH_BYTES)
            final_url = r.geturl()
    except urllib.error.HTTPError as exc:
        return {"url": url, "status": exc.code, "content_type": exc.headers.get("Content-Type", ""), "title": "",
                "text": exc.read(2000).decode("utf-8", "replace"), "raw": b""}
    title, text = "", ""
    low = ctype.lower()
    if "pdf" in low or body[:5] == b"%PDF-":
        text = pdf_to_text(body)
        title = text.splitlines()[0] if text else ""
    elif "html" in low or body.lstrip()[:1] == b"<":
        charset = re.search(r"charset=([\w-]+)", ctype)
        title, text = html_to_text(body.decode(charset.group(1) if charset else "utf-8", "replace"))
    elif low.startswith("text/") or "json" in low:
        text = body.decode("utf-8", "replace")
    return {"url": final_url or url, "status": status, "content_type": ctype, "title": title, "text": text, "raw": body}
