"""The judge cache: one JSON file per answered vote, keyed by judge, prompt version, atom,
report content and vote number; or per short-answer verdict, keyed by judge, prompt version
and the question, reference, candidate and execution status it was given. Re-scoring an
unchanged report or answer reads every decision from here."""

import hashlib
import json
import os
from pathlib import Path

from omnidr._files import write_atomic
from omnidr.benchmark import Atom

from ._models import JudgeIdentity


def report_sha256(report_dir: Path) -> str:
    """Content hash of a report folder: every file's relative path and bytes, symlinks by target."""
    root = Path(report_dir)
    h = hashlib.sha256()
    entries: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files) + sorted(d for d in dirs if (Path(folder) / d).is_symlink()):
            entries.append(Path(folder) / name)
    for path in sorted(entries, key=lambda p: p.relative_to(root).as_posix()):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"L {rel}\0{os.readlink(path)}\0".encode())
            continue
        h.update(f"F {rel}\0".encode())
        try:
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            h.update(f"unreadable:{exc.errno}".encode())
        h.update(b"\0")
    return h.hexdigest()


def vote_key(judge: JudgeIdentity, atom: Atom, report_hash: str, vote: int) -> str:
    """Cache key of one vote. The atom enters with everything the prompt uses about it."""
    payload = {
        "judge": judge.key,
        "atom": atom.model_dump(mode="json"),
        "report": report_hash,
        "vote": vote,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class JudgeCache:
    """A folder of answered votes; safe for concurrent writers (atomic renames)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text("utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict) -> None:
        write_atomic(self._path(key), json.dumps(value, ensure_ascii=False, sort_keys=True))


def answer_key(judge: JudgeIdentity, question: str, reference: str, candidate: str, execution_error: str | None) -> str:
    """Cache key of one short-answer verdict: the judge (its key carries the prompt version) and everything the
    prompt carries (App. C.4: question, reference answer, candidate answer, execution status)."""
    payload = {
        "judge": judge.key,
        "prompt_version": judge.prompt_version,
        "question": question,
        "reference": reference,
        "candidate": candidate,
        "execution_error": execution_error,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
