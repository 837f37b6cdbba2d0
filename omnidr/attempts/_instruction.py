"""The instruction every evaluated agent receives (paper App. G.1), in the task's language."""

from omnidr.benchmark import Language, ShortAnswerProtocol, ShortAnswerTask, Task

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
    """The research prompt of a short-answer task (paper 002, App. C.3.1, in our words): inspect the media, verify
    the evidence, go on until it suffices or the budget is spent; the strategy is the agent's; by default one
    direct English paragraph of one to three sentences, at most 80 words."""
    return (
        f"Answer a question about the video at {video_path} (a read-only local file: sample its frames and read "
        "its subtitles).\n"
        f"Question: {question.question}\n"
        "Research the open web as you see fit: search, open pages, use their forms, download files and read them. "
        "Inspect the media, check the evidence, and keep going until the evidence is sufficient or the research "
        f"budget is spent ({protocol.research_tool_calls} tool calls or {protocol.research_wall_s / 60:g} "
        "minutes).\n"
        "Unless the question asks for another format, answer in one direct English paragraph of one to three "
        "sentences, at most 80 words.\n"
        'Deliver the answer by running `omnidr-skill answer submit "YOUR ANSWER"` (it writes /output/answer.json); '
        "an agent without a shell gives it as its final reply, without tool calls.\n"
    )
