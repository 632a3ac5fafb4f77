"""The known RestrictedPython escape families: each is rejected when the config loads,
or fails at run time inside the sandbox with status error; none returns a value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from RestrictedPython import compile_restricted_exec
from rewardkit_code import PythonReward
from rewardkit_code._restricted_harness import restricted_globals

from rewardkit import Sample, Status


def source_of(body: str, imports: str = "") -> str:
    lines = "\n".join(f"    {line}" for line in body.splitlines())
    return f"{imports}\ndef reward(completion, reference, metadata):\n{lines}\n    return 1.0\n"


COMPILE_TIME = {
    "dunder chain": ("x = ().__class__.__bases__[0].__subclasses__()", "", "__class__"),
    "f-string dunder": ("x = f'{(1).__class__}'", "", "__class__"),
    "generator frame": ("g = (i for i in [1])\nx = g.gi_frame", "", "gi_frame"),
    "frame back": ("x = completion.f_back", "", "f_back"),
    "frame globals": ("x = completion.f_globals", "", "f_globals"),
    "traceback frame": ("x = completion.tb_frame", "", "tb_frame"),
    "exception traceback": (
        "try:\n    1 / 0\nexcept Exception as e:\n    x = e.__traceback__", "", "__traceback__"
    ),
    "try except star": ("try:\n    pass\nexcept* ValueError:\n    pass", "", "TryStar"),
    "eval": ("x = eval('1')", "", "Eval calls"),
    "exec": ("exec('x = 1')", "", "Exec calls"),
    "dunder import": ("x = __import__('os')", "", "__import__"),
    "import os": ("x = 1", "import os", "import of 'os'"),
    "import sys": ("x = 1", "import sys", "import of 'sys'"),
    "import subprocess": ("x = 1", "import subprocess", "import of 'subprocess'"),
    "import importlib": ("x = 1", "import importlib", "import of 'importlib'"),
    "import builtins": ("x = 1", "from builtins import open", "import of 'builtins'"),
    "nested import": ("import os\nx = os", "", "import of 'os'"),
    "relative import": ("x = 1", "from . import secrets", "relative imports"),
    "globals dunder": ("x = reward.__globals__", "", "__globals__"),
}


@pytest.mark.parametrize("name", list(COMPILE_TIME))
def test_rejected_when_the_config_loads(name: str) -> None:
    body, imports, message = COMPILE_TIME[name]
    with pytest.raises(ValidationError, match=r"line \d+: .*" + message.replace("*", r"\*")):
        PythonReward({"source": source_of(body, imports)})


RUN_TIME = {
    "getattr dunder": ("x = getattr(reward, '__globals__')", "", "__globals__"),
    "getattr frame": ("g = (i for i in [1])\nx = getattr(g, 'gi_frame')", "", "gi_frame"),
    "getattr traceback": (
        "try:\n    1 / 0\nexcept Exception as e:\n    x = getattr(e, '__traceback__')",
        "",
        "__traceback__",
    ),
    "str.format attribute access": ("x = '{0.__class__}'.format(1)", "", "format"),
    "str.format_map": ("x = str.format_map('{a.__class__}', {'a': 1})", "", "format"),
    "string.Formatter get_field": (
        "x = string.Formatter().get_field('0.__class__', [1], {})", "import string", "Formatter"
    ),
    "type": ("x = type(1)", "", "NameError: name 'type'"),
    "vars": ("x = vars()", "", "NameError: name 'vars'"),
    "globals": ("x = globals()", "", "NameError: name 'globals'"),
    "open": ("x = open('/etc/passwd').read()", "", "NameError: name 'open'"),
    "compile": ("x = compile('1', 'f', 'eval')", "", "NameError: name 'compile'"),
    "module reached through a module": ("x = re.enum", "import re", "AttributeError"),
    "missing attribute": ("x = completion.no_such_method", "", "AttributeError"),
    "globals copied by update_wrapper": (
        "def g():\n    pass\nfunctools.update_wrapper(g, json.loads, (), ('__globals__',))",
        "import functools, json",
        "update_wrapper",
    ),
    "system exit": ("raise SystemExit(0)", "", "SystemExit"),
}


@pytest.mark.parametrize("name", list(RUN_TIME))
@pytest.mark.usefixtures("no_leftovers")
def test_fails_inside_the_sandbox_with_status_error(name: str) -> None:
    body, imports, message = RUN_TIME[name]
    score = PythonReward({"source": source_of(body, imports)}).grade(Sample(completion="x"))
    assert (score.status, score.value) == (Status.ERROR, None)
    assert message in score.reason
    assert score.reason.startswith("line ")


@pytest.mark.parametrize("module", ["os", "sys", "subprocess", "importlib", "posix"])
def test_the_run_time_import_guard_refuses_what_the_compile_check_would(module: str) -> None:
    # the compile-time import check is the first wall; the guarded __import__ the second
    code = compile_restricted_exec(f"import {module}", "<reward>").code
    assert code is not None
    with pytest.raises(ImportError, match="not allowed"):
        exec(code, restricted_globals(frozenset({"re", "math"})))


def test_allowed_modules_expose_no_modules_and_no_private_names() -> None:
    namespace = restricted_globals(frozenset({"re", "json", "collections", "collections.abc"}))
    code = compile_restricted_exec("import re, json, collections.abc", "<reward>").code
    exec(code, namespace)
    for view in (namespace["re"], namespace["json"]):
        exposed = vars(view)
        assert not [key for key in exposed if key.startswith("_")]
        assert not [key for key, value in exposed.items() if type(value).__name__ == "module"]
    assert hasattr(namespace["collections"].abc, "Mapping")
