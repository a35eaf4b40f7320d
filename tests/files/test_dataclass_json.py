"""The one JSON codec: a dataclass written and read back, and every wrong shape refused with
the dotted field named (a saved report or a build record may come from anyone)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import pytest

from builder.files.bounds import byte_count
from builder.files.dataclass_json import count, dump, field, load


@dataclass(frozen=True)
class Leaf:
    name: str
    bytes: int = field(check=byte_count)


@dataclass(frozen=True)
class Node:
    label: str
    kind: Literal["function", "overhead"]
    share: float
    leaves: tuple[Leaf, ...]
    children: list[Node] = field(default_factory=list, omit="empty")
    note: str | None = field(default=None, omit="none")
    renamed: bool = field(key="is-renamed", default=False, omit="default")
    extra: dict[str, int] = field(default_factory=dict)


def _tree() -> Node:
    child = Node("b", "overhead", 0.25, (Leaf("y", 2),), note="n", renamed=True)
    return Node("a", "function", 1.0, (Leaf("x", 1), Leaf("z", 0)), [child], extra={"k": 3})


def test_a_tree_round_trips_through_json_text() -> None:
    tree = _tree()
    text = json.dumps(dump(tree))
    assert load(Node, json.loads(text)) == tree


def test_keys_and_omissions_follow_the_metadata() -> None:
    data = dump(_tree())
    assert list(data) == ["label", "kind", "share", "leaves", "children", "extra"]
    child = data["children"][0]
    assert child["is-renamed"] is True and "renamed" not in child
    assert child["note"] == "n" and "children" not in child
    assert data["leaves"] == [{"name": "x", "bytes": 1}, {"name": "z", "bytes": 0}]


def test_unknown_keys_are_ignored_and_defaults_fill_absent_ones() -> None:
    node = load(Node, {"label": "a", "kind": "function", "share": 1, "leaves": [], "new": 1})
    assert node == Node("a", "function", 1.0, ())
    assert isinstance(node.share, float)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"label": 5}, "'label' is 5, not a string"),
        ({"share": "1"}, "'share' is '1', not a number"),
        ({"share": True}, "'share' is True, not a number"),
        ({"kind": "kernel"}, "'kind' is 'kernel', not one of 'function', 'overhead'"),
        ({"leaves": {}}, "'leaves' is {}, not a list"),
        ({"leaves": [{"name": "x"}]}, "'leaves[0].bytes' is missing"),
        ({"leaves": [{"name": "x", "bytes": -1}]}, "'leaves[0].bytes' is -1, not a byte count"),
        ({"leaves": [{"name": "x", "bytes": True}]}, "'leaves[0].bytes' is True, not an integer"),
        ({"children": [{"label": "c"}]}, "'children[0].kind' is missing"),
        ({"extra": {"k": "v"}}, "'extra.k' is 'v', not an integer"),
        ({"note": 1}, "'note' is 1, not a string"),
    ],
)
def test_a_wrong_value_names_its_dotted_field(change: dict[str, object], message: str) -> None:
    data = dump(_tree()) | change
    with pytest.raises((TypeError, ValueError)) as caught:
        load(Node, data)
    assert str(caught.value) == message


def test_the_place_of_a_document_prefixes_its_fields() -> None:
    with pytest.raises(TypeError, match=r"^'source\.leaves' is 3, not a list$"):
        load(Node, {"label": "a", "kind": "function", "share": 0, "leaves": 3}, "source")
    with pytest.raises(TypeError, match=r"^'source' is \[\], not an object$"):
        load(Node, [], "source")


def test_a_long_wrong_value_is_shown_briefly() -> None:
    with pytest.raises(TypeError) as caught:
        load(Leaf, {"name": ["x" * 1000], "bytes": 1})
    assert len(str(caught.value)) < 100


@dataclass(frozen=True)
class Files:
    """A model with a figure it derives (written in its place, never read back) and a field
    that is no part of its document."""

    path: str
    total: int = count(init=False, default=0)
    sizes: list[int] = field(default_factory=list)
    scratch: str = field(omit="always", default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", sum(self.sizes))


def test_a_derived_field_is_written_in_place_and_recomputed_on_reading() -> None:
    files = Files("w", sizes=[3, 4], scratch="kept out")
    assert list(dump(files).items()) == [("path", "w"), ("total", 7), ("sizes", [3, 4])]
    edited = load(Files, {"path": "w", "total": 99, "sizes": [1, 2]})
    assert edited.total == 3 and edited.scratch == ""
    assert load(Files, {"path": "w", "sizes": [5]}).total == 5


def test_a_derived_field_of_the_wrong_type_is_still_refused() -> None:
    with pytest.raises(ValueError, match="'total' is -1, not a byte count"):
        load(Files, {"path": "w", "total": -1})
    with pytest.raises(TypeError, match="'total' is 'x', not an integer"):
        load(Files, {"path": "w", "total": "x"})


@dataclass(frozen=True)
class Shelf:
    """A model that writes a part otherwise than it holds it: its leaves as their names."""

    label: str
    leaves: list[Leaf] = field(
        write=lambda shelf: [leaf.name for leaf in shelf.leaves], omit="empty", default_factory=list
    )


def test_a_written_field_is_written_by_its_function_and_never_read_back() -> None:
    shelf = Shelf("s", [Leaf("x", 1), Leaf("y", 2)])
    assert dump(shelf) == {"label": "s", "leaves": ["x", "y"]}
    assert dump(Shelf("t")) == {"label": "t"}  # omission applies to what is written
    # the document's shape is not the model's: a reader makes the part again (here: nothing)
    assert load(Shelf, {"label": "s", "leaves": ["x", "y"]}) == Shelf("s")
    assert load(Shelf, {"label": "s", "leaves": 5}) == Shelf("s")
