"""What an image folder under `images/` declares (`images/<name>/image.json`), and what a built image holds."""

from datetime import datetime
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class ImageKind(str, Enum):
    rootfs = "rootfs"  # debootstrap a pinned Debian release into a folder, then `docker import`
    dockerfile = "dockerfile"  # `docker build` on top of the parent image


class ImageSpec(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Image name; equals the folder name.")
    description: str = Field(description="What the image is for.")
    kind: ImageKind = Field(description="rootfs (the base) or dockerfile (everything else).")
    parent: str | None = Field(None, description="Image this one is built on (FROM), by name.")
    needs_npm: bool = Field(False, description="The build installs from the npm registry; skipped where npm is unreachable.")
    copy_sandbox: bool = Field(False, description="Copy this repo's `sandbox/` package into the build context.")
    copy_packages: list[str] = Field(
        default_factory=list, description="Other top-level packages of this repo copied into the build context (e.g. omnidr)."
    )
    cli: "HarnessCli | None" = Field(
        None, description="The agent CLI the image holds (harness images): its command and exact version, checked by the "
                          "build (CLI_VERSION build argument) and recorded with the image's packages.",
    )
    debian_packages: list[str] = Field(
        default_factory=list,
        description="Debian packages the image installs on top of its parent, by name. The exact versions of them and "
                    "of their dependencies come from `packages.lock` where the archive still serves them, otherwise from "
                    "the archive; the Dockerfile installs them from the DEBIAN_PACKAGES build argument.",
    )
    build_after: list[str] = Field(
        default_factory=list,
        description="Images, by name, that a parallel build (`omnidr images build --jobs N`) finishes before this one "
                    "starts, besides its parent: the ones whose first layers this image repeats exactly (the same "
                    "parent and Debian packages), so that Docker's layer cache gives it a large layer they install "
                    "instead of a second install at the same time. Order only; not part of what the image holds.",
    )


class HarnessCli(BaseModel):
    """The agent CLI of a harness image."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    command: str = Field(description="Executable name on the image's PATH, e.g. claude.")
    version: str = Field(description="Exact version its `--version` prints, e.g. 2.1.327.")


ImageSpec.model_rebuild()


class RootfsSpec(BaseModel):
    """`images/base/rootfs.json`: how the base rootfs is made."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    suite: str = Field(description="Debian release codename, e.g. bookworm.")
    mirror: str = Field(description="Debian archive URL reachable from the build host.")
    variant: str = Field("minbase", description="debootstrap variant.")
    include: list[str] = Field(default_factory=list, description="Extra Debian packages installed into the rootfs.")
    apt_sources: list[str] = Field(
        default_factory=list,
        description="sources.list lines of the image (`deb URL SUITE COMPONENT...`), inherited by every image built on it; "
                    "debootstrap itself reads only `mirror`.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables baked into the image.")


class BuiltImage(BaseModel):
    """One image as built (or found cached) by `omnidr images build`."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str = Field(description="Image name.")
    tag: str = Field(description="Content-derived tag, `omnidr/<name>:<hash>`.")
    image_id: str = Field(description="Docker image ID (sha256:...).")
    status: str = Field(description="built, cached, skipped or failed.")
    reason: str | None = Field(None, description="Why an image was skipped or failed.")
    seconds: float = Field(0.0, description="Wall time of this build step, seconds.")
    drift: list["PackageDrift"] = Field(default_factory=list, description="Locked versions the image could not have.")


class PackageDrift(BaseModel):
    """One package whose version in the image differs from its lock (the archive moved on)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    lock: str = Field(description="The lock file, relative to the repo, e.g. images/evaluator/packages.lock.")
    package: str = Field(description="Debian package name.")
    locked: str | None = Field(description="Version in the lock; None for a package the lock does not list.")
    served: str | None = Field(description="Version in the image; None for a locked package the image no longer needs.")

    def line(self) -> str:
        return f"{self.package} {self.locked or '(not locked)'} -> {self.served or '(not installed)'}"


class ImagePackages(BaseModel):
    """Every package version an image holds. Stored in the image's `org.omnidr.packages` label and in
    /etc/omnidr/packages.json inside it, and copied into what runs record (attempt.json, environment.json,
    ARCHIVE.json)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    debian: dict[str, str] = Field(default_factory=dict, description="Every Debian package in the image -> version.")
    python: dict[str, str] = Field(
        default_factory=dict, description="Wheels the image installed from its requirements.lock -> version."
    )
    drift: list[PackageDrift] = Field(
        default_factory=list, description="Locked versions this image and its parents could not have, with what they got."
    )
    cli: dict[str, str] = Field(default_factory=dict, description="Agent CLI the image holds -> its exact version.")


class Resolution(BaseModel):
    """What one image installs, as resolved against the archive; cached per recipe and archive state."""

    image: str = Field(description="Image name.")
    key: str = Field(description="Digest of the recipe (folder contents but the lock, parent tag, lock contents).")
    installs: dict[str, str] = Field(
        description="Debian packages this image installs -> exact version (for the base: the debootstrap result)."
    )
    packages: ImagePackages = Field(description="Everything the image will hold.")
    archive: dict[str, str] = Field(
        default_factory=dict, description="sources.list line -> digest of its package indices when this was resolved."
    )
    resolved_at: datetime = Field(description="When the archive was asked (UTC).")


BuiltImage.model_rebuild()
