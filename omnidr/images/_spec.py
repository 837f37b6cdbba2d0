"""What an image folder under `images/` declares (`images/<name>/image.json`)."""

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class ImageKind(str, Enum):
    rootfs = "rootfs"  # debootstrap a pinned Debian release into a folder, then `docker import`
    dockerfile = "dockerfile"  # `docker build` on top of the parent image


class ImageSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Image name; equals the folder name.")
    description: str = Field(description="What the image is for.")
    kind: ImageKind = Field(description="rootfs (the base) or dockerfile (everything else).")
    parent: str | None = Field(None, description="Image this one is built on (FROM), by name.")
    needs_npm: bool = Field(False, description="The build installs from the npm registry; skipped where npm is unreachable.")
    copy_sandbox: bool = Field(False, description="Copy this repo's `sandbox/` package into the build context.")
    copy_packages: list[str] = Field(
        default_factory=list, description="Other top-level packages of this repo copied into the build context (e.g. omnidr)."
    )


class RootfsSpec(BaseModel):
    """`images/base/rootfs.json`: how the base rootfs is made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str = Field(description="Debian release codename, e.g. bookworm.")
    mirror: str = Field(description="Debian archive URL reachable from the build host.")
    variant: str = Field("minbase", description="debootstrap variant.")
    include: list[str] = Field(default_factory=list, description="Extra Debian packages installed into the rootfs.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables baked into the image.")


class BuiltImage(BaseModel):
    """One image as built (or found cached) by `omnidr images build`."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Image name.")
    tag: str = Field(description="Content-derived tag, `omnidr/<name>:<hash>`.")
    image_id: str = Field(description="Docker image ID (sha256:...).")
    status: str = Field(description="built, cached or skipped.")
    reason: str | None = Field(None, description="Why an image was skipped.")
    seconds: float = Field(0.0, description="Wall time of this build step, seconds.")
