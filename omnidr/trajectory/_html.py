"""The static audit page of one attempt: one HTML file with inline CSS and JS, no server, no
external URL (a Content-Security-Policy forbids any load from elsewhere)."""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from sandbox.models import GatewayExchange, ProviderEvent, WebEvent

from ._models import AgentStep, SystemStep, Trajectory, UserStep
from ._stats import ProcessStats

MAX_TEXT = 4000  # characters of a message, argument or result shown before cutting

PHASE_COLORS = {"video": "#8e44ad", "search": "#2980b9", "read": "#16a085", "write": "#d35400",
                "verify": "#27ae60", "other": "#7f8c8d"}


def _web_row(ev: WebEvent) -> str:
    """One row of the audit page's web table: a proxy request or tunnel, or a provider-side search or fetch."""
    if isinstance(ev, ProviderEvent):
        what = f"{ev.tool}: " + (f"search {ev.query!r}" if ev.query is not None else (ev.url or ev.action))
        hits = "".join(f"<li class='{'err' if r.blocked else ''}'>{_e(r.url)}{' (removed: denylist)' if r.blocked else ''}"
                       "</li>" for r in ev.results)
        if hits:
            what = f"<details><summary>{_e(what)} ({len(ev.results)} results)</summary><ul>{hits}</ul></details>"
        else:
            what = _e(what)
        note = f"blocked ({_e(ev.block_reason)}) " if ev.blocked else ""
        return (f"<tr class='provider {'err' if ev.blocked or ev.error else ''}'><td>p{ev.seq}</td>"
                f"<td>{ev.started_at:%H:%M:%S}</td><td>provider ({_e(ev.policy)})</td><td>{what}</td>"
                f"<td>{_e(ev.status)}</td><td>{note}{_e(ev.error or '')}</td><td>exchange #{ev.exchange_seq}</td></tr>")
    return (f"<tr class='{'err' if ev.blocked or ev.error else ''}'><td>{ev.seq}</td><td>{ev.started_at:%H:%M:%S}</td>"
            f"<td>{_e(ev.method)}</td><td>{_e(getattr(ev, 'url', None) or f'{ev.host}:{ev.port}')}</td>"
            f"<td>{_e(ev.status)}</td><td>{'blocked (' + _e(ev.block_reason) + ')' if ev.blocked else ''}"
            f"{_e(ev.error or '')}</td><td>{ev.received_bytes:,}</td></tr>")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… [{len(text) - MAX_TEXT} more characters]"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=1, ensure_ascii=False, default=str)


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _time(step) -> str:
    return step.timestamp.strftime("%H:%M:%S") if step.timestamp else "–"


def _step_html(step) -> str:
    phases = " ".join(sorted({c.phase for c in step.tool_calls})) if isinstance(step, AgentStep) else ""
    error = (isinstance(step, SystemStep) and step.is_error) or (
        isinstance(step, AgentStep) and (step.error or any(o.is_error for o in step.observations)))
    label = step.type + (" (subagent)" if step.subagent else "")
    head = (f'<summary><span class="idx">#{step.index}</span> <span class="t">{_time(step)}</span> '
            f'<span class="kind {step.type}">{_e(label)}</span>')
    body = []
    if isinstance(step, AgentStep):
        names = ", ".join(f'<span class="ph" style="background:{PHASE_COLORS[c.phase]}">{_e(c.name)}'
                          f'{_e(" · " + c.skill) if c.skill else ""}</span>' for c in step.tool_calls)
        head += f" {names} <span class='preview'>{_e(step.message[:120])}</span>"
        if step.error:
            body.append(f'<p class="err">model error: {_e(step.error)}</p>')
        if step.reasoning:
            body.append(f'<div class="lbl">reasoning</div><pre class="reason">{_e(_cut(step.reasoning))}</pre>')
        if step.message:
            body.append(f'<div class="lbl">message</div><pre>{_e(_cut(step.message))}</pre>')
        results = {o.tool_call_id: o for o in step.observations}
        for call in step.tool_calls:
            body.append(f'<div class="call"><div class="lbl">tool call <b>{_e(call.name)}</b> '
                        f'[{call.phase}]{_e(" skill " + call.skill) if call.skill else ""} id {_e(call.id)}</div><pre>{_e(_cut(_json(call.arguments)))}</pre>')
            obs = results.pop(call.id, None)
            if obs is not None:
                cls = "res err" if obs.is_error else "res"
                body.append(f'<div class="lbl">{"error" if obs.is_error else "result"}</div>'
                            f'<pre class="{cls}">{_e(_cut(obs.content))}</pre>')
            body.append("</div>")
        for obs in results.values():
            body.append(f'<div class="lbl">result (call {_e(obs.tool_call_id)})</div><pre>{_e(_cut(obs.content))}</pre>')
        if step.usage:
            body.append(f'<div class="lbl">usage: {step.usage.input_tokens} in / {step.usage.output_tokens} out</div>')
    else:
        msg = step.message if isinstance(step, (UserStep, SystemStep)) else ""
        head += f" <span class='preview'>{_e(msg[:120])}</span>"
        body.append(f"<pre>{_e(_cut(msg))}</pre>")
    cls = "step err" if error else "step"
    # an error step starts open, so that what went wrong is not hidden behind a click
    return (f'<details id="step-{step.index}" class="{cls}" data-type="{step.type}" data-phases="{phases}"'
            f'{" open" if error else ""}>{head}</summary>' + "".join(body) + "</details>")


