"""YAML documents as plain Python values plus a map from field path to (line, column).

PyYAML's `safe_load` forgets where things were and silently keeps the last of two
duplicate keys. We compose nodes instead, build the values ourselves, and record the
position of every key and value so a validation error can point at the exact spot.
Aliases are expanded under a node budget, which stops "billion laughs" files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from skyform.errors import SpecError

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 100_000  # after alias expansion
MAX_DEPTH = 64
MERGE_TAG = "tag:yaml.org,2002:merge"

Path = tuple[str | int, ...]

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Pos:
    """1-based line/column of a value, and of its key when it sits in a mapping."""

    line: int
    column: int
    key_line: int | None = None
    key_column: int | None = None


@dataclass
class Document:
    value: Any
    positions: dict[Path, Pos] = field(default_factory=dict)
    line: int = 1

    def pos(self, path: Path) -> Pos | None:
        """Position of `path`, or of its closest recorded ancestor."""
        for cut in range(len(path), -1, -1):
            found = self.positions.get(path[:cut])
            if found is not None:
                return found
        return None


def compose_documents(text: str, label: str) -> list[Document]:
    """All documents of a YAML stream; empty documents are dropped."""
    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise SpecError(
            f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB",
            "A task file holds configuration, not data; move data to file_mounts.",
            path=label,
        )
    loader = _Loader(text)
    nodes: list[Node] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                nodes.append(node)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, label, text) from None
    except yaml.YAMLError as exc:  # e.g. a reader error on control characters
        raise SpecError(f"not valid YAML: {exc}", path=label) from None
    finally:
        loader.dispose()
    docs = []
    for node in nodes:
        builder = _Builder(label)
        value = builder.build(node, (), 0)
        if value is None:
            continue
        docs.append(Document(value, builder.positions, node.start_mark.line + 1))
    return docs


def _syntax_error(exc: yaml.MarkedYAMLError, label: str, text: str) -> SpecError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "malformed YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = None
    lines = text.splitlines()
    line = lines[mark.line] if mark and mark.line < len(lines) else ""
    if "\t" in problem or "tab" in problem or "\t" in line[: (mark.column + 1 if mark else 0)]:
        hint = "YAML indentation must use spaces, not tabs."
    elif "mapping values are not allowed" in problem:
        hint = "Quote values that contain ': ' or indent nested keys consistently."
    return SpecError(
        f"YAML syntax error: {problem}{context}",
        hint,
        path=label,
        line=mark.line + 1 if mark else None,
        column=mark.column + 1 if mark else None,
    )


class _Builder:
    def __init__(self, label: str) -> None:
        self.label = label
        self.positions: dict[Path, Pos] = {}
        self.count = 0
        self.active: set[int] = set()
        self.top_key: dict[Path, Node] = {}  # to blame the top-level key of an alias bomb
        self.scalars = SafeConstructor()

    def fail(self, node: Node, message: str, hint: str | None = None) -> SpecError:
        mark = node.start_mark
        return SpecError(message, hint, path=self.label, line=mark.line + 1, column=mark.column + 1)

    def build(self, node: Node, path: Path, depth: int, key: Node | None = None) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                self.top_key.get(path[:1], node),
                f"the YAML expands to more than {MAX_NODES} values",
                "Anchors and aliases (&x / *x) multiply content; write the values out.",
            )
        if depth > MAX_DEPTH:
            raise self.fail(node, f"the YAML nests deeper than {MAX_DEPTH} levels")
        if path not in self.positions:
            mark = node.start_mark
            key_mark = key.start_mark if key is not None else None
            self.positions[path] = Pos(
                mark.line + 1,
                mark.column + 1,
                key_mark.line + 1 if key_mark else None,
                key_mark.column + 1 if key_mark else None,
            )
        if id(node) in self.active:
            raise self.fail(node, "a YAML alias refers to itself (recursive anchor)")
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [
                    self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)
                ]
            if isinstance(node, MappingNode):
                return self.mapping(node, path, depth)
        finally:
            self.active.discard(id(node))
        raise self.fail(node, "unsupported YAML node")

    def scalar(self, node: ScalarNode) -> Any:
        try:
            return self.scalars.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise self.fail(node, f"cannot read this YAML value: {problem}") from None

    def key_of(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            raise self.fail(node, "mapping keys must be plain scalars, not lists or mappings")
        value = self.scalar(node)
        return value if isinstance(value, str) else str(value)

    def mapping(self, node: MappingNode, path: Path, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merged.extend(self._merge_sources(value_node))
                continue
            key = self.key_of(key_node)
            if key in result:
                where = (*path, key)
                first = self.positions[where]
                raise self.fail(
                    key_node,
                    f"duplicate key '{key}' (first defined on line {first.key_line})",
                    "YAML would silently keep only the last value; remove one of them.",
                )
            if not path:
                self.top_key[(key,)] = key_node
            result[key] = self.build(value_node, (*path, key), depth + 1, key_node)
        for source in merged:  # `<<: *anchor` fills in keys not given explicitly
            for key_node, value_node in source.value:
                key = self.key_of(key_node)
                if key not in result:
                    result[key] = self.build(value_node, (*path, key), depth + 1, key_node)
        return result

    def _merge_sources(self, node: Node) -> list[MappingNode]:
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise self.fail(node, "'<<' (merge key) needs a mapping or a list of mappings")
