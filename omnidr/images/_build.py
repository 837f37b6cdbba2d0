"""Building the project's images without a registry: a debootstrapped base, everything else on top.

Tags follow contents: an image's tag is a digest of its recipe (the image folder but its
`packages.lock`, the copied `sandbox/` and package sources, the parent's tag) and of what it
installs (the exact Debian versions resolved against the archive, the wheels of its
requirements.lock). Two images with different packages never share a tag, and an unchanged
recipe over an unchanged archive finds its image by tag in well under a second.

Locks record; they do not break builds (`../shared/DESIGN.md`, Principles). A locked Debian
version the archive no longer serves gives way to the served one with a one-line warning, and
the image records what it got: the `org.omnidr.packages` label, /etc/omnidr/packages.json inside
it, and every run that uses it. `strict=True` (`omnidr images build --strict`, or
OMNIDR_STRICT_IMAGES=1 for frozen infrastructure) refuses any drift instead. Python wheels stay a
gate: PyPI keeps old versions, and pip installs them with --require-hashes.
"""

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

from omnidr._files import write_atomic
from omnidr._lock import machine_lock
from omnidr.errors import UserError

from ._archive import (
    archive_state,
    drift_between,
    drift_summary,
    format_lock,
    parse_dpkg,
    parse_lock,
    parse_madison,
    parse_simulation,
)
from ._docker import docker_client
from ._spec import (
    BuiltImage,
    ImageKind,
    ImagePackages,
    ImageSpec,
    PackageDrift,
    Resolution,
    RootfsSpec,
)

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGES_DIR = Path(os.environ.get("OMNIDR_IMAGES_DIR", REPO_ROOT / "images"))
SANDBOX_DIR = REPO_ROOT / "sandbox"
LABEL_NAME = "org.omnidr.image"
LABEL_CONTENT = "org.omnidr.content"
LABEL_RECIPE = "org.omnidr.recipe"
LABEL_PACKAGES = "org.omnidr.packages"
LABEL_RESOLVER = "org.omnidr.resolver"
PACKAGES_FILE = "/etc/omnidr/packages.json"
LOCK_FILE = "packages.lock"
STRICT_ENV = "OMNIDR_STRICT_IMAGES"
WHEEL_CACHE = Path(os.environ.get("OMNIDR_WHEEL_CACHE", Path.home() / ".cache" / "omnidr" / "wheels"))
RESOLUTION_CACHE = Path(os.environ.get("OMNIDR_IMAGE_CACHE", Path.home() / ".cache" / "omnidr" / "images"))
SKIP_PARTS = {"__pycache__", ".pytest_cache"}
_PY_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")