def _step_errors(traj: Trajectory) -> list[tuple[int, str]]:
    """(step index, what failed) of every error step, in order."""
    out = []
    for step in traj.steps:
        if isinstance(step, SystemStep) and step.is_error:
            out.append((step.index, step.message))
        elif isinstance(step, AgentStep):
            if step.error:
                out.append((step.index, f"model error: {step.error}"))
            names: dict[str | None, str] = {c.id: c.name for c in step.tool_calls}
            out += [(step.index, f"{names.get(o.tool_call_id, 'tool')} failed: {o.content}")
                    for o in step.observations if o.is_error]
    return out


def completion(traj: Trajectory, record: Any) -> str:
    """How far the attempt got, from the log where it tells and from attempt.json where it does not."""
    if traj.complete is True:
        return "finished: the log shows the run's end"
    if traj.complete is False:
        return "cut off: the log ends in the middle of the run"
    if record is None:
        return "unknown: no attempt.json (the attempt did not finish, or ran outside the sandbox)"
    reason = record.reason.value
    if reason == "timeout":
        return "cut off at the time limit (the agent was killed)"
    if reason == "stalled":
        return "stalled: no model request, proxy request or output change for the stall timeout (the agent was killed)"
    if record.exit_code == 0:
        return "finished: the agent exited 0 (this log format has no end marker)"
    if record.exit_code is None:
        return f"ended without an exit code ({reason})"
    return f"ended with exit code {record.exit_code} ({reason})"


def _budget_svg(exchanges: list[GatewayExchange], max_total_tokens: int | None, max_requests: int | None) -> str:
    """Cumulative tokens and requests over time, as the gateway counted them."""
    if not exchanges:
        return '<p class="muted">No gateway log: budget use over time is unknown.</p>'
    ordered = sorted(exchanges, key=lambda e: e.finished_at)
    start = min(e.started_at for e in ordered)
    points, tokens, requests = [(0.0, 0, 0)], 0, 0
    for e in ordered:
        tokens += e.usage.total_tokens if e.usage else 0
        requests += 1 if e.counted else 0
        points.append(((e.finished_at - start).total_seconds(), tokens, requests))
    w, h, pad = 720, 220, 40
    t_max = max(p[0] for p in points) or 1.0
    y_max = max(tokens, max_total_tokens or 0) or 1
    r_max = max(requests, max_requests or 0) or 1

    def xy(t: float, v: float, top: float) -> str:
        return f"{pad + (w - 2 * pad) * t / t_max:.1f},{h - pad - (h - 2 * pad) * v / top:.1f}"

    tok = " ".join(xy(t, v, y_max) for t, v, _ in points)
    req = " ".join(xy(t, r, r_max) for t, _, r in points)
    limit = ""
    if max_total_tokens:
        y = h - pad - (h - 2 * pad) * max_total_tokens / y_max
        limit = (f'<line x1="{pad}" x2="{w - pad}" y1="{y:.1f}" y2="{y:.1f}" class="limit"/>'
                 f'<text x="{w - pad}" y="{y - 4:.1f}" text-anchor="end">token budget {max_total_tokens:,}</text>')
    return (f'<svg id="budget" viewBox="0 0 {w} {h}" role="img" aria-label="budget use over time">'
            f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" class="axis"/>'
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" class="axis"/>{limit}'
            f'<polyline points="{tok}" class="tok"/><polyline points="{req}" class="req"/>'
            f'<text x="{pad}" y="{pad - 8}">tokens (orange, max {y_max:,}) · requests (blue, max {r_max})</text>'
            f'<text x="{w - pad}" y="{h - pad + 16}" text-anchor="end">{t_max:.0f} s</text></svg>'
            f'<p class="muted">{tokens:,} tokens over {requests} model requests (gateway); cost '
            f'{_cost(exchanges)}.</p>')


