"""List AutoRubric's public names and their signatures, read from its released wheel.

Writes ``tests/data/autorubric_api.json``: for every name in the ``__all__`` of ``autorubric``,
``autorubric.graders``, ``autorubric.meta`` and ``autorubric.metrics``, what it is
(``function``, ``class``, ``enum``, ``alias`` or ``value``) and, for a callable, its parameters
in order (name, kind, whether required, and the default's source text).

``--check`` compares autorubric-local with that file (:func:`gaps`) and prints each gap and the
counts; ``--write-gaps`` records the gaps in ``tests/data/autorubric_api_gaps.txt``, the list
``tests/test_autorubric_parity.py`` holds the package to (issue 53): a gap closed or a new one
fails the test until the file says so.

The wheel is read, never imported (its dependencies need not be installed): names are followed
through ``from ... import`` to the module that defines them and read from its syntax tree. A
class's parameters are its ``__init__``'s, or its annotated fields (a dataclass, a pydantic
model, a ``TypedDict``), those inherited from the package's own classes included; a field is
required when it has no default (``Field(...)`` without ``default``/``default_factory`` counts
as none).

Usage:

    python scripts/autorubric_api.py                      # pip-downloads autorubric==1.6.1
    python scripts/autorubric_api.py --wheel autorubric-1.6.1-py3-none-any.whl
    python scripts/autorubric_api.py --check [--write-gaps]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "autorubric_api.json"
GAPS = REPO / "tests" / "data" / "autorubric_api_gaps.txt"
VERSION = "1.6.1"
MODULES = ("autorubric", "autorubric.graders", "autorubric.meta", "autorubric.metrics")


class Package:
    """The wheel's Python sources, by dotted module name."""

    def __init__(self, wheel: Path) -> None:
        self.sources: dict[str, str] = {}
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("autorubric/") and name.endswith(".py"):
                    module = name[:-3].replace("/", ".")
                    module = module.removesuffix(".__init__")
                    self.sources[module] = archive.read(name).decode("utf-8")
        self.trees = {module: ast.parse(text) for module, text in self.sources.items()}

    def is_package(self, module: str) -> bool:
        return any(other.startswith(module + ".") for other in self.sources)

    def absolute(self, module: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        base = module if self.is_package(module) else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        return f"{base}.{node.module}" if node.module else base

    def all_names(self, module: str) -> list[str]:
        for node in self.trees[module].body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                    for t in node.targets):
                return list(ast.literal_eval(node.value))
        raise SystemExit(f"{module} has no __all__")

    def find(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST]:
        """The module that defines ``name`` (following imports) and its definition node."""
        if depth > 10:
            raise SystemExit(f"import cycle at {module}.{name}")
        tree = self.trees[module]
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return module, node
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                return module, node
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return module, node
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self.absolute(module, node)
                        if source in self.sources:
                            return self.find(source, alias.name, depth + 1)
        raise SystemExit(f"cannot find {name} from {module}")


