"""nvidia-smi's `-q` text and `-q -x` XML as a tree of lines, read from and written back to bytes.

Both faces are line-oriented: each line is a label (or tag) and maybe a value, nested by indent.
Reading keeps every byte around the values (padding, tabs, closing tags), so that a layout taken
from a real capture writes the capture's own bytes back: :func:`parse` then :func:`render` with
the capture's values reproduces the file. Writing another node's values through the same tree is
how gputop answers `nvidia-smi -q` in the layout of a real driver generation.

Lists (processes, MIG devices, supported clocks) are :class:`Run` s: one item per entry, each
an item template when rendered. Pure functions: text in, tree out, and back.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

Path = tuple[str, ...]

# Keys whose consecutive siblings are the entries of a list (XML tags and -q text labels).
ITEM_KEYS = frozenset({
    "process_info", "accounted_process_info", "mig_device", "supported_mem_clock",
    "supported_graphics_clock", "MIG Device", "#item",
})
# -q text lists whose entries are not wrapped in a line of their own: a new entry starts at
# every repeat of this first label (the Processes section of `nvidia-smi -q`).
TEXT_GROUPS = {"Processes": "GPU instance ID"}
NONE_TEXT = "None"  # what -q text prints for an empty list, and XML inside <mig_devices>
# The lists of a GPU block: (XML?, the path of the node that holds the entries) -> the entries'
# key. The -q text's MIG devices stand right in the GPU block, after "MIG Mode".
LISTS: dict[tuple[bool, Path], str] = {
    (False, ("Processes",)): "#item",
    (False, ()): "MIG Device",
    (True, ("processes",)): "process_info",
    (True, ("accounted_processes",)): "accounted_process_info",
    (True, ("mig_devices",)): "mig_device",
    (True, ("supported_clocks",)): "supported_mem_clock",
}
_MIG_AFTER = "MIG Mode"  # where -q text puts MIG devices a template has none of

_TEXT_VALUE = re.compile(r"^( *)(\S.*?) *:(?: |$)")
_XML_LEAF = re.compile(r"^(\s*)<(\w+)((?: [^>]*)?)>(.*)</\2>$")
_XML_OPEN = re.compile(r"^(\s*)<(\w+)((?: [^>]*?)?)(/?)>$")
_XML_CLOSE = re.compile(r"^(\s*)</(\w+)>$")
_XML_ATTR = re.compile(r'^( id=")([^"]*)(")$')


class DocumentError(ValueError):
    """Text that is not an nvidia-smi `-q` or `-q -x` document."""


@dataclass
class Node:
    """One line and what is nested under it.

    ``head + value + tail`` is the line (``value`` None: a line with no value, such as a section
    title or a static line, is ``head`` alone); ``close`` is the line that ends an XML section."""

    key: str  # label or tag; "" for a static line (banner, blank, XML prolog)
    head: str
    value: str | None = None
    tail: str = ""
    close: str | None = None
    children: list[Node | Run] = field(default_factory=list)

    def child(self, key: str) -> Node | Run | None:
        for c in self.children:
            if c.key == key:
                return c
        return None


@dataclass
class Run:
    """The consecutive entries of a list; an item is a Node (or a group node, key "#item")."""

    key: str
    items: list[Node]


@dataclass
class Document:
    xml: bool
    head: list[Node]  # before the first GPU: banner, time stamp, driver, attached GPUs
    gpus: list[Node]
    gap: list[str]  # the lines between two GPU blocks (a blank line)
    last_gap: list[str]  # the lines after the last one (some captures end without)
    tail: list[str]  # after the last GPU's gap: XML's closing root tag
    newline: bool = True  # the last line ends with one (a file cut from a page may not)


class Source(Protocol):
    """The values a document is written with, by path below the node being written."""

    def value(self, path: Path) -> str | None:
        """The value at ``path``, or None where the node does not report it (written N/A)."""

    def items(self, path: Path) -> Sequence[Source] | None:
        """The entries of the list at ``path`` (its Run's key last); None where unknown."""


# ---------------------------------------------------------------- reading


def is_xml(text: str) -> bool:
    return text.lstrip().startswith("<?xml") or text.lstrip().startswith("<nvidia_smi_log")


def parse(text: str) -> Document:
    """Read `-q` text or `-q -x` XML. Raises DocumentError for anything else."""
    lines = text.split("\n")
    newline = bool(lines) and lines[-1] == ""
    if newline:
        lines.pop()  # the final newline ends the last line; it is not a line of its own
    doc = _parse_xml(lines) if is_xml(text) else _parse_text(lines)
    doc.newline = newline
    return doc


def _split_gpus(nodes: list[Node], gpu_key: str, xml: bool) -> Document:
    head: list[Node] = []
    gpus: list[Node] = []
    gaps: list[list[str]] = []
    i = 0
    while i < len(nodes) and nodes[i].key != gpu_key:
        head.append(nodes[i])
        i += 1
    while i < len(nodes) and nodes[i].key == gpu_key:
        gpus.append(nodes[i])
        i += 1
        blanks = []
        while i < len(nodes) and nodes[i].key == "" and nodes[i].head.strip() == "":
            blanks.append(nodes[i].head)
            i += 1
        gaps.append(blanks)
    tail = [n.head for n in nodes[i:]]
    if not gpus:
        raise DocumentError("no GPU block (expected a `GPU <bus id>` line or a <gpu> element)")
    return Document(xml=xml, head=head, gpus=gpus, gap=gaps[0], last_gap=gaps[-1], tail=tail)


def _parse_text(lines: list[str]) -> Document:
    if not any(line.strip() == "==============NVSMI LOG==============" for line in lines[:3]):
        raise DocumentError("not `nvidia-smi -q` output (no NVSMI LOG banner)")
    root = Node("", "")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for line in lines:
        if not line.strip():
            node = Node("", line)
            stack[1:] = []
            root.children.append(node)
            continue
        indent = len(line) - len(line.lstrip(" "))
        m = _TEXT_VALUE.match(line)
        if m:
            node = Node(m.group(2), line[:m.end()], line[m.end():])
        elif indent == 0 and line.startswith("GPU "):
            node = Node("GPU", "GPU ", line[4:])
        else:
            node = Node(line.strip(), line)
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    _group(root, xml=False)
    return _split_gpus([n for n in root.children if isinstance(n, Node)], "GPU", xml=False)


def _parse_xml(lines: list[str]) -> Document:
    root = Node("", "")
    stack = [root]
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("<?xml") or stripped.startswith("<!DOCTYPE"):
            stack[-1].children.append(Node("", line))
            continue
        if m := _XML_LEAF.match(line):
            stack[-1].children.append(Node(m.group(2), line[:m.start(4)], m.group(4),
                                           line[m.end(4):]))
        elif stripped == "</nvidia_smi_log>":
            stack[-1].children.append(Node("", line))
        elif m := _XML_CLOSE.match(line):
            if len(stack) == 1 or stack[-1].key != m.group(2):
                raise DocumentError(f"line {number}: </{m.group(2)}> closes nothing open")
            stack[-1].close = line
            stack.pop()
        elif m := _XML_OPEN.match(line):
            tag, attrs, selfclosing = m.group(2), m.group(3), m.group(4)
            if tag == "nvidia_smi_log":  # the root's lines are static; its children are ours
                stack[-1].children.append(Node("", line))
                continue
            a = _XML_ATTR.match(attrs) if attrs else None
            if a:  # <gpu id="…">: the bus id is the value
                node = Node(tag, line[:m.start(3)] + a.group(1), a.group(2),
                            a.group(3) + line[m.end(3):])
            else:
                node = Node(tag, line)
            stack[-1].children.append(node)
            if not selfclosing:
                stack.append(node)
        else:  # text inside a section: "None" in <mig_devices>
            stack[-1].children.append(Node("#text", line[:len(line) - len(line.lstrip())],
                                           stripped))
    if len(stack) != 1:
        raise DocumentError(f"<{stack[-1].key}> is never closed")
    _group(root, xml=True)
    return _split_gpus([n for n in root.children if isinstance(n, Node)], "gpu", xml=True)


def _group(node: Node, xml: bool) -> None:
    """Turn list entries into Runs, depth first."""
    for c in node.children:
        if isinstance(c, Node):
            _group(c, xml)
    first = TEXT_GROUPS.get(node.key) if not xml else None
    children = node.children
    if first is not None and children and children[0].key == first:
        items: list[Node] = []
        for c in children:
            if c.key == first:
                items.append(Node("#item", "", children=[]))
            items[-1].children.append(c)
        children = list(items)
    out: list[Node | Run] = []
    for c in children:
        if c.key in ITEM_KEYS and isinstance(c, Node):
            if out and isinstance(out[-1], Run) and out[-1].key == c.key:
                out[-1].items.append(c)
            else:
                out.append(Run(c.key, [c]))
        else:
            out.append(c)
    node.children = out


# ---------------------------------------------------------------- layouts


@dataclass
class Layout:
    """A driver generation's document: the first capture's lines, with each list's two forms
    (no entries; entries, with an entry's template) taken from whichever capture shows it."""

    doc: Document
    full: dict[Path, Node] = field(default_factory=dict)  # a list holder with entries
    empty: dict[Path, Node] = field(default_factory=dict)  # the same with none

    @property
    def gpu(self) -> Node:
        return self.doc.gpus[0]


def layout(docs: Sequence[Document], fallbacks: Sequence[Document] = ()) -> Layout:
    """The layout of ``docs[0]``; lists that none of ``docs`` shows take their forms from
    ``fallbacks`` (another generation's captures)."""
    first = docs[0]
    out = Layout(replace(first, gpus=[copy.deepcopy(first.gpus[0])]))  # ours to change
    xml = first.xml
    for doc in (*docs, *fallbacks):
        if doc.xml != xml:
            continue
        for gpu in doc.gpus:
            for (is_xml, path), key in LISTS.items():
                if is_xml != xml:
                    continue
                holder = _find(gpu, path)
                if holder is None:
                    continue
                run = holder.child(key)
                if isinstance(run, Run):
                    out.full.setdefault(path, _reindent(holder, doc, docs[0]))
                elif path:
                    out.empty.setdefault(path, _reindent(holder, doc, docs[0]))
    if not xml and (() in out.full) and not isinstance(out.gpu.child("MIG Device"), Run):
        run = out.full[()].child("MIG Device")
        kids = out.gpu.children
        at = next((i + 1 for i, c in enumerate(kids) if c.key == _MIG_AFTER), len(kids))
        kids.insert(at, run)  # type: ignore[arg-type]
    return out


def _find(node: Node, path: Path) -> Node | None:
    for key in path:
        found = node.child(key)
        if not isinstance(found, Node):
            return None
        node = found
    return node


def _indent_unit(doc: Document) -> str:
    for gpu in doc.gpus[:1]:
        for c in gpu.children:
            if isinstance(c, Node) and c.key:
                return c.head[: len(c.head) - len(c.head.lstrip())] or "\t"
    return "\t"


def _reindent(node: Node, source: Document, target: Document) -> Node:
    """``node`` from ``source`` with ``target``'s XML indent (a tab, or spaces in a capture a
    person re-indented); -q text keeps its own."""
    if not target.xml:
        return node
    src, dst = _indent_unit(source), _indent_unit(target)
    if src == dst:
        return node

    def re_(line: str | None) -> str | None:
        if line is None:
            return None
        body = line.lstrip()
        depth = (len(line) - len(body)) // max(1, len(src))
        return dst * depth + body

    def copy(n: Node | Run) -> Node | Run:
        if isinstance(n, Run):
            return Run(n.key, [copy(i) for i in n.items])  # type: ignore[misc]
        head = re_(n.head) if n.key != "#text" else dst * (len(n.head) // max(1, len(src)))
        return Node(n.key, head or "", n.value, n.tail, re_(n.close),
                    [copy(c) for c in n.children])

    return copy(node)  # type: ignore[return-value]


# ---------------------------------------------------------------- writing


def render(lay: Layout, head: Source, gpus: Sequence[Source],
           only: frozenset[str] | None = None) -> str:
    """Write ``lay`` with ``head``'s node values and one block per GPU source; ``only``: the
    GPU block's top-level keys to keep (`-d`), None for all."""
    doc = lay.doc
    out: list[str] = []
    for node in doc.head:
        _render(node, head, (), out, lay)
    for n, gpu in enumerate(gpus, 1):
        _render(lay.gpu, gpu, (), out, lay, root=True, only=only)
        out.extend(doc.last_gap if n == len(gpus) else doc.gap)
    out.extend(doc.tail)
    return "\n".join(out) + ("\n" if doc.newline else "")


def _line(node: Node, value: str | None) -> str:
    return node.head + ("N/A" if value is None else value) + node.tail


def _text_leaf(node: Node, width: int, value: str) -> str:
    label = node.head.rstrip()
    if label.endswith(":"):  # already a leaf line
        return node.head + value
    return f"{label:<{width}}: {value}"


def _leaf_form(node: Node, value: str, lay: Layout) -> str:
    if lay.doc.xml:
        return f"{node.head.rstrip()}{value}</{node.key}>"
    return _text_leaf(node, _width(lay), value)


def _width(lay: Layout) -> int:
    for c in lay.gpu.children:
        if isinstance(c, Node) and c.value is not None and c.key:
            return len(c.head) - 2
    return 38


def _render(node: Node, source: Source, parent: Path, out: list[str], lay: Layout,
            root: bool = False, only: frozenset[str] | None = None) -> None:
    """Write ``node`` with ``source``; a root (a GPU block, a list entry) is the source's own
    node, path (), and everything under it is found by the path from there."""
    if node.key == "":
        out.append(node.head)
        return
    path = () if root else parent + (node.key,)
    key = LISTS.get((lay.doc.xml, path)) if path else None
    if key is not None:
        _render_list(node, source, path, key, out, lay)
        return
    if node.value is not None:
        out.append(_line(node, source.value(path)))
    elif node.children and not root and (leaf := source.value(path)) is not None:
        # A section this node reports as one value ("Remapped Rows : N/A" with MIG on)
        out.append(_leaf_form(node, leaf, lay))
        return
    else:
        out.append(node.head)
    for child in node.children:
        if only is not None and child.key not in only:
            continue
        if isinstance(child, Run):
            _render_run(child, source, path, out, lay)
        else:
            _render(child, source, path, out, lay)
    if node.close is not None:
        out.append(node.close)


def _render_run(run: Run, source: Source, path: Path, out: list[str], lay: Layout) -> None:
    template = run.items[0]
    for entry in source.items(path + (run.key,)) or ():
        if template.key == "#item":  # a group of lines: each found from the entry
            for c in template.children:
                if isinstance(c, Node):
                    _render(c, entry, (), out, lay)
        else:
            _render(template, entry, (), out, lay, root=True)


def _render_list(node: Node, source: Source, path: Path, key: str, out: list[str],
                 lay: Layout) -> None:
    entries = source.items(path + (key,))
    xml = lay.doc.xml
    if entries is None or (not entries and path not in lay.empty):
        value = "N/A" if entries is None else NONE_TEXT
        if xml:
            opening = node.head.rstrip()
            if entries is None or opening.endswith("/>"):
                out.append(f"{opening[:-1].rstrip(' /')}>{value}</{node.key}>"
                           if entries is None else opening)
            else:
                out.append(opening)
                out.append(node.close or f"</{node.key}>")
        else:
            out.append(_text_leaf(node, _width(lay), value))
        return
    if not entries:
        _render_static(lay.empty[path], out)
        return
    full = lay.full.get(path, node)
    run = full.child(key)
    if not isinstance(run, Run):
        _render_static(lay.empty.get(path, node), out)  # no template for an entry: as captured
        return
    out.append(full.head.rstrip().removesuffix(":").rstrip() if not xml else full.head)
    for c in full.children:
        if isinstance(c, Run):
            _render_run(c, source, path, out, lay)
    if full.close is not None:
        out.append(full.close)


def _render_static(node: Node | Run, out: list[str]) -> None:
    if isinstance(node, Run):
        for item in node.items:
            _render_static(item, out)
        return
    if node.key == "#item":
        for c in node.children:
            _render_static(c, out)
        return
    out.append(node.head if node.value is None else node.head + node.value + node.tail)
    for c in node.children:
        _render_static(c, out)
    if node.close is not None:
        out.append(node.close)


# ---------------------------------------------------------------- a document's own values


class Captured:
    """A captured node's own values: the Source that writes a parsed document back unchanged."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def _find(self, path: Path) -> Node | Run | None:
        node: Node | Run | None = self.node
        for key in path:
            if not isinstance(node, Node):
                return None
            node = node.child(key)
        return node

    def value(self, path: Path) -> str | None:
        found = self._find(path)
        return found.value if isinstance(found, Node) else None

    def items(self, path: Path) -> Sequence[Source] | None:
        found = self._find(path)
        if isinstance(found, Run):
            return [Captured(i) for i in found.items]
        holder = self._find(path[:-1])
        if isinstance(holder, Node) and holder.value in (None, NONE_TEXT):
            return []  # the list is there, and empty
        return None


def head_source(doc: Document) -> Captured:
    """The document's own top-level values (time stamp, driver, attached GPUs)."""
    return Captured(Node("", "", children=list(doc.head)))


__all__ = ["LISTS", "Captured", "Document", "DocumentError", "Layout", "Node", "Path", "Run",
           "Source", "head_source", "is_xml", "layout", "parse", "render"]
