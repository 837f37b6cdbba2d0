"""Media stage: acquiring and probing source videos."""

from ._fetch import FetchResult, FetchStatus, fetch_snapshot_videos, fetch_video
from ._probe import ProbeError, VideoProbe, probe_video

__all__ = ["FetchResult", "FetchStatus", "ProbeError", "VideoProbe", "fetch_snapshot_videos", "fetch_video", "probe_video"]
