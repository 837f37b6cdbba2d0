"""The direct-model runner (task kind `mcq`, VideoOdyssey, paper 004): one request per question, no tools."""

from ._request import build_messages, clock, question_text

__all__ = ["build_messages", "clock", "question_text"]
