"""Every Python module of the project reads only names it defines, imports or takes from
builtins. Python looks a global name up only when the line that reads it runs, so a name a GPU
test reads but never imported fails on the GPU alone, and only there, as an error of the test
rather than of the kernel it checks: this finds such names on any machine, from the source."""

import ast
import builtins
import pathlib
import symtable

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = sorted(path.relative_to(ROOT) for folder in ("tests", "bench", "python", "scripts")
                 for path in (ROOT / folder).rglob("*.py"))
MODULE_NAMES = {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__",
                "__path__", "__annotations__"}


def scopes(table):
    yield table
    for child in table.get_children():
        yield from scopes(child)


def undefined_names(source, filename):
    """The global names that some scope of `source` reads and that nothing in it binds."""
    if any(alias.name == "*" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
           for alias in node.names):
        return set()  # a star import binds names no table lists
    top = symtable.symtable(source, filename, "exec")
    bound = set(dir(builtins)) | MODULE_NAMES
    read = set()
    for table in scopes(top):
        module_level = table is top
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if module_level or symbol.is_declared_global():
                if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
                    bound.add(name)
            if symbol.is_referenced() and (module_level or symbol.is_global()):
                read.add(name)
    return read - bound


def test_the_check_finds_a_name_that_a_function_reads_but_nothing_binds():
    source = "import math\n\n\ndef f(x):\n    y = math.sqrt(x)\n    return poisoned(y), len(y)\n"
    assert undefined_names(source, "example.py") == {"poisoned"}
    assert undefined_names("from math import *\n\n\ndef f():\n    return sqrt(2)\n", "star.py") == set()
    assert undefined_names("def f():\n    global g\n    g = 1\n\n\ndef h():\n    return g\n", "g.py") == set()


@pytest.mark.parametrize("path", SOURCES, ids=str)
def test_every_name_a_module_reads_is_bound(path):
    assert SOURCES, "no Python sources found"
    assert undefined_names((ROOT / path).read_text(), str(path)) == set()
