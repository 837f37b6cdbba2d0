"""The snapshot's bundled web corpus (`web/corpus.json`): pages the replay proxy serves offline.

The models are the egress proxy's (`sandbox/egress/_corpus.py`), defined once there: what `record` writes is
a snapshot corpus as it is, and what a snapshot bundles is what `replay` serves.
"""

from sandbox.egress import CorpusPage, WebCorpus

__all__ = ["CorpusPage", "WebCorpus"]
