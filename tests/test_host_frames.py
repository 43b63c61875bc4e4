"""The host's settings (K), round (N) and restore (S) frames on the virtual
device (the firmware's App on fake hardware), logged through the host's own
link: ČAS 3.2 (both players check the limit), 4.1 and 6.1 (the round's basic
time and its gongs), 16.3 (play-out), İSTAVDER 2.3 (breaks) — docs/rules.md."""
from healthlog import without_health
from hallclock.link.hostlink import HostLink
from hallclock.link.logfile import LogWriter, read_records
from hallclock.vboard.vdev.runner import Runner, session_after
from hallclock_fw import protocol
from hallclock import hostframes
from hallclock_fw.events import BTN_START
from hallclock_fw.settings import format_text, parse

MIN = 60000
SCRABBLE = format_text("scrabble", parse("scrabble", []))
BACKGAMMON = "bank_s=600;match=7;score=0-0;per_point_s=150;delay_s=15;delay=simple"


class Table:
    """A virtual clock and a host link joined in memory; time in scenario ms."""

    def __init__(self, tmp_path, mode="scrabble", pairs=(), actions=()):
        self.runner = Runner(mode, parse(mode, list(pairs)), list(actions))
        self.path = str(tmp_path / "log.jsonl")
        self.writer = LogWriter(self.path)
        self.to_device = []
        self.host = HostLink(self.writer, self.to_device.append)

    def pump(self):
        self.host.feed(self.runner.take_output())
        for frame in self.to_device:
            self.runner.feed(frame)
        del self.to_device[:]

    def run_to(self, ms):
        """Every pass of the loop before ``ms``; the next pass is at ``ms``."""
        r = self.runner
        while r.ms < ms:
            before = r.ms
            r.step()
            self.pump()
            if r.ms == before:  # the session has ended: time goes on all the same
                r.ms = min(ms, before + 100)
        r.ms = ms

    def send(self, ms, frame):
        """``frame`` reaches the device at ``ms``; one pass takes it."""
        self.run_to(ms)
        r = self.runner
        r.feed(frame)
        while r.uart.waiting():  # a pass reads 64 bytes; a board wakes on input
            r.ms = ms
            r.step()
            self.pump()

    def records(self, event=None, session=None):
        """The rules' records (the clock's own health reports: tests/test_health.py)."""
        return [r for r in without_health(read_records(self.path))
                if (event is None or r["event"] == event)
                and (session is None or r["session"] == session)]

    def names(self):
        return [r["event"] for r in self.records()]


def press(t, name):
    return (t, "press", name)


# -- settings from the host (K) --------------------------------------------------
def test_settings_are_taken_before_the_first_move_and_logged(tmp_path):
    t = Table(tmp_path, actions=[press(20000, "B"), press(21000, "B")])
    text = "move_s=90;warn_s=30,10;round_min=30;round_warn_min=5"
    t.send(1000, hostframes.configure("scrabble", text))
    rec = t.records("settings")[0]
    assert rec["mode"] == "scrabble"
    assert rec["settings"] == {"move_s": 90, "warn_s": [30, 10], "round_min": 30,
                               "round_warn_min": 5}
    assert t.runner.app.core.limit_ms == 90000
    t.run_to(2000)
    assert [d.text for d in t.runner.displays] == [" 1:30", " 1:30"]  # the new limit
    # ČAS 3.2: the first press only closes the settings view; the second starts move 1
    t.run_to(30000)
    turns = t.records("turn")
    assert [(r["t_ms"], r["player"], r["limit_ms"]) for r in turns] == [(21000, "A", 90000)]


def test_settings_are_refused_while_a_game_runs_and_when_bad(tmp_path):
    t = Table(tmp_path, actions=[press(1000, "B")])
    t.send(500, hostframes.configure("scrabble", "move_s=0"))  # bad value
    t.send(5000, hostframes.configure("scrabble", SCRABBLE))  # A's move 1 runs
    refused = t.records("refused")
    assert [(r["what"], r["reason"]) for r in refused] == [
        ("settings", "bad_settings"), ("settings", "game_running")]
    assert refused[0]["player"] is None
    assert t.records("settings") == []
    t.send(6000, hostframes.configure("chess", SCRABBLE))
    assert t.records("refused")[-1]["reason"] == "bad_settings"


def test_settings_change_the_mode_and_the_hello(tmp_path):
    t = Table(tmp_path)
    t.send(1000, hostframes.configure("backgammon", BACKGAMMON))
    assert t.records("settings")[0]["mode"] == "backgammon"
    assert t.runner.app.core.bank == [600000, 600000]
    t.runner.feed(protocol.who())
    t.runner.step()
    out = t.runner.take_output()
    assert b"H 00000001 virtual-1 backgammon " in out


def test_settings_after_end_begin_a_new_game(tmp_path):
    t = Table(tmp_path, actions=[press(1000, "B"), (3000, "end", None)])
    t.run_to(4000)
    t.send(5000, hostframes.configure("duplicate", "move_s=120;announce_s=60,30"))
    assert t.names()[-2:] == ["end", "settings"]
    assert not t.runner.app.ended
    t.runner.app.press(BTN_START, t.runner.now())  # a new game in the same session
    t.run_to(6000)
    assert t.records("dup_start")[0]["limit_ms"] == 120000


