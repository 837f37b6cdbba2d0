"""Downloaded artifacts: `download get` saves any file the web serves into the agent's artifact folder
(`/output/artifacts/`, `sandbox.models.ARTIFACTS_DIR`), and `artifact read` reads a file there by its format.

OpenDS-World's evidence comes in 42 formats (paper 002, App. B.2-B.3): HTML, PDF and CSV may all hold text but
need different readers, and a long tail of archives, audio, video and images must be downloaded first (the access
type *artifact transfer*, App. B.4). The environment gives agents "access to downloaded artifacts" (App. C.1.1).

Downloads go through the egress proxy like every request of the sandbox (urllib honours HTTP(S)_PROXY; the
proxy's CA is in SSL_CERT_FILE), are streamed to disk with their SHA-256 and stop at a size cap, and each one adds
an `ArtifactRecord` line to `artifacts.jsonl`. A ZIP member is read by copying that one member into a temporary
folder under a name of our making: a member whose name climbs out of the archive (absolute or `..`) is refused,
and so is one whose declared size or compression ratio looks like a zip bomb; the copy stops at the declared size.
Standard library and ffmpeg only.
"""

import csv
import hashlib
import io
import mimetypes
import os
import re
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, urlsplit

from sandbox.models import ARTIFACT_INDEX

if TYPE_CHECKING:  # loaded where a record is read or written: other skill calls skip pydantic
    from sandbox.models import ArtifactRecord

from . import _media, _web

MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024
"""The default size cap of one download, and of one ZIP member read (OMNIDR_MAX_DOWNLOAD_BYTES overrides it)."""
MAX_ZIP_RATIO = 200
"""A ZIP member that inflates more than this many times its compressed size, beyond ZIP_RATIO_FLOOR bytes, is
refused as a likely zip bomb (ordinary text compresses 3 to 20 times)."""
ZIP_RATIO_FLOOR = 16 * 1024 * 1024
MAX_LISTED = 500
"""Members of a ZIP listed at most."""
VIDEO_VIEW_FRAMES = 4
"""Frames sampled from a downloaded video when it is read (the source video has `video sample` for more)."""
CHUNK = 1 << 16
TEXT_EXTENSIONS = {".txt", ".md", ".json", ".geojson", ".xml", ".kml", ".gpx", ".srt", ".vtt", ".log", ".yaml", ".yml",
                   ".tex", ".bib", ".rss", ".atom", ".svg", ".ini", ".cfg", ".toml"}


class ArtifactError(RuntimeError):
    """A download or a read that failed; the message says why and what to do."""


# ---- file names ---------------------------------------------------------------------------------------

def safe_name(name: str, fallback: str = "download") -> str:
    """A file name that cannot leave its folder or surprise a shell: the last path part, letters, digits, `.`,
    `-` and `_` only, no leading dot, at most 100 characters (extension kept)."""
    base = re.split(r"[\\/]", name.strip())[-1]
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._") or fallback
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem or len(ext) > 10:
        stem, ext = base, ""
    stem = stem[:100 - len(ext) - 1] if ext else stem[:100]
    return f"{stem}.{ext}" if ext else stem


def _unique(folder: Path, name: str) -> Path:
    """`name` in `folder`, or name-2, name-3, ... when taken; the file is created empty (O_EXCL) to hold the name."""
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, f".{ext}") if dot and stem else (name, "")
    for n in range(1, 10_000):
        path = folder / (f"{stem}{ext}" if n == 1 else f"{stem}-{n}{ext}")
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return path
        except FileExistsError:
            continue
    raise ArtifactError(f"no free file name for {name} in {folder}")


def _filename(headers: Message, url: str, content_type: str) -> str:
    """From Content-Disposition, else the URL's last path part; an extension from the content type when the
    name has none."""
    name = headers.get_filename() or ""
    if not name:
        path = unquote(urlsplit(url).path)
        name = PurePosixPath(path).name
    name = safe_name(name)
    if "." not in name.strip("."):
        ext = mimetypes.guess_extension(content_type) if content_type else None
        name += {".htm": ".html", ".jpe": ".jpg"}.get(ext or "", ext or "")
    return name


