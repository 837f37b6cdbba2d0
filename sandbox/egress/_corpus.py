"""Web corpora: what `replay` serves and what `record` writes.

A corpus is a folder with `corpus.json` (the `WebCorpus` below) and one file per page, at the page's
`path` relative to the folder. It is the format of a snapshot's `web/` folder: `omnidr.benchmark` uses
these models, so a recording can be frozen into a snapshot as it is, and the demo snapshot's `web/`
folder is served by `replay` as it is.

Pages are found by URL, ignoring the fragment, the case of scheme and host, and a default port. A page is
served under both `http://` and `https://`: the exact scheme is tried first, then the other one.
"""

import hashlib
import html
import json
import mimetypes
import os
import re
import shutil
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from sandbox.models import CORPUS_FILE, CorpusPage, WebCorpus

_PARTIAL_DIR = ".partial"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class CorpusError(ValueError):
    """A corpus folder the proxy cannot serve; the message says what is wrong."""


def url_key(url: str) -> str:
    """The form under which a URL is looked up: lower-case scheme and host, no default port, no fragment,
    `/` for an empty path; path and query as they are."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    port = parts.port
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _other_scheme_key(key: str) -> str | None:
    """The same URL under the other of http/https, if it uses the default port (so `http://h/p` <-> `https://h/p`)."""
    parts = urlsplit(key)
    if parts.scheme not in _DEFAULT_PORTS or parts.port is not None:
        return None
    other = "https" if parts.scheme == "http" else "http"
    return urlunsplit((other, parts.netloc, parts.path, parts.query, ""))


def _inside(folder: Path, relative: str) -> Path | None:
    """`folder/relative` if it stays inside `folder` (no `..` escape, no absolute path), else None."""
    if not relative or relative.startswith(("/", "\\")):
        return None
    path = (folder / relative).resolve()
    root = folder.resolve()
    return path if path == root or root in path.parents else None


def load_corpus(folder: Path) -> WebCorpus:
    """Read and check `folder/corpus.json`; every problem becomes one `CorpusError` line."""
    index = folder / CORPUS_FILE
    if not index.is_file():
        raise CorpusError(f"{index} does not exist; a corpus folder needs a corpus.json (see sandbox/egress/README.md)")
    try:
        return WebCorpus.model_validate_json(index.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CorpusError(f"{index}: {where}: {first['msg']}") from None


class ReplayCorpus:
    """A corpus folder, read-only, indexed by URL."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        corpus = load_corpus(folder)
        self.pages: dict[str, CorpusPage] = {}
        self.files: dict[str, Path] = {}
        for i, page in enumerate(corpus.pages):
            if urlsplit(page.url).scheme not in _DEFAULT_PORTS:
                raise CorpusError(f"{folder / CORPUS_FILE}: pages.{i}.url {page.url!r} is not an http(s) URL")
            file = _inside(folder, page.path)
            if file is None:
                raise CorpusError(f"{folder / CORPUS_FILE}: pages.{i}.path {page.path!r} leaves the corpus folder")
            if not file.is_file():
                raise CorpusError(f"{folder / CORPUS_FILE}: pages.{i}.path: file {page.path} is missing")
            key = url_key(page.url)
            if key in self.pages:
                raise CorpusError(f"{folder / CORPUS_FILE}: pages.{i}.url: duplicate URL {page.url}")
            self.pages[key] = page
            self.files[key] = file

    def __len__(self) -> int:
        return len(self.pages)

    def lookup(self, url: str) -> tuple[CorpusPage, Path] | None:
        """The page served for `url` and its file, or None if the corpus does not have it."""
        key = url_key(url)
        if key not in self.pages:
            key = _other_scheme_key(key) or key
        if key not in self.pages:
            return None
        return self.pages[key], self.files[key]


# ---- recording ------------------------------------------------------------------------------------------

_EXTENSIONS = {
    "text/html": ".html", "application/xhtml+xml": ".html", "application/pdf": ".pdf", "application/json": ".json",
    "text/plain": ".txt", "text/css": ".css", "text/javascript": ".js", "application/javascript": ".js",
    "text/xml": ".xml", "application/xml": ".xml", "application/rss+xml": ".xml", "application/atom+xml": ".xml",
    "text/csv": ".csv", "text/markdown": ".md", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
    "image/webp": ".webp", "image/svg+xml": ".svg", "video/mp4": ".mp4", "video/webm": ".webm", "audio/mpeg": ".mp3",
}  # fmt: skip
_UNSAFE = re.compile(r"[^A-Za-z0-9._~%+,=@-]")
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_MAX_SEGMENT = 120


def _extension(content_type: str) -> str:
    mime = content_type.split(";", 1)[0].strip().lower()
    return _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"


def _short_hash(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:n]


def page_path(url: str, content_type: str) -> str:
    """Where a recorded page is stored: `host[_port]/path` with unsafe characters replaced, `index` for a
    path ending in `/`, a hash of the query appended, and an extension from the content type if missing."""
    parts = urlsplit(url)
    host = _UNSAFE.sub("_", (parts.hostname or "unknown-host").lower())
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(parts.scheme):
        host += f"_{parts.port}"
    segments = (parts.path or "/").split("/")[1:]
    if not segments or segments[-1] == "":
        segments = segments[:-1] + ["index"]
    clean = []
    for seg in segments:
        seg = _UNSAFE.sub("_", seg)
        if seg in ("", ".", ".."):
            seg = "_"
        if len(seg) > _MAX_SEGMENT:
            seg = seg[:_MAX_SEGMENT - 13] + "-" + _short_hash(seg)
        clean.append(seg)
    last = clean[-1]
    if parts.query:
        last += "__q" + _short_hash(parts.query)
    ext = _extension(content_type)
    if not last.lower().endswith(ext):
        last += ext
    clean[-1] = last
    return "/".join([host, *clean])