# -- the round from the host (N) -----------------------------------------------------
def test_round_zero_is_the_start_signal(tmp_path):
    t = Table(tmp_path)
    t.send(1000, hostframes.round_number(3, 0))
    assert [r["event"] for r in t.records()][1:3] == ["round", "gong"]
    assert t.records("round")[0]["round"] == 3
    t.run_to(41 * MIN + 2000)
    gongs = [(r["t_ms"], r["kind"]) for r in t.records("gong")]
    assert gongs == [(1000, "start"), (1000 + 30 * MIN, "ten_minutes"),
                     (1000 + 40 * MIN, "end")]


def test_a_clock_that_joins_late_gives_the_gongs_still_ahead(tmp_path):
    t = Table(tmp_path)
    t.send(2000, hostframes.round_number(4, 12 * MIN + 34000))
    rnd = t.records("round")[0]
    assert (rnd["round"], rnd["elapsed_ms"]) == (4, 12 * MIN + 34000)
    t.run_to(30 * MIN)
    start = 2000 - (12 * MIN + 34000)  # the round's START on this clock's time line
    assert [(r["t_ms"], r["kind"]) for r in t.records("gong")] == [
        (start + 30 * MIN, "ten_minutes"), (start + 40 * MIN, "end")]


def test_a_clock_that_joins_after_the_end_gong_counts_the_play_out(tmp_path):
    t = Table(tmp_path, actions=[press(1000, "B")])
    t.send(5000, hostframes.round_number(4, 41 * MIN))
    assert t.records("gong") == []  # gongs already past are not given again
    assert [(r["step"], r["move"]) for r in t.records("playout")] == [("finish_round", 1)]


def test_a_round_starts_once(tmp_path):
    t = Table(tmp_path, actions=[press(500, "START")])
    t.send(1000, hostframes.round_number(2, 0))
    assert [(r["what"], r["reason"]) for r in t.records("refused")] == [
        ("round", "round_started")]
    assert len(t.records("gong")) == 1


def test_a_mode_without_round_gongs_logs_the_round(tmp_path):
    t = Table(tmp_path, mode="backgammon", pairs=["bank_s=600"])
    t.send(1000, hostframes.round_number(5, 0))
    assert t.records("round")[0]["round"] == 5 and t.records("gong") == []


# -- restore after a power loss (S) ----------------------------------------------------
def test_after_a_power_loss_the_end_gong_sounds_at_start_plus_40_min(tmp_path):
    # START at 1 s, B starts A's move 1 at 2 s; power lost at 25 min into move 13
    acts = [press(1000, "START"), press(2000, "B")]
    acts += [press(2000 + 60000 * k, "AB"[(k - 1) % 2]) for k in range(1, 13)]
    t = Table(tmp_path, actions=acts)
    t.run_to(25 * MIN)
    old = t.runner.app.core
    snap = old.snapshot(t.runner.now())
    assert snap[0] == 13 and snap[5] == 25 * MIN - 1000
    t.runner.reboot()  # dark; back at once (the outage is not timed here)
    t.pump()
    sid = session_after("00000001")
    t.send(25 * MIN + 500, hostframes.restore("scrabble", SCRABBLE, *snap))
    new = t.records(session=sid)
    assert [r["event"] for r in new][:3] == ["boot", "resume", "round"]
    assert new[1]["move"] == 13 and new[1]["limit_ms"] == snap[2]
    t.run_to(45 * MIN)
    # the new session's t_ms start at the reboot (25 min on the scenario's clock)
    ends = [25 * MIN + r["t_ms"] for r in t.records("gong", sid) if r["kind"] == "end"]
    tens = [25 * MIN + r["t_ms"] for r in t.records("gong", sid) if r["kind"] == "ten_minutes"]
    # both gongs were still ahead at the outage: START + 30 and + 40 min (the 0.5 s
    # between the snapshot and the restore is the outage, not counted here)
    assert tens == [1000 + 30 * MIN + 500] and ends == [1000 + 40 * MIN + 500]
    # a repeated S later changes nothing
    t.send(46 * MIN, hostframes.restore("scrabble", SCRABBLE, *snap))
    assert len(t.records("resume", sid)) == 1


def test_a_backgammon_restore_takes_both_banks(tmp_path):
    t = Table(tmp_path, mode="backgammon", pairs=["bank_s=600"])
    t.send(1000, hostframes.restore("backgammon", BACKGAMMON, 9, 1, 321000, 123000, 0, 1, 2, 0))
    res = t.records("resume")[0]
    assert (res["player"], res["move"], res["bank_ms"]) == ("B", 9, 123000)
    assert t.runner.app.core.bank == [321000, 123000]
    assert t.runner.app.core.breaks_used(0) == 1 and t.runner.app.core.breaks_used(1) == 2