# ---- the index ----------------------------------------------------------------------------------------

def read_index(folder: Path) -> list["ArtifactRecord"]:
    from sandbox.models import ArtifactRecord

    path = folder / ARTIFACT_INDEX
    if not path.is_file():
        return []
    return [ArtifactRecord.model_validate_json(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _append(folder: Path, record: "ArtifactRecord") -> None:
    with open(folder / ARTIFACT_INDEX, "a", encoding="utf-8") as f:
        f.write(record.model_dump_json() + "\n")


def store(folder: Path, source: Path, url: str, content_type: str, name: str, max_bytes: int,
          via: Literal["download", "browser"] = "download", final_url: str | None = None) -> "ArtifactRecord":
    """Move a finished file (the browser's download) into the folder under a safe unique name and index it."""
    from sandbox.models import ArtifactRecord

    size = source.stat().st_size
    if size > max_bytes:
        source.unlink(missing_ok=True)
        raise ArtifactError(f"{url} is {size} bytes, above the download cap of {max_bytes} bytes")
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(source, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    dest = _unique(folder, safe_name(name))
    os.replace(source, dest)
    record = ArtifactRecord(path=str(dest), url=url, final_url=final_url if final_url != url else None,
                            content_type=content_type or _guess_type(dest), bytes=size, sha256=digest.hexdigest(),
                            at=datetime.now(UTC).isoformat(timespec="seconds"), via=via)
    _append(folder, record)
    return record


# ---- download -----------------------------------------------------------------------------------------

def download(url: str, folder: Path, max_bytes: int = MAX_DOWNLOAD_BYTES, timeout_s: float = 60.0) -> "ArtifactRecord":
    """GET `url` through the environment's proxy into `folder`: streamed to a temporary file with its SHA-256,
    stopped with an error past `max_bytes` (before reading, when the server announces a larger size), renamed to
    a safe unique name, and indexed."""
    from sandbox.models import ArtifactRecord

    if not re.match(r"^https?://", url, re.I):
        raise ArtifactError("only http:// and https:// URLs can be downloaded")
    folder.mkdir(parents=True, exist_ok=True)
    req = urllib.request.Request(url, headers={"User-Agent": _web.USER_AGENT, "Accept": "*/*"})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise ArtifactError(f"the server answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ArtifactError(f"{reason}") from None
    with resp:
        content_type = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        announced = resp.headers.get("Content-Length")
        if announced and announced.isdigit() and int(announced) > max_bytes:
            raise ArtifactError(f"the file is {int(announced)} bytes, above the download cap of {max_bytes} bytes "
                                f"(OMNIDR_MAX_DOWNLOAD_BYTES)")
        final_url = resp.geturl() or url
        fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=folder)
        tmp = Path(tmp_name)
        digest, size = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := resp.read(CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise ArtifactError(f"the file is larger than the download cap of {max_bytes} bytes "
                                            f"(OMNIDR_MAX_DOWNLOAD_BYTES); nothing was kept")
                    digest.update(chunk)
                    out.write(chunk)
        except (OSError, ArtifactError) as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, ArtifactError):
                raise
            raise ArtifactError(f"the download broke off after {size} bytes: {exc}") from None
        name = _filename(resp.headers, final_url, content_type)
    dest = _unique(folder, name)
    os.replace(tmp, dest)
    record = ArtifactRecord(path=str(dest), url=url, final_url=final_url if final_url != url else None,
                            content_type=content_type or _guess_type(dest), bytes=size, sha256=digest.hexdigest(),
                            at=datetime.now(UTC).isoformat(timespec="seconds"))
    _append(folder, record)
    return record


# ---- formats ------------------------------------------------------------------------------------------

def _guess_type(path: Path) -> str:
    head = path.open("rb").read(16) if path.is_file() else b""
    magic = [(b"%PDF-", "application/pdf"), (b"PK\x03\x04", "application/zip"), (b"\x89PNG", "image/png"),
             (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"), (b"ID3", "audio/mpeg"), (b"OggS", "audio/ogg"),
             (b"fLaC", "audio/flac"), (b"\x1aE\xdf\xa3", "video/webm")]
    for sig, ctype in magic:
        if head.startswith(sig):
            return ctype
    if head[:4] == b"RIFF":
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}.get(head[8:12], "application/octet-stream")
    if head[4:8] == b"ftyp":
        return "audio/mp4" if head[8:11] == b"M4A" else "video/mp4"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def detect_format(path: Path, content_type: str = "") -> str:
    """pdf, csv, zip, image, audio, video (audio/video told apart by ffprobe later), html, text or binary: from
    the first bytes, then the file name, then the content type the server sent."""
    sniffed = _guess_type(path)
    ext = path.suffix.lower()
    ctype = content_type.lower()
    if sniffed == "application/pdf":
        return "pdf"
    if sniffed == "application/zip":
        return "zip"
    for major in ("image", "audio", "video"):
        if sniffed.startswith(major + "/") and sniffed != "image/svg+xml":
            return major
    if ext in (".csv", ".tsv") or ctype in ("text/csv", "text/tab-separated-values"):
        return "csv"
    if ext in (".html", ".htm", ".xhtml") or "html" in ctype:
        return "html"
    if ext in TEXT_EXTENSIONS or ctype.startswith("text/") or "json" in ctype or "xml" in ctype:
        return "text"
    for major in ("audio", "video"):  # mpeg audio without ID3, MPEG-TS, ...: by name or by the server's word
        if (mimetypes.guess_type(path.name)[0] or "").startswith(major + "/") or ctype.startswith(major + "/"):
            return major
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 4:  # a multibyte character cut at the end of the sample is fine
                return "binary"
        return "html" if re.search(rb"<(!doctype html|html)\b", head[:1024], re.I) else "text"
    return "binary"


def _decode(raw: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("latin-1")


def paged(text: str, offset: int | None, max_chars: int | None, default_chars: int = 6000) -> dict:
    """A window of `text` as fetch gives one: {total_chars, offset, text}."""
    limit = max(200, min(int(max_chars or default_chars), 50_000))
    start = max(0, int(offset or 0))
    return {"total_chars": len(text), "offset": start, "text": text[start:start + limit]}


def _read_pdf(path: Path) -> tuple[dict, str]:
    data = path.read_bytes()
    pages = _web.pdf_pages(data)
    if pages is None:  # no page tree found: the document's text as one block
        return {"pages": None, "note": "the page structure could not be read; the text is not split into pages"}, \
            _web.pdf_to_text(data)
    text = "\n\n".join(f"[page {n}]\n{body}" for n, body in enumerate(pages, start=1))
    out: dict = {"pages": len(pages)}
    if not any(p.strip() for p in pages):
        out["note"] = "no text found: the PDF may be scanned images or use fonts this reader cannot decode"
    return out, text


def _read_csv(path: Path, where: str | None) -> tuple[dict, str]:
    text = _decode(path.read_bytes())
    sample = text[:20_000]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        return {"columns": [], "rows": 0}, ""
    header, body = rows[0], rows[1:]
    numbered = list(enumerate(body, start=1))
    out: dict = {"columns": header, "rows": len(body)}
    if where is not None:
        col, sep, value = where.partition("=")
        if not sep:
            raise ArtifactError(f"--where {where!r}: give COL=VALUE")
        names = [h.strip().casefold() for h in header]
        if col.strip().casefold() not in names:
            raise ArtifactError(f"--where: no column {col.strip()!r}; the columns are {', '.join(header)}")
        i = names.index(col.strip().casefold())
        numbered = [(n, r) for n, r in numbered if i < len(r) and r[i].strip().casefold() == value.strip().casefold()]
        out.update(where=f"{header[i]}={value.strip()}", matched=len(numbered))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["row", *header])
    for n, r in numbered:
        writer.writerow([n, *r])
    return out, buf.getvalue()


def _unsafe_member(name: str) -> str | None:
    """Why a ZIP member's name cannot be extracted as it stands (None: it can)."""
    parts = re.split(r"[\\/]", name)
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if ".." in parts:
        return "a path that climbs out of the archive (..)"
    return None


def _read_zip(path: Path, member: str | None, reader: Callable[[Path, str], dict], max_bytes: int) -> dict:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"not a readable ZIP archive: {exc}") from None
    with zf:
        infos = zf.infolist()
        if member is None:
            return {"members": len(infos), "total_bytes": sum(i.file_size for i in infos),
                    "listed": [_zip_entry(info) for info in infos[:MAX_LISTED]],
                    "hint": "read one member with --member NAME"}
        info = _zip_member(infos, member, max_bytes)
        with tempfile.TemporaryDirectory(prefix="omnidr-zip-") as tmp:
            dest = Path(tmp) / safe_name(info.filename, "member")
            _extract_member(zf, info, dest)
            result = reader(dest, mimetypes.guess_type(info.filename)[0] or "")
        return {"member": info.filename, "member_bytes": info.file_size, **result}


def _zip_entry(info: zipfile.ZipInfo) -> dict:
    """One member as an archive's listing shows it."""
    entry: dict = {"name": info.filename, "bytes": info.file_size, "compressed_bytes": info.compress_size}
    if info.is_dir():
        entry["folder"] = True
    if why := _unsafe_member(info.filename):
        entry["refused"] = why
    return entry


def _zip_member(infos: list[zipfile.ZipInfo], member: str, max_bytes: int) -> zipfile.ZipInfo:
    """The member named `member`, if it is a file that may be extracted (a safe name, within the size caps)."""
    info = next((i for i in infos if i.filename == member), None) or next(
        (i for i in infos if i.filename.rstrip("/") == member.strip().rstrip("/")), None)
    if info is None:
        raise ArtifactError(f"the archive has no member {member!r}; read the archive without --member to list them")
    if why := _unsafe_member(info.filename):
        raise ArtifactError(f"member {info.filename!r} is {why}: refused (path traversal)")
    if info.is_dir():
        raise ArtifactError(f"member {info.filename!r} is a folder; name a file in it")
    if info.file_size > max_bytes:
        raise ArtifactError(f"member {info.filename!r} would inflate to {info.file_size} bytes, above the cap of "
                            f"{max_bytes} bytes: refused")
    ratio = info.file_size / max(1, info.compress_size)
    if info.file_size > ZIP_RATIO_FLOOR and ratio > MAX_ZIP_RATIO:
        raise ArtifactError(f"member {info.filename!r} inflates {ratio:.0f} times ({info.compress_size} to "
                            f"{info.file_size} bytes): refused as a likely zip bomb")
    return info


def _extract_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> None:
    """Inflate one member to `dest`, stopping where it grows beyond the size its header declares."""
    written = 0
    try:
        with zf.open(info) as src, open(dest, "wb") as out:
            while chunk := src.read(CHUNK):
                written += len(chunk)
                if written > info.file_size:  # the header lied about the size
                    raise ArtifactError(f"member {info.filename!r} inflates beyond its declared "
                                        f"{info.file_size} bytes: refused as a likely zip bomb")
                out.write(chunk)
    except RuntimeError as exc:  # encrypted members
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"member {info.filename!r} cannot be read: {exc}") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ArtifactError(f"member {info.filename!r} is damaged: {exc}") from None


@dataclass(frozen=True)
class ReadLimits:
    """A workspace's settings for reading artifacts."""

    views_dir: Path | None = None
    """Where the views of media (frames, JPEG views) are written; None: a new temporary folder."""
    max_bytes: int = MAX_DOWNLOAD_BYTES
    """The most bytes a ZIP member may inflate to."""
    default_chars: int = 6000
    """The characters of text returned when the call gives no `max_chars`."""


def read_artifact(path: Path, content_type: str = "", member: str | None = None, where: str | None = None,
                  offset: int | None = None, max_chars: int | None = None, limits: ReadLimits = ReadLimits()) -> dict:
    """Read one file by its format. Text-like formats (PDF, CSV, HTML, text) are returned a window at a time
    (`offset`, `max_chars`); media get ffprobe's facts, a video also VIDEO_VIEW_FRAMES frames and an image a JPEG
    view, written under `limits.views_dir` (their `path`s are what a model is shown)."""
    views = limits.views_dir or Path(tempfile.mkdtemp(prefix="omnidr-views-"))
    max_bytes, default_chars = limits.max_bytes, limits.default_chars

    def read(file: Path, ctype: str, top: bool = False) -> dict:
        fmt = detect_format(file, ctype)
        if member is not None and fmt != "zip" and top:
            raise ArtifactError(f"--member is for ZIP archives; {file.name} is {fmt}")
        if where is not None and fmt != "csv" and not (top and fmt == "zip" and member is not None):
            raise ArtifactError(f"--where is for CSV files; {file.name if top else 'the member'} is {fmt}")
        if fmt == "zip":
            if not top:  # a ZIP inside a ZIP: its list, members are read one level at a time
                return {"format": "zip", **_read_zip(file, None, lambda p, c: {}, max_bytes)}
            return {"format": "zip", **_read_zip(file, member, lambda p, c: read(p, c), max_bytes)}
        if fmt == "pdf":
            facts, text = _read_pdf(file)
            return {"format": "pdf", **facts, **paged(text, offset, max_chars, default_chars)}
        if fmt == "csv":
            facts, text = _read_csv(file, where)
            return {"format": "csv", **facts, **paged(text, offset, max_chars, default_chars)}
        if fmt == "html":
            title, text = _web.html_to_text(_decode(file.read_bytes()))
            return {"format": "html", "title": title, **paged(text, offset, max_chars, default_chars)}
        if fmt == "text":
            return {"format": "text", **paged(_decode(file.read_bytes()), offset, max_chars, default_chars)}
        if fmt in ("image", "audio", "video"):
            return _read_media(file, fmt, views)
        return {"format": "binary", "bytes": file.stat().st_size, "content_type": ctype or _guess_type(file),
                "note": "no reader for this format: it is not text, PDF, CSV, ZIP, audio, video or an image"}

    try:
        return {"path": str(path), **read(path, content_type, top=True)}
    except _media.MediaError as exc:
        raise ArtifactError(str(exc)) from None


def _read_media(file: Path, fmt: str, views: Path) -> dict:
    probe = _media.probe_media(str(file))
    tag = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:8]
    has_video = any(s["type"] == "video" for s in probe["streams"])
    if fmt == "image" or (probe["container"] or "").endswith("_pipe") or (has_video and not probe["duration_s"]):
        video: dict = next((s for s in probe["streams"] if s["type"] in ("video", "cover")), {})
        view = _media.image_view(str(file), views / f"{safe_name(file.stem)}-{tag}.jpg")
        return {"format": "image", "width": video.get("width"), "height": video.get("height"),
                "codec": video.get("codec"), "image": {"path": str(view)}}
    if not has_video:
        return {"format": "audio", **probe}
    frames = _media.sample_frames(str(file), 0.0, float(probe["duration_s"] or 0), VIDEO_VIEW_FRAMES, views,
                                  prefix=f"{safe_name(file.stem)}-{tag}")
    return {"format": "video", **probe, "frames": frames}


def listing(folder: Path) -> dict:
    """The index of the folder, with the files still there."""
    records = [r for r in read_index(folder) if Path(r.path).is_file()]
    return {"folder": str(folder), "artifacts": [r.model_dump(include={"path", "url", "content_type", "bytes", "sha256",
                                                                       "via"}) for r in records]}
