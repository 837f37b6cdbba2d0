"""OmniDR sandbox: reproducible evaluation of video-centered deep-research agents."""

__version__ = "0.1.0"
