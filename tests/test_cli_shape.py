"""The command line a director can guess (docs/contract.md, "The command
line"): commands grouped by the director's task in ``--help``, every flag
with a help line, one meaning per flag (contract 1.2: ``--port`` is always a
serial port), the old spellings answering with one line that names the new
one (exit 2), help that offers only what the command takes, and the shared
contract's command lines still parsing as written there."""
import argparse
import contextlib
import io
import re

import pytest

from hallclock import cli, cliopts
from hallclock.views.modes import hall_modes
from hallclock_fw.settings import MODES


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def all_parsers(parser=None, path=()):
    """(command words, parser) of every command and sub-command."""
    parser = parser or cli.build_parser()
    sub = subparsers(parser)
    if sub is None:
        yield path, parser
        return
    for name, p in sub.choices.items():
        yield from all_parsers(p, path + (name,))


COMMANDS = list(all_parsers())
TOP = subparsers(cli.build_parser()).choices


def test_every_command_declares_a_director_task():
    known = {k for k, _h in cliopts.GROUPS}
    for name, p in TOP.items():
        assert p.group in known, f"{name}: GROUP {p.group!r} is none of {sorted(known)}"


def test_help_lists_the_commands_under_their_tasks_in_the_days_order():
    code, out, _err = run(["--help"])
    assert code == 0
    headings = [h for _k, h in cliopts.GROUPS]
    at = [out.index(f"\n{h}:\n") for h in headings]
    assert at == sorted(at), "the tasks in the order of a director's day"
    assert cliopts.UNGROUPED not in out
    for name, p in TOP.items():
        # the command sits under its own task's heading, before the next one
        i = headings.index(dict(cliopts.GROUPS)[p.group])
        end = at[i + 1] if i + 1 < len(at) else len(out)
        assert re.search(rf"\n  {re.escape(name)} ", out[at[i]:end]), (name, p.group)
    assert max(len(line) for line in out.splitlines()) <= 80


def test_ungrouped_command_is_listed_apart():
    text = cliopts.group_listing([("a", "run", "x"), ("b", None, "y")])
    assert text.index("run the round:") < text.index(cliopts.UNGROUPED + ":") < text.index("  b")


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_flag_has_a_help_line(path, parser):
    renamed = {s for s, _n in cliopts.renamed_flags(parser)}
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or set(a.option_strings) & renamed:
            continue
        what = a.option_strings or [a.dest]
        assert a.help and a.help is not argparse.SUPPRESS and len(a.help) > 5, (path, what)


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_port_is_always_a_serial_port(path, parser):
    for a in parser._actions:
        if "--port" in a.option_strings and not isinstance(a, cliopts._Renamed):
            assert "serial port" in a.help, (path, a.help)
        if "--http-port" in a.option_strings:
            assert "HTTP port" in a.help


RENAMED = [
    (["console", "--log", "x.jsonl"], "--port", "8090", "--http-port"),
    (["hall-display", "--log", "x.jsonl"], "--port", "8080", "--http-port"),
    (["broker-config", "--hall", "h", "--clocks", "t1", "--out", "d"], "--port", "1884",
     "--broker-port"),
    (["demo"], "--out-dir", "d", "--out"),
    (["log", "--out", "x.jsonl"], "--clocks", "t1,t2", "--clock NAME"),
    (["hall", "--out", "x.jsonl"], "--hall-port", "/dev/ttyUSB0", "--hall-unit-port"),
    (["hall", "--out", "x.jsonl"], "--table-port", "/dev/ttyUSB1", "--port"),
]


@pytest.mark.parametrize("argv,old,value,new", RENAMED)
def test_an_old_spelling_names_the_new_one_in_one_line(argv, old, value, new, tmp_path,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    for tail in ([old, value], [f"{old}={value}"]):
        code, out, err = run(argv + tail)
        assert code == 2 and out == ""
        assert err == f"hallclock: {argv[0]} {old} is now called {new}" + err[len(
            f"hallclock: {argv[0]} {old} is now called {new}"):]
        assert err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir()), "nothing written"