def _cost(exchanges: list[GatewayExchange]) -> str:
    """What the exchanges cost as the gateway priced them; `unpriced` when an answered one has no price."""
    answered = [e for e in exchanges if e.counted or e.phase == "finalization"]
    if any(e.cost_usd is None and e.outcome == "ok" for e in answered):
        return "unpriced (an answer without a price or usage)"
    return f"${sum(e.cost_usd or 0.0 for e in answered):.4f}"


def _stats_rows(stats: ProcessStats) -> str:
    def show(value: object) -> str:
        return "–" if value is None else str(value)

    rows = [("agent steps", stats.agent_steps), ("tool calls", stats.tool_calls), ("tool errors", stats.tool_errors),
            ("wall time (s)", None if stats.wall_time_s is None else f"{stats.wall_time_s:.0f}"),
            ("tokens", None if stats.total_tokens is None else f"{stats.total_tokens:,} ({stats.token_source})"),
            ("harness-reported tokens", None if stats.harness_total_tokens is None
             else f"{stats.harness_total_tokens:,}"),
            ("first write (%)", stats.first_write_pct), ("last search (%)", stats.last_search_pct),
            ("searches after write (%)", stats.searches_after_write_pct), ("write blocks", stats.write_blocks),
            ("interleaved", "yes" if stats.interleaved else "no"),
            ("repeated-failure loops", len(stats.failure_loops))]
    first = f'<tr><th>steps</th><td><span id="step-count">{stats.steps}</span></td></tr>'
    return first + "".join(f"<tr><th>{_e(k)}</th><td>{_e(show(v))}</td></tr>" for k, v in rows)


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1100px}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6;font-weight:600}.muted{color:#777}
details.step{border:1px solid #ddd;border-radius:4px;margin:3px 0;padding:2px 6px}
details.step.err{border-color:#c0392b;background:#fff6f5}
summary{cursor:pointer}.idx{color:#999}.t{color:#555;font-family:monospace}
.kind{font-weight:600}.kind.user{color:#2c3e50}.kind.system{color:#7f8c8d}.kind.agent{color:#d35400}
.ph{color:#fff;border-radius:3px;padding:0 4px;font-size:12px;margin-right:2px}
.preview{color:#666}pre{white-space:pre-wrap;word-break:break-word;background:#fafafa;padding:6px;margin:2px 0;
max-height:400px;overflow:auto}pre.err{background:#fdecea}pre.reason{color:#555;font-style:italic}
.lbl{font-size:12px;color:#555;margin-top:4px}.err{color:#c0392b}.call{border-left:3px solid #eee;padding-left:6px}
#strip span{display:inline-block;width:6px;height:18px;margin-right:1px}
svg{width:100%;max-width:720px;height:auto;border:1px solid #eee}svg text{font-size:11px;fill:#555}
.axis{stroke:#999}.tok{fill:none;stroke:#d35400;stroke-width:2}.req{fill:none;stroke:#2980b9;stroke-width:1.5}
.limit{stroke:#c0392b;stroke-dasharray:4 3}button{margin-right:4px}.hidden{display:none}
.banner{padding:6px 10px;border-radius:4px;font-weight:600}.banner.ok{background:#eaf7ee;color:#1e7e34}
.banner.bad{background:#fdecea;color:#c0392b}.banner.warn{background:#fff8e1;color:#8a6d00}#links{margin:.5em 0}
"""

JS = """
(function(){
  var steps=document.querySelectorAll('details.step');
  function show(pred){steps.forEach(function(s){s.classList.toggle('hidden',!pred(s));});
    document.getElementById('shown').textContent=document.querySelectorAll('details.step:not(.hidden)').length;}
  document.querySelectorAll('button[data-filter]').forEach(function(b){b.addEventListener('click',function(){
    var f=b.getAttribute('data-filter');
    if(f==='all'){show(function(){return true;});}
    else if(f==='errors'){show(function(s){return s.classList.contains('err');});}
    else{show(function(s){return (s.getAttribute('data-phases')||'').split(' ').indexOf(f)>=0;});}
  });});
  document.getElementById('expand').addEventListener('click',function(){
    var open=!steps[0]||!steps[0].open;steps.forEach(function(s){s.open=open;});});
  show(function(){return true;});
})();
"""


@dataclass(frozen=True)
class AttemptLogs:
    """What the attempt's doors logged: the model gateway's exchanges and the network events (proxy, provider)."""

    exchanges: list[GatewayExchange]
    network: list[WebEvent]


def audit_page(traj: Trajectory, stats: ProcessStats, *, origin: str, task_id: str, attempt: int, record: Any,
               logs: AttemptLogs, links: Sequence[tuple[str, str]] = ()) -> str:
    """The HTML text of the audit page: links to what sits next to it, how the attempt ended and its
    errors first, then statistics, budget use, the timeline and the network log."""
    exchanges, network = logs.exchanges, logs.network
    budget = record.budget if record is not None else None
    strip = "".join(f'<span title="#{i + 1} {_e(c.name)} [{c.phase}]" style="background:{PHASE_COLORS[c.phase]}">'
                    "</span>" for i, c in enumerate(traj.tool_calls()))
    legend = " ".join(f'<span class="ph" style="background:{c}">{p}</span>' for p, c in PHASE_COLORS.items())
    net_rows = "".join(_web_row(ev) for ev in network)
    provider = sum(1 for ev in network if isinstance(ev, ProviderEvent))
    loops = "".join(f"<li>{_e(loop.tool)} ×{loop.repeats} from call {loop.first_action}: <code>{_e(loop.arguments)}</code></li>"
                    for loop in stats.failure_loops)
    warnings = "".join(f"<li>{_e(w)}</li>" for w in traj.warnings[:200])
    info = [("task", task_id), ("attempt", attempt), ("harness", traj.harness), ("model", traj.model),
            ("trajectory from", origin), ("format", traj.source_format), ("completion", completion(traj, record))]
    if record is not None:
        info += [("ended", f"{record.reason.value}: {record.detail}"), ("exit code", record.exit_code)]
    info_rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in info)
    nav = " · ".join(f'<a href="{_e(href)}">{_e(label)}</a>' for label, href in links)
    if record is None:
        verdict = '<p id="outcome" class="banner warn">No attempt.json: how this attempt ended is not recorded.</p>'
    elif record.delivered:
        verdict = f'<p id="outcome" class="banner ok">Delivered a report ({_e(record.detail)}).</p>'
    else:
        verdict = (f'<p id="outcome" class="banner bad">Failed: <b>{_e(record.reason.value)}</b>: '
                   f'{_e(record.detail)}</p>')
    errors = _step_errors(traj)
    error_list = ""
    if errors:
        shown = "".join(f'<li><a href="#step-{i}">step #{i}</a>: {_e(msg[:300])}</li>' for i, msg in errors[:20])
        more = f"<li>… {len(errors) - 20} more (filter: errors)</li>" if len(errors) > 20 else ""
        error_list = f'<h2>Errors ({len(errors)})</h2><ul id="errors">{shown}{more}</ul>'

    buttons = "".join(f'<button data-filter="{p}">{p}</button>' for p in PHASE_COLORS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>Audit {_e(task_id)} #{attempt}</title><style>{CSS}</style></head>
<body>
<h1>Audit of {_e(task_id)}, attempt {attempt}</h1>
<nav id="links">{nav or '<span class="muted">no report, evaluation or logs next to this page</span>'}</nav>
{verdict}
{error_list}
<table id="info">{info_rows}</table>
<h2>Process statistics</h2><table id="stats">{_stats_rows(stats)}</table>
{f'<h2>Repeated-failure loops</h2><ul>{loops}</ul>' if loops else ''}
<h2>Budget use over time</h2>{_budget_svg(exchanges, budget.max_total_tokens if budget else None,
                                          budget.max_iterations if budget else None)}
<h2>Tool calls by phase</h2><div>{legend}</div><div id="strip">{strip or '<span class="muted">no tool calls</span>'}</div>
<h2>Timeline</h2>
<div><button data-filter="all">all</button><button data-filter="errors">errors</button>{buttons}
<button id="expand">expand/collapse</button> <span class="muted"><span id="shown"></span> shown</span></div>
<div id="timeline">{''.join(_step_html(s) for s in traj.steps)}</div>
<h2>Network requests ({len(network) - provider} through the proxy, {provider} at the model provider)</h2>
{'<table id="network"><tr><th>#</th><th>time</th><th>method / door</th><th>URL / host / search</th><th>status</th><th>note</th><th>bytes in / exchange</th></tr>' + net_rows + '</table>' if network else '<p class="muted">No network requests logged.</p>'}
{f'<h2>Parser warnings</h2><ul>{warnings}</ul>' if warnings else ''}
<script>{JS}</script>
</body></html>
"""
