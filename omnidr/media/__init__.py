"""Media stage: acquiring and probing source videos, and preparing the sampled inputs of multiple-choice questions."""

from ._fetch import FetchResult, FetchStatus, fetch_snapshot_videos, fetch_video
from ._frames import (
    VideoFrames,
    official_clips,
    official_plan,
    prepare_inputs,
    prepare_official_inputs,
    probe_frames,
    sample_plan,
    uniform_indices,
)
from ._probe import ProbeError, VideoProbe, probe_video
from ._videoodyssey import official_protocol, plan_import, release_file, slug, write_import

__all__ = ["FetchResult", "FetchStatus", "ProbeError", "VideoFrames", "VideoProbe", "fetch_snapshot_videos",
           "fetch_video", "prepare_inputs", "probe_frames", "probe_video", "sample_plan", "uniform_indices",
           "plan_import", "official_protocol", "official_clips", "official_plan", "prepare_official_inputs", "release_file", "slug", "write_import"]
