"""The code a catalogue reads: a parsed source with the questions operators ask of it, and
the edits they make (applied by an `ast.NodeTransformer`, copy-on-write, then unparsed)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from judge.mutants.model import Operator
from judge.mutants.sites import SiteNames
from judge.pysource import parse, parse_expression

Replacement = ast.AST | list[ast.stmt]
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


@dataclass
class Site:
    """One place an operator applies: `anchor` says where, `edits` what changes there."""

    anchor: ast.AST
    edits: list[tuple[ast.AST, Replacement]]
    imports: tuple[str, ...] = field(default_factory=tuple)


class _Replace(ast.NodeTransformer):
    """Replaces nodes by identity, copy-on-write: a node with an edit below it is copied
    (shallowly, lists too) before its children change; every other node is shared with the
    tree as parsed, which stays as it was."""

    def __init__(self, table: dict[int, Replacement], on_path: set[int] | None = None):
        self.table = table
        self.on_path = on_path

    def visit(self, node: ast.AST) -> Any:
        if id(node) in self.table:
            return self.table[id(node)]
        if self.on_path is None:
            return self.generic_visit(node)
        if id(node) not in self.on_path:
            return node
        fresh = copy.copy(node)
        for name, value in ast.iter_fields(fresh):
            if isinstance(value, list):
                setattr(fresh, name, list(value))
        return self.generic_visit(fresh)


def detect_framework(tree: ast.AST) -> str:
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            tops.add(node.module.split(".")[0])
    for fw in ("flax", "torch", "jax"):
        if fw in tops:
            return fw
    return "numpy"


def name_of(node: ast.AST) -> str | None:
    """The last name of a callee or value: `np.sqrt` -> sqrt, `nn.Dense(4)` -> Dense."""
    if isinstance(node, ast.Call):
        return name_of(node.func)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def call_name(node: ast.AST) -> str | None:
    return name_of(node.func) if isinstance(node, ast.Call) else None


def keyword(call: ast.Call, *names: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg in names), None)


def same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def constant(node: ast.AST) -> float | None:
    """A numeric literal's value, with a unary minus, through a one-argument cast call."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = constant(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return constant(node.args[0])
    return None