def parameters(func: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[dict[str, Any]]:
    args = func.args
    out: list[dict[str, Any]] = []
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if skip_self and index == 0:
            continue
        kind = "positional_only" if arg in args.posonlyargs else "positional_or_keyword"
        out.append(_param(arg.arg, kind, default))
    if args.vararg is not None:
        out.append({"name": args.vararg.arg, "kind": "var_positional", "required": False, "default": None})
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append(_param(arg.arg, "keyword_only", default))
    if args.kwarg is not None:
        out.append({"name": args.kwarg.arg, "kind": "var_keyword", "required": False, "default": None})
    return out


def _param(name: str, kind: str, default: ast.expr | None) -> dict[str, Any]:
    return {"name": name, "kind": kind, "required": default is None,
            "default": None if default is None else ast.unparse(default)}


def _field_default(value: ast.expr | None) -> tuple[bool, str | None]:
    """(required, default source) of an annotated class field."""
    if value is None:
        return True, None
    if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in ("Field", "field"):
        for keyword in value.keywords:
            if keyword.arg in ("default", "default_factory"):
                return False, ast.unparse(keyword.value)
        if value.args and not (isinstance(value.args[0], ast.Constant) and value.args[0].value is Ellipsis):
            return False, ast.unparse(value.args[0])
        return True, None
    return False, ast.unparse(value)


def _fields(package: Package, module: str, node: ast.ClassDef, depth: int = 0) -> list[dict[str, Any]]:
    """The annotated fields of a class without ``__init__``, those it inherits from classes of
    the package first (a dataclass's or pydantic model's field order); a field the class
    declares again replaces the inherited one in its place."""
    inherited: list[dict[str, Any]] = []
    for base in node.bases:
        name = ast.unparse(base).split(".")[-1].split("[")[0]
        try:
            where, found = package.find(module, name)
        except SystemExit:  # a class from outside the package (BaseModel, Generic, ...)
            continue
        if isinstance(found, ast.ClassDef) and depth < 10:
            inherited += _fields(package, where, found, depth + 1)
    own = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            annotation = ast.unparse(item.annotation)
            # ``_: KW_ONLY`` is a dataclass's marker that the fields after it are keyword-only,
            # not a field (AutoRubric's DecisionModelConfig)
            if "ClassVar" in annotation or annotation.split(".")[-1] == "KW_ONLY" or item.target.id == "model_config":
                continue
            required, default = _field_default(item.value)
            own.append({"name": item.target.id, "kind": "keyword_only", "required": required, "default": default})
    names = {field["name"]: field for field in own}
    merged = [names.pop(field["name"], field) for field in inherited]
    return merged + [field for field in own if field["name"] in names]


def describe(package: Package, module: str, node: ast.AST) -> dict[str, Any]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {"kind": "function", "module": module, "async": isinstance(node, ast.AsyncFunctionDef),
                "parameters": parameters(node, skip_self=False)}
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
        if any(b in ("Enum", "StrEnum", "IntEnum") for b in bases):
            members = [t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
            return {"kind": "enum", "module": module, "members": members}
        init = next((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == "__init__"), None)
        if init is not None:
            return {"kind": "class", "module": module, "bases": bases, "parameters": parameters(init, skip_self=True)}
        return {"kind": "class", "module": module, "bases": bases, "parameters": _fields(package, module, node)}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        text = ast.unparse(value) if value is not None else ""
        alias = text.startswith(("Literal[", "Union[", "Callable[", "dict[", "list[")) or "|" in text
        return {"kind": "alias" if alias else "value", "module": module, "source": text}
    raise SystemExit(f"unexpected node {type(node).__name__} in {module}")


def gaps(api: dict[str, Any]) -> list[str]:
    """Where autorubric-local differs from the AutoRubric API in ``api`` (this script's JSON),
    one line a gap, sorted. ``autorubric.X`` is looked for as ``autorubric_local.X``.

    A name is missing, or of another kind (a class here where AutoRubric's is a function is
    fine when the call is compatible; a plain function where AutoRubric's is a class is not);
    an AutoRubric parameter is missing here, required here where it is optional there, at
    another position (a positional call would bind it to another parameter), or has another
    literal default; a parameter required here is not AutoRubric's; an enum member or a
    ``Literal`` value is missing. Extra optional parameters here are allowed.
    """
    import enum
    import importlib
    import inspect
    import typing

    found: list[str] = []
    for module, names in api["modules"].items():
        ours = module.replace("autorubric", "autorubric_local", 1)
        try:
            mod = importlib.import_module(ours)
        except ImportError:
            found += [f"missing {module}.{name}" for name in names]
            continue
        for name, spec in names.items():
            where = f"{module}.{name}"
            if not hasattr(mod, name):
                found.append(f"missing {where}")
                continue
            obj = getattr(mod, name)
            kind = spec["kind"]
            if kind == "enum":
                found += [f"member {where}.{m}: missing" for m in spec["members"] if not hasattr(obj, m)]
            elif kind == "alias" and spec["source"].startswith("Literal["):
                theirs = set(ast.literal_eval(spec["source"][len("Literal"):].replace("[", "(", 1)[:-1] + ",)"))
                values = {e.value for e in obj} if isinstance(obj, type) and issubclass(obj, enum.Enum) \
                    else set(typing.get_args(obj))  # a str enum here takes AutoRubric's strings
                if not theirs <= values:
                    found.append(f"alias {where}: values {sorted(theirs - values)} missing")
            elif kind in ("function", "class"):
                found += _signature_gaps(where, spec, obj, inspect)
    return sorted(found)


def _signature_gaps(where: str, spec: dict[str, Any], obj: Any, inspect: Any) -> list[str]:
    if spec["kind"] == "class" and not isinstance(obj, type):
        return [f"kind {where}: a class in AutoRubric, a {type(obj).__name__} here"]
    if "TypedDict" in spec.get("bases", []):
        keys = set(getattr(obj, "__annotations__", {}))
        return [f"param {where}({p['name']}): missing" for p in spec["parameters"] if p["name"] not in keys]
    if spec.get("async") and not inspect.iscoroutinefunction(obj):
        return [f"kind {where}: async in AutoRubric, not here"]
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError) as exc:
        return [f"signature {where}: none here ({exc})"]
    here = signature.parameters
    positional_here = [n for n, q in here.items() if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
    positional_there = [p["name"] for p in spec["parameters"] if p["kind"] in ("positional_only",
                                                                                "positional_or_keyword")]
    out = []
    for p in spec["parameters"]:
        if p["kind"] in ("var_positional", "var_keyword"):
            continue
        label = f"param {where}({p['name']})"
        q = here.get(p["name"])
        if q is None:
            out.append(f"{label}: missing")
            continue
        if not p["required"] and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            out.append(f"{label}: required here")
        if p["name"] in positional_there and positional_there.index(p["name"]) != (
                positional_here.index(p["name"]) if p["name"] in positional_here else -1):
            out.append(f"{label}: at another position")
        if p["default"] is not None and q.default is not q.empty:
            try:
                theirs = ast.literal_eval(p["default"])
            except (ValueError, SyntaxError):
                continue  # an enum member, a call: not compared
            if theirs != q.default:
                out.append(f"{label}: default {p['default']} there, {q.default!r} here")
    known = {p["name"] for p in spec["parameters"]}
    for name, q in here.items():
        if name not in known and q.default is q.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            out.append(f"param {where}({name}): required here, not AutoRubric's")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, default=None, help=f"autorubric-{VERSION} wheel (default: pip download)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare autorubric-local with the stored API")
    parser.add_argument("--write-gaps", action="store_true", help=f"with --check: write the gaps to {GAPS.name}")
    args = parser.parse_args()
    if args.check:
        api = json.loads(args.out.read_text(encoding="utf-8"))
        found = gaps(api)
        print("\n".join(found))
        total = sum(len(names) for names in api["modules"].values())
        missing = sum(line.startswith("missing ") for line in found)
        print(f"AutoRubric {api['autorubric_version']}: {total - missing} of {total} public names here; "
              f"{len(found) - missing} signature gaps in the names present")
        if args.write_gaps:
            GAPS.write_text("".join(line + "\n" for line in found), encoding="utf-8")
        return
    wheel = args.wheel
    if wheel is None:
        folder = Path(tempfile.mkdtemp(prefix="autorubric-wheel-"))
        subprocess.run([sys.executable, "-m", "pip", "download", f"autorubric=={VERSION}", "--no-deps", "-d",
                        str(folder), "-q"], check=True)
        wheel = next(folder.glob("autorubric-*.whl"))
    package = Package(wheel)
    api: dict[str, Any] = {"autorubric_version": VERSION, "wheel": wheel.name, "modules": {}}
    for module in MODULES:
        names = {}
        for name in package.all_names(module):
            where, node = package.find(module, name)
            names[name] = describe(package, where, node)
        api["modules"][module] = names
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(api, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    counts = ", ".join(f"{module}: {len(names)} names" for module, names in api["modules"].items())
    print(f"{args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}: {counts}")


if __name__ == "__main__":
    main()
