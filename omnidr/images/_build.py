"""Building the project's images without a registry: a debootstrapped base, everything else on top.

Tags are derived from content (the image folder, the copied `sandbox/` sources and the
parent's tag), so an unchanged image is found by tag and reused in well under a second.
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from docker.errors import APIError, BuildError, ImageNotFound

from omnidr.errors import UserError

from ._docker import docker_client
from ._spec import BuiltImage, ImageKind, ImageSpec, RootfsSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGES_DIR = REPO_ROOT / "images"
SANDBOX_DIR = REPO_ROOT / "sandbox"
LABEL_NAME = "org.omnidr.image"
LABEL_CONTENT = "org.omnidr.content"
WHEEL_CACHE = Path(os.environ.get("OMNIDR_WHEEL_CACHE", Path.home() / ".cache" / "omnidr" / "wheels"))
SKIP_PARTS = {"__pycache__", ".pytest_cache"}

Progress = Callable[[str], None]


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
    return specs


def _tree_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not SKIP_PARTS & set(p.parts) and p.suffix != ".pyc")


def _digest(spec: ImageSpec, parent_tag: str | None, images_dir: Path) -> str:
    h = hashlib.sha256()
    h.update(f"parent={parent_tag}\n".encode())
    folders = [images_dir / spec.name] + ([SANDBOX_DIR] if spec.copy_sandbox else [])
    folders += [REPO_ROOT / pkg for pkg in spec.copy_packages]
    for folder in folders:
        for path in _tree_files(folder):
            h.update(f"{path.relative_to(folder.parent).as_posix()}\0".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def image_tag(name: str, specs: dict[str, ImageSpec], images_dir: Path = IMAGES_DIR) -> str:
    spec = specs[name]
    parent = image_tag(spec.parent, specs, images_dir) if spec.parent else None
    return f"omnidr/{name}:{_digest(spec, parent, images_dir)}"


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
    try:
        socket.create_connection(("registry.npmjs.org", 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def build_images(
    names: list[str] | None = None,
    images_dir: Path = IMAGES_DIR,
    progress: Progress = lambda _m: None,
    refresh_lock: bool = False,
) -> list[BuiltImage]:
    """Build (or reuse) the named images and their parents; all images when `names` is None."""
    specs = load_specs(images_dir)
    client = docker_client(timeout_s=1800)
    results: dict[str, BuiltImage] = {}
    for name in _order(names or list(specs), specs):
        spec = specs[name]
        started = time.monotonic()
        if spec.parent and results[spec.parent].status == "skipped":
            results[name] = BuiltImage(name=name, tag="", image_id="", status="skipped",
                                       reason=f"parent image '{spec.parent}' was skipped")
            continue
        if spec.needs_npm and not npm_reachable():
            results[name] = BuiltImage(
                name=name, tag="", image_id="", status="skipped",
                reason="needs the npm registry, which this machine cannot reach; build it where registry.npmjs.org is reachable",
            )
            progress(f"skipped {name}: {results[name].reason}")
            continue
        tag = image_tag(name, specs, images_dir)
        try:
            image = client.images.get(tag)
            results[name] = BuiltImage(name=name, tag=tag, image_id=image.id, status="cached",
                                       seconds=time.monotonic() - started)
            progress(f"cached  {tag}")
            continue
        except ImageNotFound:
            pass
        progress(f"building {tag}")
        if spec.kind is ImageKind.rootfs:
            lock_changed = _build_rootfs(client, spec, images_dir, tag, progress, refresh_lock)
            if lock_changed:  # the lock is part of the content: tag again under the new digest
                new_tag = image_tag(name, specs, images_dir)
                client.images.get(tag).tag(*new_tag.split(":"))
                client.images.remove(tag)
                tag = new_tag
        else:
            parent_tag = results[spec.parent].tag if spec.parent else None
            _build_dockerfile(client, spec, images_dir, tag, parent_tag, progress)
        image = client.images.get(tag)
        results[name] = BuiltImage(name=name, tag=tag, image_id=image.id, status="built",
                                   seconds=round(time.monotonic() - started, 2))
        progress(f"built   {tag} in {results[name].seconds:.1f} s")
    return list(results.values())


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{what} failed: {' | '.join(tail)}")
    return proc.stdout


def _build_rootfs(client, spec: ImageSpec, images_dir: Path, tag: str, progress: Progress, refresh_lock: bool) -> bool:
    """debootstrap the pinned release, check it against packages.lock, import it. Returns True if the lock was (re)written."""
    folder = images_dir / spec.name
    rootfs_spec = RootfsSpec.model_validate_json((folder / "rootfs.json").read_text("utf-8"))
    if os.geteuid() != 0:
        raise UserError("building the base image needs root (debootstrap); run as root or with sudo")
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed; run `make setup` (installs Debian's debootstrap)")
    work = Path(tempfile.mkdtemp(prefix="omnidr-rootfs-", dir=os.environ.get("OMNIDR_BUILD_DIR", "/var/tmp")))
    try:
        rootfs = work / "rootfs"
        progress(f"debootstrap {rootfs_spec.suite} ({rootfs_spec.variant}) from {rootfs_spec.mirror}")
        cmd = ["debootstrap", f"--variant={rootfs_spec.variant}"]
        if rootfs_spec.include:
            cmd.append("--include=" + ",".join(rootfs_spec.include))
        _run(cmd + [rootfs_spec.suite, str(rootfs), rootfs_spec.mirror], "debootstrap")
        versions = _run(["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package}=${Version}\\n"], "dpkg-query")
        packages = "".join(sorted(versions.splitlines(keepends=True)))
        lock = folder / "packages.lock"
        lock_changed = False
        if not lock.exists() or refresh_lock:
            lock_changed = not lock.exists() or lock.read_text() != packages
            lock.write_text(packages)
        elif lock.read_text() != packages:
            old, new = set(lock.read_text().splitlines()), set(packages.splitlines())
            drift = sorted(new - old)[:3]
            raise UserError(
                f"the Debian archive no longer matches images/{spec.name}/packages.lock "
                f"({len(new - old)} package versions differ, e.g. {', '.join(drift)}); review and run "
                f"`omnidr images build {spec.name} --refresh-lock`"
            )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        changes = [f"ENV {k}={v}" for k, v in rootfs_spec.env.items()]
        changes += [f'LABEL {LABEL_NAME}="{spec.name}"', 'CMD ["/bin/bash"]']
        progress("importing the rootfs into Docker")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        repo, version = tag.split(":")
        client.api.import_image_from_stream(tar.stdout, repository=repo, tag=version, changes=changes)
        tar.wait()
        if tar.returncode != 0:
            raise RuntimeError("tar of the rootfs failed")
        return lock_changed
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wheelhouse(lock: Path, dest: Path, progress: Progress) -> None:
    """Download the locked wheels on the host (which trusts this network's TLS), then copy them
    into the build context, so image builds install offline with --require-hashes."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    progress(f"downloading wheels for {lock.relative_to(lock.parents[1])}")
    pip = [os.environ.get("OMNIDR_PIP", str(Path(sys.executable).with_name("pip")))]
    _run(pip + ["download", "-q", "--disable-pip-version-check", "--require-hashes", "--no-deps",
                "--only-binary=:all:", "-r", str(lock), "-d", str(WHEEL_CACHE)], "pip download")
    dest.mkdir()
    def norm(name: str) -> str:  # PEP 503: runs of -, _ and . are equivalent
        return re.sub(r"[-_.]+", "_", name).lower()

    wanted = {norm(line.split("==")[0].strip()) for line in lock.read_text().splitlines()
              if "==" in line and not line.startswith(("#", " "))}
    for wheel in WHEEL_CACHE.glob("*.whl"):
        if norm(wheel.name.split("-")[0]) in wanted:
            shutil.copy2(wheel, dest / wheel.name)


def _build_dockerfile(client, spec: ImageSpec, images_dir: Path, tag: str, parent_tag: str | None, progress: Progress) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"omnidr-build-{spec.name}-"))
    try:
        ctx = work / "context"
        shutil.copytree(images_dir / spec.name, ctx, ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
        if spec.copy_sandbox:
            shutil.copytree(SANDBOX_DIR, ctx / "sandbox", ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
        for pkg in spec.copy_packages:
            if not (REPO_ROOT / pkg / "__init__.py").is_file():
                raise UserError(f"images/{spec.name}/image.json: copy_packages names '{pkg}', which is not a package of this repo")
            shutil.copytree(REPO_ROOT / pkg, ctx / pkg, ignore=shutil.ignore_patterns(*SKIP_PARTS, "*.pyc"))
        if (ctx / "requirements.lock").exists():
            _wheelhouse(images_dir / spec.name / "requirements.lock", ctx / "wheels", progress)
        else:
            (ctx / "wheels").mkdir()
        buildargs = {"BASE_IMAGE": parent_tag} if parent_tag else {}
        try:
            for chunk in client.api.build(path=str(ctx), tag=tag, buildargs=buildargs, rm=True, forcerm=True,
                                          decode=True, labels={LABEL_NAME: spec.name, LABEL_CONTENT: tag}):
                if "error" in chunk:
                    raise BuildError(chunk["error"].strip(), [])
                line = chunk.get("stream", "").strip()
                if line.startswith("Step "):
                    progress(f"  {spec.name}: {line}")
        except (BuildError, APIError) as exc:
            raise RuntimeError(f"docker build of {spec.name} failed: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def list_images(images_dir: Path = IMAGES_DIR) -> list[dict]:
    """Every declared image with its current content tag and whether the engine has it."""
    specs = load_specs(images_dir)
    client = docker_client()
    rows = []
    for name, spec in specs.items():
        tag = image_tag(name, specs, images_dir)
        try:
            image_id = client.images.get(tag).id
        except ImageNotFound:
            image_id = None
        rows.append({"name": name, "tag": tag, "image_id": image_id, "parent": spec.parent,
                     "needs_npm": spec.needs_npm, "description": spec.description})
    return rows


def image_ids(results: list[BuiltImage]) -> dict[str, str]:
    return {r.name: r.image_id for r in results if r.image_id}

