"""sandbox.models loads its names lazily (PEP 562): what the type checker reads is what run time serves, and a
short-lived process in a container (a skill call) reads the plain names without loading pydantic."""

import ast
import subprocess
import sys

import pytest
from testkit import ROOT

import sandbox.models as models


def test_the_type_checkers_imports_are_exactly_the_lazy_exports():
    tree = ast.parse((ROOT / "sandbox" / "models" / "__init__.py").read_text("utf-8"))
    [block] = [n for n in tree.body if isinstance(n, ast.If)]  # `if TYPE_CHECKING:`
    seen = {a.asname or a.name: (n.module.rsplit(".", 1)[1], a.name) for n in block.body for a in n.names}
    assert seen == models._EXPORTS
    assert sorted(seen) == models.__all__


def test_every_exported_name_loads_from_its_module():
    for name, (module, attribute) in models._EXPORTS.items():
        assert getattr(models, name) is getattr(__import__(f"sandbox.models.{module}", fromlist=["x"]), attribute)


def test_a_skill_call_loads_no_pydantic_until_it_writes_a_model():
    probe = ("import sys; import sandbox.skills.__main__; from sandbox.models import ANSWER_FILE, TASK_KIND_ENV; "
             "print('pydantic' in sys.modules); from sandbox.models import ReportData; print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out.stdout + out.stderr


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchModel"):
        models.NoSuchModel  # noqa: B018
