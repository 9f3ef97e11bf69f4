"""`solver.made_when_read`: a value is made when first read, once, and only then."""

from __future__ import annotations

from solver.made_when_read import MadeWhenRead, MadeWhenReadByKey


def test_an_item_is_made_when_first_read_and_kept() -> None:
    calls: list[int] = []
    squares = MadeWhenRead(4, lambda k: calls.append(k) or k * k)
    assert len(squares) == 4 and squares.made(2) is None and calls == []
    assert squares[2] == 4 and squares[2] == 4 and squares.made(2) == 4
    assert calls == [2]
    assert list(squares[1:3]) == [1, 4] and calls == [2, 1]
    assert list(squares) == [0, 1, 4, 9] and calls == [2, 1, 0, 3]


def test_a_keyed_value_is_made_from_its_object_when_first_read() -> None:
    calls: list[str] = []
    lengths = MadeWhenReadByKey({"a": "x", "b": "yyy"}, lambda text: calls.append(text) or len(text))
    assert list(lengths) == ["a", "b"] and len(lengths) == 2 and calls == []
    assert lengths["b"] == 3 and lengths.get("b") == 3 and lengths.get("z") is None
    assert calls == ["yyy"]