def page_title(body_head: bytes, url: str) -> str:
    """The HTML <title> of a page if it has one, else the last segment of its URL path, else its host."""
    match = _TITLE.search(body_head)
    if match:
        title = html.unescape(match.group(1).decode("utf-8", "replace"))
        title = " ".join(title.split())
        if title:
            return title[:300]
    parts = urlsplit(url)
    segment = [s for s in parts.path.split("/") if s]
    return segment[-1] if segment else (parts.hostname or url)


class CorpusRecorder:
    """Writes answers into a corpus folder: page files first (via a temporary name), then `corpus.json`
    rewritten atomically after every page. An existing corpus in the folder is kept and added to."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.pages: dict[str, CorpusPage] = {}
        if (folder / CORPUS_FILE).exists():
            for page in load_corpus(folder).pages:
                self.pages[url_key(page.url)] = page
        self._redirects: dict[str, set[str]] = {}  # target key -> source URLs answered with a redirect to it
        self._partial = folder / _PARTIAL_DIR

    def partial_file(self) -> Path:
        """A fresh temporary file in the corpus folder (same file system, so it can be renamed into place)."""
        self._partial.mkdir(exist_ok=True)
        return self._partial / uuid.uuid4().hex

    def note_redirect(self, source_url: str, target_url: str) -> None:
        """`source_url` answered with a redirect to `target_url`: once the target is recorded, the source URL
        serves the same page in replay (so an agent asking for the old URL again finds it offline)."""
        self._redirects.setdefault(url_key(target_url), set()).add(source_url)
        if url_key(target_url) in self.pages:
            self._alias(url_key(target_url), self.pages[url_key(target_url)])
            self._write_index()

    def save(self, url: str, content_type: str, partial: Path) -> str:
        """Move a complete body into the corpus under `url`; returns the page's path in the corpus."""
        key = url_key(url)
        with partial.open("rb") as f:
            title = page_title(f.read(65536), url)
        rel = self._free_path(key, page_path(url, content_type))
        try:
            target = self.folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)
        except OSError:  # a file where a folder is needed, or the reverse: fall back to a flat name
            rel = self._free_path(key, f"{page_path(url, content_type).split('/', 1)[0]}/_/{_short_hash(key, 24)}"
                                       f"{_extension(content_type)}")
            target = self.folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)
        os.chmod(target, 0o644)
        page = CorpusPage(url=url, path=rel, content_type=content_type, title=title)
        self.pages[key] = page
        self._alias(key, page)
        self._write_index()
        return rel

    def save_bytes(self, url: str, content_type: str, body: bytes) -> str:
        partial = self.partial_file()
        partial.write_bytes(body)
        return self.save(url, content_type, partial)

    def close(self) -> None:
        """Remove leftovers of bodies that never completed."""
        if self._partial.is_dir():
            for leftover in self._partial.iterdir():
                leftover.unlink(missing_ok=True)
            self._partial.rmdir()

    def add_corpus(self, source: Path, paths: dict[str, str] | None = None) -> tuple[int, int]:
        """Copy in the pages of the corpus folder `source` that this corpus lacks; a URL already here keeps
        its page. `paths` (URL -> file) places a page where something else already names it (a snapshot's
        facts bind their sources to corpus files). Returns (added, kept). Pages that share a file (redirect
        aliases) share it here too."""
        wanted = {url_key(u): rel for u, rel in (paths or {}).items() if _inside(self.folder, rel) is not None}
        corpus = ReplayCorpus(source)  # checks it whole before anything is copied
        added = kept = 0
        copied: dict[Path, str] = {}  # source file -> its path here
        for key, page in corpus.pages.items():
            if key in self.pages:
                kept += 1
                continue
            file = corpus.files[key]
            rel = copied.get(file)
            if rel is None:
                rel = self._free_path(key, wanted.get(key, page.path))
                if (self.folder / rel).exists():  # a file no page names: do not overwrite it
                    rel = self._free_path(key, f"{rel}-{_short_hash(key, 8)}")
                partial = self.partial_file()
                shutil.copyfile(file, partial)
                target = self.folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(partial, target)
                os.chmod(target, 0o644)
                copied[file] = rel
            self.pages[key] = page.model_copy(update={"path": rel})
            added += 1
        self._write_index()
        self.close()
        return added, kept

    def _alias(self, key: str, page: CorpusPage, seen: set[str] | None = None) -> None:
        seen = seen or {key}
        for source in sorted(self._redirects.get(key, ())):
            source_key = url_key(source)
            if source_key in seen:
                continue
            seen.add(source_key)
            if source_key not in self.pages or self.pages[source_key].path == page.path:
                self.pages[source_key] = page.model_copy(update={"url": source})
            self._alias(source_key, page, seen)

    def _free_path(self, key: str, rel: str) -> str:
        """`rel`, or `rel` with a hash of the URL before its extension if another URL's page already uses it."""
        own = self.pages[key].path if key in self.pages else None
        taken = {p.path for k, p in self.pages.items() if k != key and p.path != own}
        if rel not in taken:
            return rel
        stem, dot, ext = rel.rpartition(".")
        return f"{stem}-{_short_hash(key, 8)}.{ext}" if dot else f"{rel}-{_short_hash(key, 8)}"

    def _write_index(self) -> None:
        corpus = WebCorpus(pages=sorted(self.pages.values(), key=lambda p: p.url))
        tmp = self.folder / f".{CORPUS_FILE}.tmp"
        tmp.write_text(json.dumps(corpus.model_dump(), ensure_ascii=False, indent=2) + "\n", "utf-8")
        os.chmod(tmp, 0o644)
        os.replace(tmp, self.folder / CORPUS_FILE)