def test_every_renamed_flag_is_tested():
    declared = {(p[0], old) for p, parser in COMMANDS for old, _n in cliopts.renamed_flags(parser)}
    assert declared == {(argv[0], old) for argv, old, _v, _n in RENAMED}


def test_renamed_flags_are_hidden_from_help():
    code, out, _err = run(["console", "--help"])
    assert code == 0 and "--http-port" in out
    assert not re.search(r"--port\b", out)


def test_help_offers_only_what_the_command_takes():
    seen = {}
    for path, parser in COMMANDS:
        for a in parser._actions:
            if a.choices and a.option_strings:
                seen.setdefault(a.option_strings[0], set()).update(a.choices)
    for path, parser in COMMANDS:
        for a in parser._actions:
            if not (a.choices and a.option_strings):
                continue
            for other in seen[a.option_strings[0]] - set(a.choices):
                assert not re.search(rf"\b{re.escape(other)}\b(?!-)", a.help), \
                    (path, a.option_strings, other)
    code, out, _err = run(["device", "--help"])
    assert code == 0 and not re.search(r"\bmicropython\b(?!-)", out)
    code, _out, err = run(["device", "--script", "s", "--port", "p", "--interpreter",
                           "micropython"])
    assert code == 2 and "invalid choice" in err


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_mode_help_names_exactly_the_modes_taken(path, parser):
    for a in parser._actions:
        if "--mode" not in a.option_strings:
            continue
        named = {m for m in MODES if re.search(rf"\b{m}\b", a.help)}
        taken = set(hall_modes()) if path == ("hall-simulate",) else set(MODES)
        assert named == taken, (path, a.help)


# The shared contract's command lines (../shared/contract.md 1.0-1.2), with
# values for their placeholders: they parse as written there.
CONTRACT_LINES = [
    "simulate --script F --out L --mode duplicate --set move_s=60 --interpreter micropython",
    "simulate --script F --out L --interpreter micropython-unix --heap-kib 120",
    "device --script F --port P --mode backgammon --set match=5 --set score=1-2",
    "device --script F --port P --interpreter micropython-unix --heap-kib 120",
    "log --port P --out L --exit-on-end",
    "report L --csv C",
    "demo",
    "broker-config --hall h --clocks t1,t2 --out D --broker-port 1884",
    "broker --dir D",
    "log --broker 127.0.0.1:1883 --hall h --credentials C --out L --exit-on-end",
    "device --broker 127.0.0.1:1883 --hall h --clock t1 --credentials C --script S",
    "hall-simulate --script S --out L --transport mqtt --broker 127.0.0.1:1883",
    "configure --port P1 --port P2 --clock t1 --clock t2 --mode scrabble --set move_s=90",
    "configure --broker 127.0.0.1:1883 --hall h --credentials C --mode duplicate",
    "round start --round 3 --port P1 --port P2",
    "round start --round 3 --broker 127.0.0.1:1883 --hall h --credentials C",
    "console --log L --http-port 8090",
    "console --broker 127.0.0.1:1883 --hall h --credentials C --http-port 8090",
    "hall-display --log L --http-port 8080",
    "rehearse --tables 2 --rounds 1 --mode scrabble --speed 60 --transport serial "
    "--faults none --plan F --pairings P --out D",
]


@pytest.mark.parametrize("line", CONTRACT_LINES)
def test_the_contracts_command_lines_parse(line):
    args = cli.build_parser().parse_args(line.split())
    assert callable(args.func)
    if "--http-port" in line:
        assert args.http_port == int(line.split("--http-port ")[1].split()[0])
    if "--broker-port" in line:
        assert args.broker_port == 1884


def test_http_ports_default_as_contract_12_says():
    p = cli.build_parser()
    assert p.parse_args(["console", "--log", "L"]).http_port == 8090
    assert p.parse_args(["hall-display", "--log", "L"]).http_port == 8080
    assert p.parse_args(["broker-config", "--hall", "h", "--clocks", "a", "--out", "D"]) \
        .broker_port == 1883