Progress = Callable[[str], None]
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Default warning sink: one stderr line per distinct message per process."""
    if message not in _warned:
        _warned.add(message)
        print(f"warning: {message}", file=sys.stderr, flush=True)


def strict_from_env() -> bool:
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def load_specs(images_dir: Path = IMAGES_DIR) -> dict[str, ImageSpec]:
    specs = {}
    for path in sorted(images_dir.glob("*/image.json")):
        try:
            spec = ImageSpec.model_validate_json(path.read_text("utf-8"))
        except ValueError as exc:
            raise UserError(f"{path}: invalid image spec: {str(exc).splitlines()[0]}") from None
        if spec.name != path.parent.name:
            raise UserError(f"{path}: name '{spec.name}' differs from its folder '{path.parent.name}'")
        specs[spec.name] = spec
    _check_build_order(specs, images_dir)
    return specs


def _check_build_order(specs: dict[str, ImageSpec], images_dir: Path) -> None:
    """Every image a spec builds after exists, and no image waits, through parents and `build_after`, for itself."""
    for spec in specs.values():
        for other in [spec.parent, *spec.build_after]:
            if other is not None and other not in specs:
                raise UserError(f"{images_dir / spec.name / 'image.json'}: names image '{other}', which does not exist; "
                                f"known images: {', '.join(specs)}")
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join((*path[path.index(name):], name))
            raise UserError(f"{images_dir}: the images wait for each other ({cycle}); "
                            "remove one of those names from `parent` or `build_after`")
        if name in done:
            return
        spec = specs[name]
        for other in [spec.parent, *spec.build_after]:
            if other is not None:
                visit(other, (*path, name))
        done.add(name)

    for name in specs:
        visit(name, ())


def _tree_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not SKIP_PARTS & set(p.parts) and p.suffix != ".pyc")


def _recipe(spec: ImageSpec, images_dir: Path) -> str:
    """Digest of everything the build copies but the Debian lock (a record, not an input of the tag)."""
    h = hashlib.sha256()
    folders = [images_dir / spec.name] + ([SANDBOX_DIR] if spec.copy_sandbox else [])
    folders += [REPO_ROOT / pkg for pkg in spec.copy_packages]
    for folder in folders:
        for path in _tree_files(folder):
            if folder == images_dir / spec.name and path.name == LOCK_FILE and path.parent == folder:
                continue
            h.update(f"{path.relative_to(folder.parent).as_posix()}\0".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def content_tag(name: str, recipe: str, parent_tag: str | None, installs: dict[str, str], python: dict[str, str]) -> str:
    """The tag of an image with this recipe, parent and exact package versions."""
    h = hashlib.sha256(f"recipe={recipe}\nparent={parent_tag}\n".encode())
    h.update("".join(f"deb {n}={installs[n]}\n" for n in sorted(installs)).encode())
    h.update("".join(f"py {n}=={python[n]}\n" for n in sorted(python)).encode())
    return f"omnidr/{name}:{h.hexdigest()[:16]}"


def _resolution_key(recipe: str, parent_tag: str | None, lock_text: str) -> str:
    """What a cached resolution is valid for: this recipe on this parent with this lock."""
    return hashlib.sha256(f"{recipe}\n{parent_tag}\n{lock_text}".encode()).hexdigest()[:16]


def python_lock(folder: Path) -> dict[str, str]:
    """name -> version of every pin in a folder's requirements.lock (empty without one)."""
    lock = folder / "requirements.lock"
    if not lock.is_file():
        return {}
    out = {}
    for line in lock.read_text("utf-8").splitlines():
        m = _PY_PIN.match(line)
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def _order(names: list[str], specs: dict[str, ImageSpec]) -> list[str]:
    out: list[str] = []

    def visit(n: str) -> None:
        if n not in specs:
            raise UserError(f"unknown image '{n}'; known images: {', '.join(specs)}")
        parent = specs[n].parent
        if parent:
            visit(parent)
        if n not in out:
            out.append(n)

    for n in names:
        visit(n)
    return out


