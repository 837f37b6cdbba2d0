"""MkDocs hook: the whole `omnidr` command group for mkdocs-click (docs/reference/cli.md).

The `omnidr` group loads most commands on demand (`omnidr.cli.STAGE_COMMANDS`), and mkdocs-click lists only
the commands a group holds when the group holds any; this hook gives it a group holding every command, so
the reference is generated from the code and lists each command the CLI has. It registers itself as the
module `omnidr_cli_reference`, which the page names.
"""

import sys

import click

from omnidr.cli import cli as _cli


def full_group() -> click.Group:
    """The `omnidr` group with every command in it, the on-demand ones loaded."""
    ctx = click.Context(_cli, info_name="omnidr")
    commands = {name: _cli.get_command(ctx, name) for name in _cli.list_commands(ctx)}
    return click.Group("omnidr", commands={k: v for k, v in commands.items() if v is not None},
                       params=list(_cli.params), help=_cli.help)


cli = full_group()
sys.modules["omnidr_cli_reference"] = sys.modules[__name__]


def on_page_content(html: str, **_kwargs) -> str:
    """mkdocs-click prints Click's marker for "no default" (`Sentinel.UNSET`, Click 8.2 and later) in the Default
    column; show an empty cell, as `--help` shows nothing."""
    return html.replace("<td><code>Sentinel.UNSET</code></td>", "<td></td>")
