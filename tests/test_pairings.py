"""Players' names from the pairing program (``--pairings FILE``, contract 1.3,
issue 33 item 2): the CSV a pairing program exports, refused in one line when
it is bad (which line, what is wrong); the names wherever a table is shown —
the report's games, its claims and CSV, the round's report and CSV, the
referee console's cards and detail — shortened one way everywhere."""
import csv
import json
import threading
import urllib.request

import pytest

from conftest import run_cli

from hallclock.errors import BadInput
from hallclock.hall import referee as refconsole
from hallclock.hall.display import url_of
from hallclock.link.hostlink import Session, tag_round
from hallclock.link.logfile import read_records
from hallclock.scenario import parse_text
from hallclock.vboard import device as virtual
from hallclock.views import pairings
from hallclock_fw.settings import parse

# B's move 2 runs out of its 2 minutes (ČAS 10.2.6): a claim against B
GAME = """0 press START
1000 press B
30000 press A
200000 press B
230000 end
"""


def write(tmp_path, text, name="pairings.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return str(p)


@pytest.fixture(scope="module")
def round_log(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pairings")
    out = []
    for n, table in enumerate(("table-1", "table-2"), 1):
        raw = tmp / f"{table}.raw.jsonl"
        virtual.simulate(parse_text(GAME), "scrabble", parse("scrabble", []), str(raw),
                         clock=table)
        s = Session("x", table, "scrabble")
        for r in read_records(raw):
            if r["event"] == "gong" and r["kind"] == "start":
                s.round = 2
            tag_round(s, r)
            out.append(r)
    log = tmp / "round2.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in out))
    return str(log)


def test_a_pairing_programs_export_is_read(tmp_path):
    # semicolons, a BOM, columns in another order with one more, a round column
    path = write(tmp_path, "\ufeffRound;B;Table;A;rating\n"
                 "2;Petr Dvořák;1;Jana Nováková;1800\n"
                 ";Tomáš Novotný;table-2;Marie Svobodová;1700\n\n")
    p = pairings.load(path)
    assert p.names("table-1", 2) == ("Jana Nováková", "Petr Dvořák")
    assert p.names("table-01", 2) == ("Jana Nováková", "Petr Dvořák")  # by its number
    assert p.names("table-1", 3) is None  # that row is round 2's
    assert p.names("table-2", 7) == ("Marie Svobodová", "Tomáš Novotný")  # every round
    assert p.label("table-1", 2) == "Jana Nováková vs Petr Dvořák"


def test_a_long_name_is_shortened_one_way():
    assert pairings.short("Jana Nováková") == "Jana Nováková"
    assert pairings.short("Jana Marie Nováková-Dvořáková") == "J. M. Nováková-Dv…"
    assert pairings.short("Marie Louise Svobodová") == "M. L. Svobodová"
    assert len(pairings.short("x" * 40)) == pairings.NAME_MAX
    assert pairings.short("  Jana   Nováková ") == "Jana Nováková"


@pytest.mark.parametrize("text, words", [
    ("table,A\n1,Jana\n", "line 1: the header names table, a; it must name table, A and B "
                          "(missing: B)"),
    ("", "line 1: no header"),
    ("table,A,B\n", "a header but no table"),
    ("table,A,B\n1,Jana,Petr\n1,Eva,Karel\n", "line 3: table 1 is paired already on line 2"),
    ("table,A,B\n1,Jana\n", "line 2: 2 fields, the header has 3"),
    ("table,A,B\n1,,Petr\n", "line 2: no A"),
    ("round,table,A,B\nthree,1,Jana,Petr\n", "line 2: round 'three' is not a round number"),
    ("table,A,B\n1,Ja\x1bna,Petr\n", "line 2: a control character"),
])
def test_a_bad_file_is_refused_in_one_line(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(BadInput) as e:
        pairings.load(path)
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_not_utf8_and_missing_files_are_refused_by_the_command(tmp_path, round_log):
    bad = write(tmp_path, "table,A,B\n1,Jana,Petr\n2,Nov\xe1kov\xe1,Eva\n".encode("latin-1"),
                name="latin.csv")
    res = run_cli("report", round_log, "--pairings", bad)
    assert res.returncode == 2
    assert res.stderr.startswith("hallclock: ") and "line 3: not UTF-8" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not res.stdout
    res = run_cli("report", round_log, "--pairings", str(tmp_path / "none.csv"))
    assert res.returncode == 2 and "cannot read the pairings" in res.stderr


def test_the_report_names_the_players(tmp_path, round_log):
    path = write(tmp_path, "table,A,B\n1,Jana Nováková,Petr Dvořák\n"
                 "2,Jana Marie Nováková-Dvořáková,Eva Malá\n")
    out_csv = tmp_path / "moves.csv"
    res = run_cli("report", round_log, "--pairings", path, "--claims", "--csv", str(out_csv))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "table-1 · Jana Nováková vs Petr Dvořák · scrabble" in out
    assert "J. M. Nováková-Dv… vs Eva Malá" in out  # shortened as everywhere
    claims = out[out.index("claims:"):]
    assert "Jana Nováková vs Petr Dvořák" in claims
    rows = list(csv.DictReader(open(out_csv, encoding="utf-8")))
    t1 = [r for r in rows if r["clock"] == "table-1"]
    assert {(r["player"], r["name"]) for r in t1} == {("A", "Jana Nováková"),
                                                      ("B", "Petr Dvořák")}
    # without --pairings the CSV keeps the contract's columns
    plain = tmp_path / "plain.csv"
    assert run_cli("report", round_log, "--csv", str(plain)).returncode == 0
    assert "name" not in next(csv.reader(open(plain, encoding="utf-8")))


def test_the_round_report_names_the_players(tmp_path, round_log):
    path = write(tmp_path, "round,table,A,B\n2,1,Jana Nováková,Petr Dvořák\n"
                 "2,2,Eva Malá,Karel Veselý\n1,1,Someone Else,Another One\n")
    out_csv = tmp_path / "round.csv"
    res = run_cli("report", "--round", "2", round_log, "--pairings", path,
                  "--csv", str(out_csv))
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert "Jana Nováková vs Petr Dvořák" in out and "Eva Malá vs Karel Veselý" in out
    assert "Someone Else" not in out  # round 1's pairing
    over = out[out.index("overtimes"):]
    assert "B Petr Dvořák" in over and "B Karel Veselý" in over
    rows = list(csv.DictReader(open(out_csv, encoding="utf-8")))
    game = next(r for r in rows if r["kind"] == "game" and r["table"] == "table-1")
    assert game["text"].startswith("Jana Nováková vs Petr Dvořák; scrabble")


def test_the_console_shows_the_names(tmp_path, round_log):
    path = write(tmp_path, "table,A,B\n1,Jana Nováková,Petr Dvořák\n")
    log = tmp_path / "round2.jsonl"
    log.write_text(open(round_log, encoding="utf-8").read())
    srv = refconsole.make_server(str(log), "127.0.0.1", 0, token="t",
                                 pairings=pairings.load(path))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(url_of(srv) + "api/grid") as r:
            grid = json.load(r)
        players = {t["clock"]: t["players"] for t in grid["tables"]}
        assert players == {"table-1": "Jana Nováková vs Petr Dvořák", "table-2": ""}
        with urllib.request.urlopen(url_of(srv) + "api/table?clock=table-1") as r:
            assert json.load(r)["players"] == "Jana Nováková vs Petr Dvořák"
    finally:
        srv.shutdown()
        srv.server_close()
        srv.referee.close()
    res = run_cli("console", "--log", str(log), "--pairings", write(tmp_path, "x,y\n",
                                                                    name="bad.csv"))
    assert res.returncode == 2 and "bad.csv line 1" in res.stderr


def test_the_projector_shows_the_names(tmp_path, round_log):
    """hall-display --pairings: each table's players (this round's pairing,
    shortened as everywhere) in /state, for the table list and for --clock;
    a bad file is refused in one line naming the line, before the port is taken."""
    from hallclock.hall import display
    path = write(tmp_path, "round,table,A,B\n2,1,Jana Marie Nováková-Dvořáková,Petr Dvořák\n"
                 "1,2,Eva Malá,Karel Veselý\n")
    p = pairings.load(path)
    tail = display.LogTail(round_log)
    tail.pairings = p
    state = tail.state()
    players = {t["clock"]: t["players"] for t in state["tables"]}
    assert players == {"table-1": ["J. M. Nováková-Dv…", "Petr Dvořák"],
                       "table-2": None}  # table-2's pairing is round 1's
    srv = display.make_server(round_log, "127.0.0.1", 0, clock="table-1", pairings=p)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(url_of(srv) + "state") as r:
            one = json.load(r)
        assert one["view"] == "clock" and one["players"] == ["J. M. Nováková-Dv…",
                                                             "Petr Dvořák"]
    finally:
        srv.shutdown()
        srv.server_close()
    bad = write(tmp_path, "table;A;B\n1;Jana;Petr\n7;;Karel\n", name="bad.csv")
    res = run_cli("hall-display", "--log", round_log, "--http-port", "0", "--pairings", bad)
    assert res.returncode == 2 and not res.stdout
    assert res.stderr == f"hallclock: {bad} line 3: no A\n"