def npm_reachable(timeout_s: float = 3.0) -> bool:
    import socket

    try:
        socket.create_connection(("registry.npmjs.org", 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _record(spec: ImageSpec, packages: ImagePackages) -> ImagePackages:
    """What an image records: its packages and, for a harness image, the CLI version its build checked."""
    if spec.cli is None:
        return packages
    return packages.model_copy(update={"cli": {**packages.cli, spec.cli.command: spec.cli.version}})


def packages_of(image) -> ImagePackages:
    """What a built image records about its packages (empty for an image built before the record)."""
    raw = (image.labels or {}).get(LABEL_PACKAGES)
    if not raw:
        return ImagePackages()
    return ImagePackages.model_validate_json(raw)


def label_instruction(labels: dict[str, str]) -> str:
    """One Dockerfile LABEL instruction setting every label: keys and values double-quoted, with the
    backslashes, quotes and `$` (the builder substitutes variables in LABEL) of a JSON record escaped."""
    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'

    return "LABEL " + " ".join(f"{quote(k)}={quote(v)}" for k, v in labels.items())


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{what} failed: {' | '.join(tail)}")
    return proc.stdout


def _image_lock(name: str, progress: Progress) -> AbstractContextManager[None]:
    """Building `name` on this machine: two processes that need the same image (parallel test workers,
    two evals) build it once, and the second finds it done."""
    return machine_lock(RESOLUTION_CACHE / f".{name}.lock", f"waiting for another process building {name}", progress)


class _Builder:
    """One `build_images` call: resolves and builds images parent first."""

    def __init__(self, specs: dict[str, ImageSpec], images_dir: Path, progress: Progress, warn: Progress,
                 strict: bool, relock: frozenset[str] = frozenset(), refresh: bool = False):
        self.specs, self.images_dir, self.progress, self.warn = specs, images_dir, progress, warn
        self.strict, self.relock, self.refresh = strict, relock, refresh
        self._local = threading.local()
        _ = self.client  # the engine is checked once, before any image starts
        self.results: dict[str, BuiltImage] = {}
        self.resolutions: dict[str, Resolution] = {}
        base = next((s for s in specs.values() if s.kind is ImageKind.rootfs), None)
        self.rootfs = (RootfsSpec.model_validate_json((images_dir / base.name / "rootfs.json").read_text("utf-8"))
                       if base else None)

    @property
    def client(self) -> docker.DockerClient:
        """This thread's engine client (images build in threads of their own)."""
        if getattr(self._local, "client", None) is None:
            self._local.client = docker_client(timeout_s=1800)
        return self._local.client

    # -- shared pieces ---------------------------------------------------------------------
    def _lock_path(self, name: str) -> Path:
        return self.images_dir / name / LOCK_FILE

    def _lock_label(self, name: str) -> str:
        """The lock as drift records name it: `images/<name>/packages.lock`, wherever the folder is."""
        return f"{self.images_dir.name}/{name}/{LOCK_FILE}"

    def _locked(self, name: str) -> tuple[str, dict[str, str]]:
        path = self._lock_path(name)
        text = path.read_text("utf-8") if path.is_file() else ""
        return text, parse_lock(text)

    def _cache_file(self, name: str, key: str) -> Path:
        return RESOLUTION_CACHE / f"{name}-{key}.json"

    def _reusable(self, name: str, key: str, sources: list[str], tag_of: Callable[[Resolution], str]) -> Resolution | None:
        """The last resolution of this recipe made here, if it still holds. Without `refresh` an image
        that exists is used as it is, and the archive is not asked (runs keep the images they started
        with); otherwise the resolution holds while the archive's package indices are unchanged, or,
        with a warning, while the archive cannot be reached."""
        if name in self.relock:
            return None
        try:
            res = Resolution.model_validate_json(self._cache_file(name, key).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if not self.refresh and self._existing(tag_of(res)) is not None:
            return res
        state = archive_state(sources)
        if state is None:
            self.warn(f"the Debian archive is unreachable; {name} uses its resolution of "
                      f"{res.resolved_at:%Y-%m-%d %H:%M} UTC")
            return res
        return res if res.archive == state else None

    def _save(self, res: Resolution) -> None:
        write_atomic(self._cache_file(res.image, res.key), res.model_dump_json(indent=1))

    def _own_drift(self, name: str, res: Resolution) -> list[PackageDrift]:
        lock = self._lock_label(name)
        return [d for d in res.packages.drift if d.lock == lock]

    def _check_drift(self, name: str, res: Resolution) -> None:
        """--strict refuses drift; otherwise one warning line names it."""
        drift = self._own_drift(name, res)
        if not drift:
            return
        lock = self._lock_label(name)
        if self.strict:
            raise UserError(
                f"{lock}: {len(drift)} locked version(s) not served by the Debian archive ({drift_summary(drift)}); "
                f"run `omnidr images lock {name}` to accept what it serves now, or build without --strict"
            )
        self.warn(f"{lock}: the archive moved on, {name} is built with {drift_summary(drift)}; "
                  f"`omnidr images lock {name}` records the served versions")

    def _existing(self, tag: str):
        try:
            return self.client.images.get(tag)
        except ImageNotFound:
            return None

    def _labels(self, spec: ImageSpec, tag: str, recipe: str, packages: ImagePackages) -> dict[str, str]:
        return {LABEL_NAME: spec.name, LABEL_CONTENT: tag, LABEL_RECIPE: recipe,
                LABEL_PACKAGES: _record(spec, packages).model_dump_json()}

    # -- the walk -------------------------------------------------------------------------------
    def _waits_for(self, name: str, order: list[str]) -> list[str]:
        """What must be finished before `name` starts: its parent, and the images of this walk it builds after
        (`build_after`: they install a large layer it repeats, which Docker's cache then makes once)."""
        spec = self.specs[name]
        return ([spec.parent] if spec.parent else []) + [n for n in spec.build_after if n in order]

    def build(self, names: list[str], jobs: int = 1, on_done: Callable[[BuiltImage], None] | None = None
              ) -> list[BuiltImage]:
        """Build `names` and their parents, up to `jobs` images at once: an image starts as soon as what
        it waits for is done, so independent images overlap their downloads and builds. `on_done` is told each
        image's result the moment it is done (built, cached, skipped or failed), before the walk goes on."""
        order = _order(names, self.specs)
        pending = [n for n in order if n not in self.results]
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="image-build") as pool:
            running: dict[Future[BuiltImage], str] = {}
            while pending or running:
                for name in list(pending):
                    if len(running) >= max(1, jobs):
                        break
                    if all(w in self.results for w in self._waits_for(name, order)):
                        pending.remove(name)
                        running[pool.submit(self._build_one, name)] = name
                if not running:  # load_specs refuses cycles, so this is a fault of the walk itself
                    raise RuntimeError(f"no image of {', '.join(pending)} can start: each waits for another")
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    result = self.results[running.pop(future)] = future.result()
                    if on_done is not None:
                        on_done(result)
        return [self.results[n] for n in order]

    def _build_one(self, name: str) -> BuiltImage:
        """One image, its parent already done; a failure is this image's result, never an exception."""
        spec = self.specs[name]
        started = time.monotonic()
        if spec.parent and not self.results[spec.parent].tag:
            return BuiltImage(name=name, tag="", image_id="", status="skipped",
                              reason=f"parent image '{spec.parent}' was {self.results[spec.parent].status}")
        if spec.needs_npm and not npm_reachable():
            result = BuiltImage(
                name=name, tag="", image_id="", status="skipped",
                reason="needs the npm registry, which this machine cannot reach; build it where registry.npmjs.org is reachable",
            )
            self.progress(f"skipped {name}: {result.reason}")
            return result
        try:
            with _image_lock(name, self.progress):
                return self._base(spec, started) if spec.kind is ImageKind.rootfs else self._child(spec, started)
        except (RuntimeError, DockerException, OSError) as exc:
            reason = " ".join(str(exc).split())[:400]
            log.error("image %s failed: %s", name, reason)
            self.progress(f"failed  {name}: {reason}")
            return BuiltImage(name=name, tag="", image_id="", status="failed", reason=reason,
                              seconds=round(time.monotonic() - started, 2))

    def _done(self, spec: ImageSpec, tag: str, status: str, started: float, res: Resolution) -> BuiltImage:
        image = self.client.images.get(tag)
        self.resolutions[spec.name] = res
        seconds = round(time.monotonic() - started, 2)
        self.progress(f"{status:<7} {tag}" + (f" in {seconds:.1f} s" if status == "built" else ""))
        return BuiltImage(name=spec.name, tag=tag, image_id=image.id, status=status, seconds=seconds,
                          drift=self._own_drift(spec.name, res))

    # -- the base: debootstrap's own result is its resolution ------------------------------------
    def _base(self, spec: ImageSpec, started: float) -> BuiltImage:
        assert self.rootfs is not None
        recipe = _recipe(spec, self.images_dir)
        lock_text, locked = self._locked(spec.name)
        key = _resolution_key(recipe, None, lock_text)
        source = f"deb {self.rootfs.mirror} {self.rootfs.suite} main"
        res = self._reusable(spec.name, key, [source], lambda r: content_tag(spec.name, recipe, None, r.installs, {}))
        if res is None and not self.refresh and spec.name not in self.relock:
            res = self._loaded_base(spec, recipe, key, locked)
        if res is not None:
            self._check_drift(spec.name, res)
            tag = content_tag(spec.name, recipe, None, res.installs, {})
            if self._existing(tag) is not None:
                return self._done(spec, tag, "cached", started, res)
        if os.geteuid() != 0:
            raise UserError("building the base image needs root (debootstrap); run as root or with sudo")
        if shutil.which("debootstrap") is None:
            raise UserError("debootstrap is not installed; run `make setup` (installs Debian's debootstrap)")
        work = Path(tempfile.mkdtemp(prefix="omnidr-rootfs-", dir=os.environ.get("OMNIDR_BUILD_DIR", "/var/tmp")))
        try:
            rootfs = work / "rootfs"
            self.progress(f"debootstrap {self.rootfs.suite} ({self.rootfs.variant}) from {self.rootfs.mirror}")
            cmd = ["debootstrap", f"--variant={self.rootfs.variant}"]
            if self.rootfs.include:
                cmd.append("--include=" + ",".join(self.rootfs.include))
            _run(cmd + [self.rootfs.suite, str(rootfs), self.rootfs.mirror], "debootstrap")
            versions = parse_dpkg(_run(["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package}=${Version}\\n"],
                                       "dpkg-query"))
            packages = ImagePackages(debian=versions, drift=drift_between(self._lock_label(spec.name), locked, versions))
            state = archive_state([source])
            res = Resolution(image=spec.name, key=key, installs=versions, packages=packages, archive=state or {},
                             resolved_at=datetime.now(UTC))
            self._check_drift(spec.name, res)
            tag = content_tag(spec.name, recipe, None, versions, {})
            if self._existing(tag) is not None:
                self._save(res)
                return self._done(spec, tag, "cached", started, res)
            self.progress(f"building {tag}")
            self._import_rootfs(spec, rootfs, tag, recipe, packages)
            self._save(res)
            return self._done(spec, tag, "built", started, res)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _loaded_base(self, spec: ImageSpec, recipe: str, key: str, locked: dict[str, str]) -> Resolution | None:
        """A base image of this recipe already in the engine (say, `docker load`ed from an archive, or
        built before the resolution cache was cleared) that holds exactly the locked versions: its
        record is its resolution, so no debootstrap is needed to find it."""
        for image in self.client.images.list(filters={"label": [f"{LABEL_NAME}={spec.name}", f"{LABEL_RECIPE}={recipe}"]}):
            packages = packages_of(image)
            if packages.debian and packages.debian == locked:
                res = Resolution(image=spec.name, key=key, installs=locked, packages=packages, resolved_at=datetime.now(UTC))
                self._save(res)
                return res
        return None

    def _import_rootfs(self, spec: ImageSpec, rootfs: Path, tag: str, recipe: str, packages: ImagePackages) -> None:
        assert self.rootfs is not None
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        if self.rootfs.apt_sources:
            (rootfs / "etc/apt/sources.list").write_text("\n".join(self.rootfs.apt_sources) + "\n")
        record = rootfs / PACKAGES_FILE.lstrip("/")
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(packages.model_dump_json(indent=1) + "\n")
        changes = [f"ENV {k}={v}" for k, v in self.rootfs.env.items()] + ['CMD ["/bin/bash"]']
        self.progress("importing the rootfs into Docker")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        repo, version = tag.split(":")
        raw = f"{repo}:raw-{version}"
        self.client.api.import_image_from_stream(tar.stdout, repository=repo, tag=f"raw-{version}", changes=changes)
        tar.wait()
        if tar.returncode != 0:
            raise RuntimeError("tar of the rootfs failed")
        # labels go on through a one-line build: no escaping of the JSON record in `import` changes
        try:
            self._docker_build(spec.name, f"FROM {raw}\n", {}, tag, self._labels(spec, tag, recipe, packages))
        finally:
            self.client.images.remove(raw, noprune=True)

    # -- every other image: resolve in the parent, then docker build ------------------------------
    def _child(self, spec: ImageSpec, started: float) -> BuiltImage:
        assert spec.parent is not None
        parent_tag = self.results[spec.parent].tag
        parent_packages = self.resolutions[spec.parent].packages
        recipe = _recipe(spec, self.images_dir)
        python = python_lock(self.images_dir / spec.name)
        lock_text, locked = self._locked(spec.name)
        key = _resolution_key(recipe, parent_tag, lock_text)
        res: Resolution | None
        if not spec.debian_packages:
            res = Resolution(image=spec.name, key=key, installs={}, resolved_at=datetime.now(UTC), packages=ImagePackages(
                debian=parent_packages.debian, python=python, drift=parent_packages.drift))
        else:
            sources = self.rootfs.apt_sources if self.rootfs else []
            res = self._reusable(spec.name, key, sources,
                                 lambda r: content_tag(spec.name, recipe, parent_tag, r.installs, python))
            if res is None:
                state = archive_state(sources)
                if state is None:
                    raise UserError(f"cannot reach the Debian archive ({', '.join(sources)}) to resolve the packages "
                                    f"of {spec.name}, and this machine has no earlier resolution; connect and retry")
                res = self._resolve(spec, parent_tag, parent_packages, key, locked, python, state)
                self._save(res)
        self._check_drift(spec.name, res)
        tag = content_tag(spec.name, recipe, parent_tag, res.installs, python)
        if spec.name in self.relock:  # `omnidr images lock`: the resolution is what was asked for
            self.resolutions[spec.name] = res
            return BuiltImage(name=spec.name, tag=tag, image_id="", status="resolved",
                              seconds=round(time.monotonic() - started, 2), drift=self._own_drift(spec.name, res))
        if self._existing(tag) is not None:
            return self._done(spec, tag, "cached", started, res)
        self.progress(f"building {tag}")
        self._build_dockerfile(spec, tag, recipe, parent_tag, res)
        return self._done(spec, tag, "built", started, res)

    def _resolve(self, spec: ImageSpec, parent_tag: str, parent: ImagePackages, key: str, locked: dict[str, str],
                 python: dict[str, str], state: dict[str, str]) -> Resolution:
        """Ask apt, in a throwaway container of the parent, which exact versions it would install:
        locked versions where the archive still serves them, the served ones elsewhere."""
        self.progress(f"resolving {spec.name}'s Debian packages against the archive")
        wanted = list(spec.debian_packages)
        container = self.client.containers.run(parent_tag, ["sleep", "900"], detach=True, user="0:0", entrypoint=[],
                                               labels={LABEL_RESOLVER: spec.name})
        try:
            def run(cmd: list[str]) -> tuple[int, str]:
                code, output = container.exec_run(cmd, environment={"DEBIAN_FRONTEND": "noninteractive"})
                return code, output.decode("utf-8", "replace")

            # the package indices only: the translated descriptions (Translation-en, 6 MB of the 15 MB an update
            # fetches for bookworm) are read by nothing here
            code, text = run(["apt-get", "update", "-qq", "-o", "Acquire::Languages=none"])
            if code != 0:
                raise RuntimeError(f"apt-get update failed in {parent_tag}: {' | '.join(text.strip().splitlines()[-2:])}")
            code, text = run(["dpkg-query", "-W", "-f", "${Package}=${Version}\\n"])
            present = parse_dpkg(text)
            _, text = run(["apt-cache", "madison", *sorted(set(locked) | set(wanted))])
            served = parse_madison(text)
            last_error = ""

            def simulate(pins: list[str]) -> dict[str, str] | None:
                nonlocal last_error
                code, text = run(["apt-get", "install", "-s", "-y", "--no-install-recommends", *pins])
                if code != 0:
                    last_error = " | ".join(line for line in text.strip().splitlines()[-3:])
                    return None
                return parse_simulation(text)

            def honoured(name: str) -> bool:
                return spec.name not in self.relock and locked.get(name) in served.get(name, set())

            pins = [f"{n}={locked[n]}" if honoured(n) else n for n in wanted]
            closure = simulate(pins) or simulate(wanted)
            if closure is not None:  # dependencies too stay at their locked version where it is still served
                extra = [f"{n}={locked[n]}" for n, v in closure.items()
                         if n not in wanted and n in locked and locked[n] != v and honoured(n)]
                if extra:
                    closure = simulate(pins + extra) or closure
            if closure is None:
                raise RuntimeError(f"apt cannot install {' '.join(wanted)} on {parent_tag}: {last_error}")
        finally:
            container.remove(force=True)
        debian = {**present, **closure}
        got = {n: debian[n] for n in set(locked) | set(closure) if n in debian}
        drift = list(parent.drift) + drift_between(self._lock_label(spec.name), locked, got)
        return Resolution(image=spec.name, key=key, installs=closure, archive=state, resolved_at=datetime.now(UTC),
                          packages=ImagePackages(debian=dict(sorted(debian.items())), python=python, drift=drift))

    def _docker_build(self, name: str, dockerfile: str | None, buildargs: dict[str, str], tag: str,
                      labels: dict[str, str], path: Path | None = None) -> None:
        """`docker build` of `path` (or of a context holding only `dockerfile`), its labels set by one LABEL
        instruction appended to the Dockerfile: the engine's classic builder commits every instruction as a
        step (the `labels` option would add one per label), and on a big image each commit costs seconds."""
        work = Path(tempfile.mkdtemp(prefix=f"omnidr-label-{name}-"))
        if path is None:
            (work / "Dockerfile").write_text(dockerfile or "")
            path = work
        with (path / "Dockerfile").open("a") as f:
            f.write("\n" + label_instruction(labels) + "\n")
        try:
            for chunk in self.client.api.build(path=str(path), tag=tag, buildargs=buildargs, rm=True, forcerm=True,
                                               decode=True):
                if "error" in chunk:
                    raise BuildError(chunk["error"].strip(), [])
                line = chunk.get("stream", "").strip()
                if line.startswith("Step "):
                    self.progress(f"  {name}: {line[:160]}")
        except (BuildError, APIError) as exc:
            raise RuntimeError(f"docker build of {name} failed: {exc}") from None
        finally:
            shutil.rmtree(work, ignore_errors=True)
        got = self.client.images.get(tag).labels or {}
        if any(got.get(k) != v for k, v in labels.items()):
            self.client.images.remove(tag, force=True)
            raise RuntimeError(f"docker build of {name}: the image's labels differ from the ones written")

    def _build_dockerfile(self, spec: ImageSpec, tag: str, recipe: str, parent_tag: str, res: Resolution) -> None:
        work = Path(tempfile.mkdtemp(prefix=f"omnidr-build-{spec.name}-"))
        try:
            ctx = work / "context"
            shutil.copytree(self.images_dir / spec.name, ctx, ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
            if spec.copy_sandbox:
                shutil.copytree(SANDBOX_DIR, ctx / "sandbox", ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
            for pkg in spec.copy_packages:
                if not (REPO_ROOT / pkg / "__init__.py").is_file():
                    raise UserError(f"images/{spec.name}/image.json: copy_packages names '{pkg}', which is not a package of this repo")
                shutil.copytree(REPO_ROOT / pkg, ctx / pkg, ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
            if (ctx / "requirements.lock").exists():
                _wheelhouse(self.images_dir / spec.name / "requirements.lock", ctx / "wheels", self.progress)
            else:
                (ctx / "wheels").mkdir()
            (ctx / "omnidr-packages.json").write_text(_record(spec, res.packages).model_dump_json(indent=1) + "\n")
            with (ctx / "Dockerfile").open("a") as f:  # the record goes in last: one small layer
                f.write(f"\nCOPY omnidr-packages.json {PACKAGES_FILE}\n")
            buildargs = {"BASE_IMAGE": parent_tag}
            if spec.cli is not None:
                buildargs["CLI_VERSION"] = spec.cli.version
            if spec.debian_packages:
                buildargs["DEBIAN_PACKAGES"] = " ".join(f"{n}={v}" for n, v in sorted(res.installs.items()))
            self._docker_build(spec.name, None, buildargs, tag, self._labels(spec, tag, recipe, res.packages), ctx)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self._verify(spec.name, tag, res.packages.debian)

    def _verify(self, name: str, tag: str, expected: dict[str, str]) -> None:
        """The image holds exactly the Debian versions it records; otherwise it is removed."""
        out = self.client.containers.run(tag, ["-W", "-f", "${Package}=${Version}\\n"], entrypoint=["dpkg-query"],
                                         remove=True, network_mode="none", user="0:0")
        installed = parse_dpkg(out.decode("utf-8", "replace"))
        if installed != expected:
            diff = drift_between("record", expected, installed)
            self.client.images.remove(tag, force=True)
            raise RuntimeError(f"{name}: the image holds other Debian packages than resolved "
                               f"({drift_summary(diff)}); does its Dockerfile install more than DEBIAN_PACKAGES?")


def build_images(
    names: list[str] | None = None,
    images_dir: Path = IMAGES_DIR,
    progress: Progress = lambda _m: None,
    strict: bool | None = None,
    warn: Progress = _warn_once,
    refresh: bool = False,
    jobs: int = 1,
    on_done: Callable[[BuiltImage], None] | None = None,
) -> list[BuiltImage]:
    """Build (or reuse) the named images and their parents; all images when `names` is None; up to
    `jobs` images at once (an image starts when its parent is done). Results come parents first, and each
    one goes to `on_done` as soon as that image is done (`record_results` writes them to a folder).

    Without `refresh`, an image resolved and built here before is reused without asking the archive
    (what `omnidr eval` and the other stages want: a run keeps its images). With it (`omnidr images
    build`), the archive is asked whether its package indices changed, and a changed resolution
    builds a new image.

    An image that fails is recorded as `failed` with its reason and the others go on (its children
    are `skipped`). Drift from a lock is a warning, or with `strict` (default: OMNIDR_STRICT_IMAGES)
    a UserError before that image is built."""
    specs = load_specs(images_dir)
    builder = _Builder(specs, images_dir, progress, warn, strict_from_env() if strict is None else strict,
                       refresh=refresh)
    return builder.build(names or list(specs), jobs=jobs, on_done=on_done)


def record_results(folder: Path) -> Callable[[BuiltImage], None]:
    """An `on_done` for `build_images` that writes each image's result, the moment it is done, to
    `folder/<name>.json` (the BuiltImage, whole, by a rename): another process can start the work that needs
    an image as soon as its file is there, without waiting for the rest of the build (`make test` does)."""
    folder.mkdir(parents=True, exist_ok=True)

    def record(result: BuiltImage) -> None:
        write_atomic(folder / f"{result.name}.json", result.model_dump_json(indent=1) + "\n")

    return record


def lock_images(names: list[str] | None = None, images_dir: Path = IMAGES_DIR,
                progress: Progress = lambda _m: None) -> dict[str, list[PackageDrift]]:
    """Rewrite the Debian locks of the named images (default: every image that has one or installs
    Debian packages) from what the archive serves now; returns image -> what changed."""
    from ._archive import forget_archive_state

    specs = load_specs(images_dir)
    wanted = names or [n for n, s in specs.items() if s.kind is ImageKind.rootfs or s.debian_packages]
    for n in wanted:
        if n not in specs:
            raise UserError(f"unknown image '{n}'; known images: {', '.join(specs)}")
        if specs[n].kind is not ImageKind.rootfs and not specs[n].debian_packages:
            raise UserError(f"image '{n}' installs no Debian packages, so it has no packages.lock")
    forget_archive_state()
    builder = _Builder(specs, images_dir, progress, lambda _m: None, strict=False, relock=frozenset(wanted))
    changes: dict[str, list[PackageDrift]] = {}
    builder.build(wanted)
    for name in wanted:
        result = builder.results[name]
        if not result.tag:
            raise UserError(f"cannot resolve {name}: {result.reason}")
        res = builder.resolutions[name]
        path = builder._lock_path(name)
        _, before = builder._locked(name)
        after = res.installs
        changes[name] = drift_between(builder._lock_label(name), before, after)
        if before != after or not path.is_file():
            write_atomic(path, format_lock(after))
    return changes


def _wheelhouse(lock: Path, dest: Path, progress: Progress) -> None:
    """Download the locked wheels on the host (which trusts this network's TLS), then copy them
    into the build context, so image builds install offline with --require-hashes. One download into
    the shared wheel cache at a time: two images may lock the same wheel."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    progress(f"downloading wheels for {lock.parent.name}/{lock.name}")
    pip = [os.environ.get("OMNIDR_PIP", str(Path(sys.executable).with_name("pip")))]
    with machine_lock(WHEEL_CACHE / ".download.lock", "waiting for another wheel download", progress):
        _run(pip + ["download", "-q", "--disable-pip-version-check", "--require-hashes", "--no-deps",
                    "--only-binary=:all:", "-r", str(lock), "-d", str(WHEEL_CACHE)], "pip download")
    dest.mkdir()

    def norm(name: str) -> str:  # PEP 503: runs of -, _ and . are equivalent
        return re.sub(r"[-_.]+", "_", name).lower()

    wanted = {norm(n) for n in python_lock(lock.parent)}
    for wheel in WHEEL_CACHE.glob("*.whl"):
        if norm(wheel.name.split("-")[0]) in wanted:
            shutil.copy2(wheel, dest / wheel.name)


def _cached_tags(specs: dict[str, ImageSpec], images_dir: Path) -> dict[str, str | None]:
    """Each image's tag from this machine's last resolutions, without asking the archive or Docker
    to resolve anything (None where it was never resolved here)."""
    tags: dict[str, str | None] = {}
    for name in _order(list(specs), specs):
        spec = specs[name]
        recipe = _recipe(spec, images_dir)
        parent_tag = tags.get(spec.parent) if spec.parent else None
        if spec.parent and parent_tag is None:
            tags[name] = None
            continue
        lock_path = images_dir / name / LOCK_FILE
        lock_text = lock_path.read_text("utf-8") if lock_path.is_file() else ""
        key = _resolution_key(recipe, parent_tag, lock_text)
        python = python_lock(images_dir / name)
        if spec.kind is not ImageKind.rootfs and not spec.debian_packages:
            tags[name] = content_tag(name, recipe, parent_tag, {}, python)
            continue
        try:
            res = Resolution.model_validate_json((RESOLUTION_CACHE / f"{name}-{key}.json").read_text("utf-8"))
        except (OSError, ValueError):
            tags[name] = None
            continue
        tags[name] = content_tag(name, recipe, parent_tag, res.installs, python)
    return tags


def list_images(images_dir: Path = IMAGES_DIR) -> list[dict]:
    """Every declared image with its tag as last resolved here and whether the engine has it."""
    specs = load_specs(images_dir)
    client = docker_client()
    tags = _cached_tags(specs, images_dir)
    rows = []
    for name, spec in specs.items():
        tag = tags[name]
        image = None
        if tag:
            try:
                image = client.images.get(tag)
            except ImageNotFound:
                pass
        packages = packages_of(image) if image is not None else ImagePackages()
        rows.append({"name": name, "tag": tag, "image_id": image.id if image is not None else None,
                     "parent": spec.parent, "needs_npm": spec.needs_npm, "description": spec.description,
                     "packages": json.loads(packages.model_dump_json())})
    return rows
