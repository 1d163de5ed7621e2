"""Reproducible bug injection: enumerate single AST mutations of a solution and apply one.

A mutation replaces the exact source text of one expression (or augmented assignment) with
``ast.unparse`` of the mutated node, so the rest of the file keeps its formatting and the
bug is a small, local diff. Only code from line ``first_line`` on (the solution, not the
HumanEval prompt) is mutated.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import asdict, dataclass

BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Div, ast.Div: ast.FloorDiv,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}
#: Boundary slips (< vs <=) and flipped or negated tests.
COMPARES = {ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
            ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,),
            ast.NotIn: (ast.In,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,)}
KINDS = ("operator", "comparison", "off_by_one", "swap_args", "boolean", "negation")


@dataclass(frozen=True)
class Mutation:
    """One edit: the source span ``(line, col)``-``(end_line, end_col)`` (1-based lines, 0-based
    character columns) whose text ``original`` becomes ``replacement``."""

    kind: str
    line: int
    col: int
    end_line: int
    end_col: int
    original: str
    replacement: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        start = sum(len(x) for x in lines[: self.line - 1]) + self.col
        end = sum(len(x) for x in lines[: self.end_line - 1]) + self.end_col
        if source[start:end] != self.original:
            raise ValueError(f"mutation does not fit this source: expected {self.original!r} at line {self.line}")
        return source[:start] + self.replacement + source[end:]

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.kind} at line {self.line}: {self.original!r} -> {self.replacement!r}"


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    """ast gives UTF-8 byte offsets; convert to a character offset in that line."""
    return len(lines[lineno - 1].encode()[:byte_col].decode(errors="ignore"))


def _variants(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """The mutated copies of *node* (without its children mutated)."""
    out: list[tuple[str, ast.AST]] = []

    def variant(kind: str, change) -> None:
        new = copy.deepcopy(node)
        change(new)
        out.append((kind, new))

    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in BINOPS:
        variant("operator", lambda n: setattr(n, "op", BINOPS[type(node.op)]()))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARES:
        for op in COMPARES[type(node.ops[0])]:
            variant("comparison", lambda n, op=op: setattr(n, "ops", [op()]))
    elif isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) <= 1000:
        for delta in (1, -1):
            if node.value + delta >= 0:
                variant("off_by_one", lambda n, d=delta: setattr(n, "value", node.value + d))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        variant("boolean", lambda n: setattr(n, "value", not node.value))
    elif isinstance(node, ast.BoolOp):
        variant("boolean", lambda n: setattr(n, "op", ast.Or() if isinstance(node.op, ast.And) else ast.And()))
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        if ast.dump(node.args[0]) != ast.dump(node.args[1]):
            variant("swap_args", lambda n: n.args.__setitem__(slice(0, 2), [n.args[1], n.args[0]]))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("negation", copy.deepcopy(node.operand)))
    return out


def mutations(source: str, first_line: int = 1) -> list[Mutation]:
    """Every single mutation of *source* at or after *first_line*, in a fixed order."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    reference = ast.dump(tree)
    found: list[Mutation] = []
    seen: set[tuple] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) < first_line or not hasattr(node, "end_lineno"):
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            continue
        original = ast.get_source_segment(source, node)
        if original is None:
            continue
        for kind, new in _variants(node):
            replacement = ast.unparse(new)
            col = _char_col(lines, node.lineno, node.col_offset)
            end_col = _char_col(lines, node.end_lineno, node.end_col_offset)
            m = Mutation(kind, node.lineno, col, node.end_lineno, end_col, original, replacement)
            key = (m.line, m.col, m.end_line, m.end_col, replacement)
            if key in seen:
                continue
            try:
                if ast.dump(ast.parse(m.apply(source))) == reference:
                    continue
            except SyntaxError:
                continue
            seen.add(key)
            found.append(m)
    found.sort(key=lambda m: (m.line, m.col, m.kind, m.replacement))
    return found
