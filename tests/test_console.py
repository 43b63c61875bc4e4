"""The link is the MicroPython console, and the virtual device's console is as
strict as the ESP32's (docs/micropython.md "The console"): a 0x03 raises
KeyboardInterrupt in the firmware unless the keyboard interrupt is off, and
input beyond the console's 259-byte ring is dropped.  The firmware runs the
clock with the keyboard interrupt off, so line noise of every byte value
never stops the clock or loses an event, and a burst beyond the ring costs
only resends.  Over a slow line the device's resend and hello timers run in
real time (docs/contract.md "Extensions": simulated time never outruns the
link)."""
import os
import signal
import sys

import pytest

from hallclock.errors import HallclockError
from hallclock.vboard.vdev.fakes import CONSOLE_HOLDS, CTRL_C, FakeUART
from hallclock.vboard.vdev.runner import HANDED_BACK, RUNNING, Runner
from hallclock_fw import protocol
from hallclock import hostframes
from hallclock_fw.settings import parse

sys.path.insert(0, os.path.dirname(__file__))
from faultproxy import Faults, wait_for  # noqa: E402
from test_faults import SCRIPT, SID, _actions, reference, rig  # noqa: E402,F401 (fixtures)


# -- the console itself ---------------------------------------------------------
def test_console_ring_holds_259_bytes_and_drops_the_rest_silently():
    """ports/esp32/mphalport.c: a 260-byte stdin ring; py/ringbuf.h keeps one
    slot free; the UART interrupt ignores a refused byte."""
    c = FakeUART()
    c.kbd_intr(-1)
    c.feed(bytes(range(256)) + b"x" * 100)
    assert c.any() == CONSOLE_HOLDS == 259
    assert c.dropped == 356 - 259
    buf = bytearray(64)
    got = bytearray()
    while c.any():
        got += buf[:c.readinto(buf)]
    assert bytes(got) == (bytes(range(256)) + b"xxx")  # the oldest kept, in order
    c.feed(b"y" * 300)  # room again once read
    assert c.any() == 259


def test_ctrl_c_is_a_keyboard_interrupt_while_the_interrupt_is_on():
    c = FakeUART()
    assert c.intr_char == CTRL_C  # a board boots with Ctrl-C on
    c.feed(b"ab\x03cd")
    with pytest.raises(KeyboardInterrupt):
        c.any()  # the firmware's next call into the console
    assert c.any() == 4  # the 0x03 itself is never stored
    c.kbd_intr(-1)
    c.feed(b"\x03")
    assert c.any() == 5


# -- the firmware on that console -------------------------------------------------
def _runner():
    return Runner("scrabble", parse("scrabble", []),
                  [(0, "press", "START"), (1000, "press", "B"), (60000, "end", None)],
                  sid="0000c0de")


def test_the_clock_runs_with_the_keyboard_interrupt_off():
    r = _runner()
    assert r.uart.intr_char == -1  # set by hw/device.make_app, as on the board
    for _ in range(20):
        r.feed(b"\x03")
        assert r.step() == RUNNING
    r.reboot()  # a reset turns it on; the firmware turns it off again at start
    assert r.uart.intr_char == -1


def test_a_clock_that_left_ctrl_c_on_stops_at_one_noisy_byte():
    """What the fix is for: ``C`` (0x43) with one bit flipped is 0x03."""
    r = _runner()
    r.uart.kbd_intr(CTRL_C)
    r.step()
    r.feed(bytes([ord("C") ^ 0x40]))
    with pytest.raises(KeyboardInterrupt):
        r.step()


def test_keyboard_interrupt_in_the_micropython_vm_too():
    from hallclock.vboard.device import make_runner
    r = make_runner("scrabble", parse("scrabble", []), [(0, "press", "START")],
                    interpreter="micropython")
    try:
        r.step()
        r.feed(b"\x03" * 3)
        assert r.step() == RUNNING  # the firmware turned it off in the VM as well
        r.vm.exec("runner.uart.kbd_intr(3)")
        r.feed(b"\x03")
        with pytest.raises(HallclockError) as exc:  # one line through the exit path
            r.step()
        assert exc.value.vm_exc.exc_type == "KeyboardInterrupt"
    finally:
        r.close()


def test_the_maintenance_frame_hands_the_console_back():
    """``M`` (CRC-checked, so noise cannot make it): the loop ends and Ctrl-C
    works again, for mpremote (docs/protocol.md "Maintenance")."""
    r = _runner()
    r.step()
    r.feed(hostframes.maintenance()[:-3] + b"00\n")  # a damaged M is noise
    assert r.step() == RUNNING and r.uart.intr_char == -1
    r.feed(hostframes.maintenance())
    assert r.step() == HANDED_BACK
    assert r.uart.intr_char == CTRL_C
    r.feed(b"\x03")
    with pytest.raises(KeyboardInterrupt):
        r.uart.any()


# -- over the line, with the real logger ---------------------------------------
@pytest.mark.parametrize("interpreter", ["cpython", "micropython", "micropython-unix"])
def test_noise_of_every_byte_value_never_stops_the_clock(rig, reference, interpreter):
    """Every value 0x00..0xff (Ctrl-C, Ctrl-D, raw and paste mode among them)
    arrives on the console between the host's frames; the log is the
    fault-free one and the device ran to its end."""
    r = rig(to_device=Faults(sweep=24), interpreter=interpreter)
    r.start_logger()
    r.start_device()
    r.check(reference)
    assert r.proxy.stats["swept"] >= 256


def test_a_burst_beyond_the_console_buffer_costs_only_resends(rig, reference):
    r = rig()
    r.proxy.cut_after(6)  # the line held after a few events: the clock is still mid-game
    r.start_logger()
    r.start_device()
    wait_for(r.proxy.is_cut, "the line held after 6 lines")
    burst = (protocol.who() + b"line noise \x00\xff\r\n" + hostframes.ack("00000bad", 3)) * 40
    assert len(burst) > 2 * CONSOLE_HOLDS
    r.proxy.inject("device", burst)
    wait_for(lambda: r.runner.uart.dropped > 0, "the console dropping what it cannot hold")
    r.proxy.uncut()
    r.check(reference)  # ... and the protocol recovered what mattered: the log is the reference
    assert r.proxy.stats["injected"] == len(burst)


@pytest.mark.parametrize("interpreter", ["cpython", "micropython", "micropython-unix"])
def test_slow_line_with_noise_and_a_killed_logger(rig, reference, interpreter):
    """9600 baud, noise both ways, the logger SIGKILLed once and restarted:
    the log is the fault-free one.  The device's link timers ran at a board's
    rate: it resent its events a few times, not hundreds of times."""
    noisy = Faults(drop=0.001, flip=0.001, noise=0.05)
    r = rig(to_host=noisy, to_device=noisy, baud=9600, seed=5, interpreter=interpreter)
    r.proxy.cut_after(10)
    r.start_logger()
    r.start_device()
    wait_for(r.proxy.is_cut, "the line held after 10 lines")
    r.logger.send_signal(signal.SIGKILL)
    r.logger.wait()
    r.proxy.uncut()
    r.start_logger()
    r.check(reference)
    lines = r.proxy.stats["lines_from_device"]
    assert lines < 4 * len(reference), (lines, len(reference))
