"""core/inputs.py's rules, called directly: where each boundary lies."""

import pytest

from core.errors import InvalidInput, PayloadTooLarge
from core.inputs import MAX_DEPTH, MAX_SAFE_INTEGER, MAX_VALUES, check_identifier, clean_json, load_json, parse_id


@pytest.mark.parametrize("ref, expected", [("12", 12), (" 12 ", 12), (7, 7), ("0", None), ("³", None), ("¹", None), ("١٢", None),
                                           ("1e3", None), ("-3", None), ("9" * 19, None), ("9" * 18, 10**18 - 1), (True, None), (None, None)])
def test_an_id_is_ascii_digits_within_a_database_integer(ref, expected):
    assert parse_id(ref) == expected


def test_integers_stop_at_the_safe_range():
    assert load_json(str(MAX_SAFE_INTEGER)) == MAX_SAFE_INTEGER
    assert load_json(str(-MAX_SAFE_INTEGER)) == -MAX_SAFE_INTEGER
    with pytest.raises(InvalidInput, match="too large"):
        load_json(str(MAX_SAFE_INTEGER + 1))


def test_floats_must_be_finite_but_may_be_large():
    assert load_json("1e300") == 1e300
    with pytest.raises(InvalidInput, match="too large"):
        load_json("-1e400")


def test_depth_and_size_limits_are_exact():
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(InvalidInput, match="nested deeper"):
        load_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(PayloadTooLarge, match="values"):
        load_json("[" + ",".join(["0"] * MAX_VALUES) + "]")


def test_clean_json_replaces_in_keys_and_values_at_every_depth_and_keeps_the_input():
    value = {"a\ud800": [{"b": "c\x00"}, "\udfff", 1, None], "ok": "é\x00"}
    assert clean_json(value) == {"a\ufffd": [{"b": "c\ufffd"}, "\ufffd", 1, None], "ok": "é\ufffd"}
    assert value["ok"] == "é\x00"


@pytest.mark.parametrize("value", ["a\x00", "\ud800", 3, ["a"]])
def test_an_identifier_is_refused_not_altered(value):
    with pytest.raises(InvalidInput):
        check_identifier(value, what="name", max_length=10)


def test_an_optional_identifier_may_be_absent_or_empty():
    assert check_identifier(None, what="cwd", max_length=10, required=False) is None
    assert check_identifier("", what="cwd", max_length=10, required=False) == ""
