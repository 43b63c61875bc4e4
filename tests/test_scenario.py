import pytest

from hallclock.errors import BadInput
from hallclock.scenario import parse_text


def test_contract_example_parses():
    acts = parse_text("# t_ms  action\n0 press START\n1500 press B\n\n47200 press A  # A\n300000 end\n")
    assert [(a.t_ms, a.action, a.arg) for a in acts] == [
        (0, "press", "START"), (1500, "press", "B"), (47200, "press", "A"), (300000, "end", None)]
    assert [a.line for a in acts] == [2, 3, 5, 6]


@pytest.mark.parametrize("text, where, words", [
    ("0 press A\n10 prass B\n20 end\n", "s.txt:2", "unknown action"),
    ("0 press A\nabc press B\n20 end\n", "s.txt:2", "not a whole number"),
    ("100 press A\n50 press B\n200 end\n", "s.txt:2", "comes before"),
    ("0 press X\n20 end\n", "s.txt:1", "unknown button"),
    ("0 press\n20 end\n", "s.txt:1", "takes 1 argument"),
    ("0 press A\n", "s.txt", "no 'end'"),
    ("0 end\n10 press A\n", "s.txt:2", "after 'end'"),
    ("-5 press A\n10 end\n", "s.txt:1", "negative"),
    ("0 hold A x\n10 end\n", "s.txt:1", "not a whole number"),
    ("", "s.txt", "no actions"),
])
def test_malformed_lines_name_file_and_line(text, where, words):
    with pytest.raises(BadInput) as err:
        parse_text(text, "s.txt")
    msg = str(err.value)
    assert msg.startswith(where + ":") or msg.startswith(where + " ")
    assert words in msg


def test_extra_actions():
    acts = parse_text("0 bounce a\n10 hold PAUSE 2000\n20 command GONG\n30 end\n")
    assert [(a.action, a.arg) for a in acts[:3]] == [
        ("bounce", "A"), ("hold", ("PAUSE", 2000)), ("command", "GONG")]
