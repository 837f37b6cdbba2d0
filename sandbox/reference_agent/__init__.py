"""The reference video-research agent (paper Sec. 2.2, App. D), run inside the `reference` image.

An OpenAI-compatible tool-calling loop over video tools (ffprobe/ffmpeg), web tools (an offline
search index, pages fetched through the egress proxy), evidence records and the report contract.
It imports only the standard library and `openai`; see README.md for the tools, the capability
levels and the native log format.
"""

from ._short_answer import classify_failure

__all__ = ["classify_failure"]
