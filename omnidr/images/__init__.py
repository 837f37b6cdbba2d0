"""Images stage: pinned, content-tagged images built without a registry."""

from ._build import build_images, image_ids, image_tag, list_images, load_specs
from ._docker import docker_client
from ._spec import BuiltImage, ImageSpec

__all__ = ["BuiltImage", "ImageSpec", "build_images", "docker_client", "image_ids", "image_tag", "list_images", "load_specs"]