def is_negative_infinity(node: ast.AST) -> bool:
    """-inf, -1e9 and the like (through a cast): what a mask puts where a score must vanish."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return is_negative_infinity(node.args[0])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip().lower() in ("-inf", "-infinity")
    value = constant(node)
    if value is not None:
        return value <= -1e4
    text = ast.unparse(node).replace(" ", "")
    return text.startswith("-") and ("inf" in text or ".min" in text) \
        or "finfo" in text and text.endswith(".min")


class Code:
    """A parsed source and the facts about it that operators share."""

    def __init__(self, source: str, framework: str | None = None):
        self.source = source
        self.tree = parse(source)
        self.framework = framework or detect_framework(self.tree)
        self.sites = SiteNames(source, self.tree)
        self.parent: dict[int, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
        self.functions = {n.name: n for n in ast.walk(self.tree)
                          if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.modules = {a.asname or a.name.split(".")[0] for n in ast.walk(self.tree)
                        if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        self._by_kind: dict[type[Any], list[Any]] = {}
        self._assigns: dict[int, list[ast.Assign]] = {}
        self.constants: dict[str, float] = {}
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                value = constant(stmt.value)
                if value is not None:
                    self.constants[stmt.targets[0].id] = value

    def nodes(self, kind: type[Any]) -> Iterator[Any]:
        """Every node of a kind, in source order (deterministic)."""
        if kind not in self._by_kind:
            found = [n for n in ast.walk(self.tree) if isinstance(n, kind)]
            self._by_kind[kind] = sorted(found, key=lambda n: (getattr(n, "lineno", 0),
                                                               getattr(n, "col_offset", 0)))
        yield from self._by_kind[kind]

    def calls(self, *names: str) -> Iterator[ast.Call]:
        for node in self.nodes(ast.Call):
            if call_name(node) in names:
                yield node

    def is_module(self, node: ast.AST) -> bool:
        """An imported module or a path in one: `np`, `jax.nn`, `torch.nn.functional`."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.modules

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while id(node) in self.parent:
            node = self.parent[id(node)]
            yield node

    def function_of(self, node: ast.AST) -> FunctionNode | None:
        for up in self.ancestors(node):
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                return up
        return None

    def scope_names(self, node: ast.AST) -> set[str]:
        """Parameter names of every function around `node` (a closure sees them all)."""
        names: set[str] = set()
        for up in self.ancestors(node):
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                a = up.args
                names.update(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
        return names

    def definition(self, name: ast.Name) -> ast.expr | None:
        """The value last assigned to `name` before it is read, in the same function."""
        scope: ast.AST = self.function_of(name) or self.tree
        if id(scope) not in self._assigns:
            self._assigns[id(scope)] = [n for n in ast.walk(scope) if isinstance(n, ast.Assign)]
        best: ast.Assign | None = None
        for node in self._assigns[id(scope)]:
            if node.lineno < name.lineno \
                    and any(isinstance(t, ast.Name) and t.id == name.id for t in node.targets) \
                    and (best is None or node.lineno > best.lineno):
                best = node
        return best.value if best is not None else None

    def expanded(self, expr: ast.AST, depth: int = 6, stop: str | None = None
                 ) -> Iterator[ast.AST]:
        """Every node of `expr` and, through the names it reads, of what they were (not
        through `stop`: a stream's earlier values are other sub-layers')."""
        seen: set[int] = set()
        todo: list[tuple[ast.AST, int]] = [(expr, depth)]
        while todo:
            node, left = todo.pop()
            for sub in ast.walk(node):
                if id(sub) in seen:
                    continue
                seen.add(id(sub))
                yield sub
                if left and isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) \
                        and sub.id != stop:
                    value = self.definition(sub)
                    if value is not None:
                        todo.append((value, left - 1))

    def reads(self, expr: ast.AST, name: str) -> bool:
        """Whether `expr` computes from `name`, directly or through earlier assignments."""
        return any(isinstance(n, ast.Name) and n.id == name
                   for n in self.expanded(expr, stop=name))

    def text(self, node: ast.AST) -> str:
        return ast.unparse(node)

    def apply(self, site: Site) -> str:
        """The source with `site`'s edits made (`self.tree` stays as parsed)."""
        on_path = {id(self.tree)}
        for old, _ in site.edits:
            on_path.update(id(up) for up in self.ancestors(old))
        table = {id(old): new for old, new in site.edits}
        result = _Replace(table, on_path).visit(self.tree)
        missing = [m for m in site.imports if not _imports(result, m)]
        at = _after_preamble(result)
        result.body[at:at] = [ast.Import(names=[ast.alias(name=m)]) for m in missing]
        return ast.unparse(result)


def _imports(tree: ast.Module, module: str) -> bool:
    return any(isinstance(s, ast.Import) and any(a.name == module and a.asname is None
                                                 for a in s.names) for s in tree.body)


def _after_preamble(tree: ast.Module) -> int:
    """Past the docstring and `from __future__` imports, where new imports may go."""
    at = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and at == 0:
            at = 1
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            at = tree.body.index(stmt) + 1
        else:
            break
    return at


def expr(text: str) -> ast.expr:
    """An expression from text (operators build their replacements this way)."""
    return parse_expression(text)


def framework_function(framework: str, name: str) -> tuple[str, str]:
    """A framework's own function, fully qualified, and the module to import for it."""
    if framework == "torch":
        path = {"gelu": "torch.nn.functional.gelu", "silu": "torch.nn.functional.silu",
                "relu": "torch.relu"}.get(name, f"torch.{name}")
        return path, "torch"
    if framework in ("jax", "flax"):
        if name in ("relu", "gelu", "silu", "softmax"):
            return f"jax.nn.{name}", "jax"
        return f"jax.numpy.{name}", "jax"
    return f"numpy.{name}", "numpy"


def rebuilt(node: ast.AST, edits: list[tuple[ast.AST, Replacement]]) -> ast.AST:
    """A copy of `node` with the edits that fall inside it made (for edits that nest)."""
    memo: dict[int, Any] = {}
    fresh = copy.deepcopy(node, memo)
    table = {id(memo[id(old)]): copy.deepcopy(new) for old, new in edits if id(old) in memo}
    result: ast.AST = _Replace(table).visit(fresh)
    return result


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(outer))


@dataclass(frozen=True)
class Rule:
    """An operator and where it applies in a source: `find` yields one `Site` per mutant."""

    operator: Operator
    find: Callable[[Code], Iterator[Site]]
