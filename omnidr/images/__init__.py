"""Images stage: pinned, content-tagged images built without a registry."""

from ._build import (
    LABEL_NAME,
    build_images,
    content_tag,
    list_images,
    load_specs,
    lock_images,
    packages_of,
    record_results,
)
from ._docker import docker_client
from ._spec import BuiltImage, ImagePackages, ImageSpec, PackageDrift

__all__ = [
    "LABEL_NAME", "BuiltImage", "ImagePackages", "ImageSpec", "PackageDrift", "build_images", "content_tag",
    "docker_client", "list_images", "load_specs", "lock_images", "packages_of", "record_results",
]
