"""The instruction every evaluated agent receives (paper App. G.1), in the task's language."""

from omnidr.benchmark import Language, ShortAnswerProtocol, ShortAnswerTask, Task
from sandbox.models import RESEARCH_PROMPT

_TEMPLATES = {
    Language.en: (
        "Use the video-research capability to conduct deep research on {video}.\n"
        "The public source is {url}.\n"
        "Focus on the following user need: {query}\n"
        "Produce an illustrated and source-cited HTML report in {output}.\n"
        "Retain detailed audiovisual notes, but make the search, analysis, and discussion answer the stated focus.\n"
        "The report must follow the interface contract in {contract}: copy its template to {output}/index.html "
        "and write window.DATA to {output}/data.js.\n"
    ),
    Language.zh: (
        "请使用视频研究能力对 {video} 进行深度研究。\n"
        "视频的公开来源是 {url}。\n"
        "请围绕以下用户需求展开：{query}\n"
        "在 {output} 中生成一份图文并茂、标注来源的 HTML 报告。\n"
        "保留详细的视听笔记，但检索、分析与讨论都要回应上述需求。\n"
        "报告须遵循 {contract} 中的界面约定：将模板复制为 {output}/index.html，并把 window.DATA 写入 {output}/data.js。\n"
    ),
}


def instruction(task: Task, video_path: str, output_dir: str, contract_dir: str) -> str:
    return _TEMPLATES[task.language].format(
        video=video_path, url=task.video.url, query=task.query, output=output_dir, contract=contract_dir
    )


def answer_instruction(question: ShortAnswerTask, video_path: str, protocol: ShortAnswerProtocol) -> str:
    """A short-answer task's instruction: the research prompt (paper 002, App. C.3.1; `RESEARCH_PROMPT`), then the
    question, the video and the research budget (Sec. 3.1)."""
    return (f"{RESEARCH_PROMPT}\n\nQuestion: {question.question}\n"
            f"The video is at {video_path} (read-only).\n"
            f"Research budget: {protocol.research_tool_calls} tool calls or {protocol.research_wall_s / 60:g} minutes.\n")
