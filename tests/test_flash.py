"""`make flash` and `make erase` end to end: the real esptool (pinned) against
PyPI esp32-mock-bootloader (pinned), a mock of the ESP32's ROM bootloader on a
pty, so esptool opens a serial device path exactly as it opens a DevKit's.

The image is one we build here the way ESP-IDF lays out a MicroPython
ESP32_GENERIC .bin: a bootloader image at 0x1000, a partition table at
0x8000 and an app image at 0x10000, merged into one file written at 0x1000.
The bootloader and the app are made by ``esptool elf2image`` from tiny ELF
files written by this module (the app with an ``esp_app_desc_t``, as
``esptool image-info`` expects of an app); their code is never run (the mock
runs nothing), so it is a few placeholder bytes.  What is written is read
back with ``esptool read-flash`` and compared byte for byte.
"""
import hashlib
import os
import select
import struct
import subprocess
import sys
import tty
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
ESPTOOL = os.path.join(BIN, "esptool")
MOCK = os.path.join(BIN, "esp32-mock-bootloader")
FLASH_ADDR = 0x1000


# -- a small, valid ESP32 image ------------------------------------------------------
def elf(sections, entry):
    """An ELF32 little-endian Xtensa executable with one PROGBITS section per
    (name, address, bytes) and a section-name table (what elf2image reads)."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _a, _d in sections) + b".shstrtab\0"
    body, placed = bytearray(), []
    for _n, _a, data in sections:
        placed.append(0x34 + len(body))
        body += data + b"\0" * (-len(data) % 4)
    shstr_off = 0x34 + len(body)
    body += names + b"\0" * (-len(names) % 4)
    shoff = 0x34 + len(body)
    shnum = len(sections) + 2  # the null section, ours, .shstrtab
    head = struct.pack("<16sHHLLLLLHHHHHH", b"\x7fELF\x01\x01\x01".ljust(16, b"\0"), 2, 0x5E, 1,
                       entry, 0, shoff, 0, 0x34, 0, 0, 0x28, shnum, shnum - 1)
    table = bytearray(0x28)
    name_at = 1
    for (name, addr, data), off in zip(sections, placed):
        table += struct.pack("<10L", name_at, 1, 6, addr, off, len(data), 0, 0, 4, 0)
        name_at += len(name) + 1
    table += struct.pack("<10L", name_at, 3, 0, 0, shstr_off, len(names), 0, 0, 1, 0)
    return head + bytes(body) + bytes(table)


def app_desc(project=b"hallclock-flash-test", version=b"1.0"):
    """esp_app_desc_t (256 bytes, magic 0xABCD5432), first in the app's DROM."""
    return struct.pack("<II8s32s32s16s16s32s32sHHB3s72s", 0xABCD5432, 0, b"", version, project,
                       b"00:00:00", b"Jan  1 2026", b"none", b"\0" * 32, 0, 0, 0, b"", b"")


def partition_table():
    """MicroPython ESP32_GENERIC's table: nvs, phy_init, factory app, vfs; MD5 row."""
    rows = [(1, 2, 0x9000, 0x6000, b"nvs"), (1, 1, 0xF000, 0x1000, b"phy_init"),
            (0, 0, 0x10000, 0x1F0000, b"factory"), (1, 0x81, 0x200000, 0x200000, b"vfs")]
    t = b"".join(struct.pack("<2sBBLL16sL", b"\xaa\x50", ty, sub, off, size, name, 0)
                 for ty, sub, off, size, name in rows)
    t += b"\xeb\xeb" + b"\xff" * 14 + hashlib.md5(t).digest()
    return t + b"\xff" * (0xC00 - len(t))


def esptool(*args, cwd=None, timeout=180):
    return subprocess.run([ESPTOOL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    d = tmp_path_factory.mktemp("image")
    boot = elf([(".dram0.rodata", 0x3FFF0000, bytes(range(64))),
                (".iram_loader.text", 0x40078000, b"\x06\xff\xff\0" * 8)], 0x40078000)
    app = elf([(".flash.appdesc", 0x3F400020, app_desc() + b"hallclock\0".ljust(64, b"\0")),
               (".iram0.text", 0x40080400, b"\x06\xff\xff\0" * 16)], 0x40080400)
    (d / "boot.elf").write_bytes(boot)
    (d / "app.elf").write_bytes(app)
    (d / "part.bin").write_bytes(partition_table())
    for name in ("boot", "app"):
        r = esptool("--chip", "esp32", "elf2image", "-o", name + ".bin", name + ".elf", cwd=d)
        assert r.returncode == 0, r.stdout + r.stderr
    r = esptool("--chip", "esp32", "merge-bin", "-o", "firmware.bin", "--target-offset",
                hex(FLASH_ADDR), hex(FLASH_ADDR), "boot.bin", "0x8000", "part.bin",
                "0x10000", "app.bin", cwd=d)
    assert r.returncode == 0, r.stdout + r.stderr
    info = esptool("--chip", "esp32", "image-info", "app.bin", cwd=d)
    assert info.returncode == 0, info.stderr
    assert "hallclock-flash-test" in info.stdout and "(valid)" in info.stdout
    return d / "firmware.bin"


# -- the mock bootloader ------------------------------------------------------------
def _mock(tmp_path, *args):
    """Start the mock (its flash: 4 MB, erased = 0xff, kept for the life of
    the process across esptool sessions); returns (process, endpoint)."""
    path_file = tmp_path / "mock.endpoint"
    proc = subprocess.Popen([MOCK, "run", "--chip", "esp32", "--port-file", str(path_file),
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 60
    while not (path_file.exists() and path_file.read_text().strip()):
        if proc.poll() is not None:
            raise AssertionError("the mock bootloader exited: " + proc.stderr.read().decode())
        assert time.monotonic() < end, "the mock bootloader did not start"
        time.sleep(0.02)
    return proc, path_file.read_text().strip()


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stderr.close()


SYNC = b"\xc0" + struct.pack("<BBHI", 0, 0x08, 36, 0) + b"\x07\x07\x12\x20" + b"\x55" * 32 + b"\xc0"


def rom_session(path, timeout=60):
    """Wait until the mock answers SYNC as the ROM does (4 status bytes), not
    as esptool's stub (2).  Why: esptool ends with a hard reset through RTS,
    which a pty cannot carry, so the mock keeps the stub session of the last
    esptool run; after a write it drops that session 3 s after FLASH_END,
    even in the middle of the next esptool run.  A real board, reset by
    esptool's DTR/RTS, is in a fresh ROM session for the next run: this is
    how the harness gets the same before it starts one."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    tty.setraw(fd)
    end = time.monotonic() + timeout
    try:
        while True:
            os.write(fd, SYNC)
            buf = b""
            wait = time.monotonic() + 0.2
            while time.monotonic() < wait:
                r, _, _ = select.select([fd], [], [], 0.05)
                if r:
                    buf += os.read(fd, 4096)
            frames = [f for f in buf.split(b"\xc0") if len(f) >= 8 and f[1] == 0x08]
            if frames and struct.unpack_from("<H", frames[-1], 2)[0] == 4:
                return
            assert time.monotonic() < end, "the mock never came back to its ROM session"
    finally:
        os.close(fd)


@pytest.fixture
def board(tmp_path):
    """The mock behind a pty: esptool opens a device path, as a DevKit's."""
    proc, path = _mock(tmp_path, "--pty")
    try:
        yield path
    finally:
        _stop(proc)


def make(*args):
    """``make`` as a user types it: at top level, also when the tests run under
    ``make test`` (a sub-make would say ``make[1]: ***`` and share the jobserver)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def read_rom(port, addr, size, out):
    """Read a small region back (esptool read-flash).  Small on purpose: the
    mock streams READ_FLASH in 4 KB packets and gives up when one of esptool's
    acks takes over 50 ms, which a loaded machine sees; one packet of at most
    256 bytes keeps it to one quick ack.  The whole image is compared by
    ``verify`` (docs/micropython.md)."""
    assert size <= 256
    r = esptool("--chip", "esp32", "--port", port, "read-flash", hex(addr), hex(size), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return out.read_bytes()


def verify(port, image):
    """esptool verify-flash: the MD5 the board computes over its flash region
    against the file's; True when they match."""
    r = esptool("--chip", "esp32", "--port", port, "verify-flash", hex(FLASH_ADDR), str(image))
    assert r.returncode == 0 or "Verification failed" in r.stderr, r.stdout + r.stderr
    return r.returncode == 0 and "digest matched" in r.stdout


def our_lines(stderr):
    """stderr without make's own closing '*** … Error' line."""
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("make: ***")]


def test_erase_flash_read_back_erase(board, image, tmp_path):
    fw = image.read_bytes()
    r = make("erase", "PORT=" + board)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "erase-flash" in r.stdout
    r = make("flash", "PORT=" + board, "FIRMWARE=" + str(image))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Connected to ESP32" in r.stdout and "Hash of data verified" in r.stdout
    assert f"Wrote {len(fw)} bytes" in r.stdout
    rom_session(board)
    assert verify(board, image), "the flash does not hold the image"
    # byte for byte where the image has its parts (bootloader, partition table,
    # app), across its two ends: nothing written below or after it
    low = read_rom(board, FLASH_ADDR - 64, 128, tmp_path / "low.bin")
    assert low == b"\xff" * 64 + fw[:64]
    assert read_rom(board, 0x8000, 64, tmp_path / "pt.bin") == fw[0x7000:0x7040]
    assert read_rom(board, 0x10000, 64, tmp_path / "app.bin") == fw[0xF000:0xF040]
    high = read_rom(board, FLASH_ADDR + len(fw) - 64, 128, tmp_path / "high.bin")
    assert high == fw[-64:] + b"\xff" * 64
    r = make("erase", "PORT=" + board)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not verify(board, image)  # the same check fails once the flash is wiped
    assert read_rom(board, FLASH_ADDR, 64, tmp_path / "wiped.bin") == b"\xff" * 64


@pytest.mark.parametrize("target", ["flash", "erase"])
def test_a_wrong_port_fails_with_one_clear_line(image, tmp_path, target):
    port = str(tmp_path / "ttyUSB9")  # no such device
    r = make(target, "PORT=" + port, "FIRMWARE=" + str(image))
    assert r.returncode != 0
    lines = our_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith(f"make {target}: cannot ")
    assert port in line and "doesn't exist" in line  # esptool's reason, named
    assert "hallclock ports" in line and "BOOT" in line  # and the next step
    assert "Traceback" not in r.stdout + r.stderr


def test_a_wrong_image_fails_with_one_clear_line_and_never_reaches_the_board(board, image,
                                                                            tmp_path):
    bad = bytearray(image.read_bytes())
    bad[0x40] ^= 0xFF  # one flipped byte inside the bootloader's segment
    (tmp_path / "corrupt.bin").write_bytes(bytes(bad))
    (tmp_path / "notes.txt").write_text("not an image\n")
    s3 = bytearray(image.read_bytes())
    s3[12] = 9  # the chip id of an ESP32-S3 image
    (tmp_path / "s3.bin").write_bytes(bytes(s3))
    for name, why in (("corrupt.bin", "invalid"), ("notes.txt", "invalid magic"),
                      ("s3.bin", "ESP32-S3")):
        r = make("flash", "PORT=" + board, "FIRMWARE=" + str(tmp_path / name))
        assert r.returncode != 0
        lines = our_lines(r.stderr)
        assert len(lines) == 1, (name, r.stderr)
        assert lines[0].startswith(f"make flash: {tmp_path / name} is not a sound esp32 image")
        assert why in lines[0], (name, lines[0])
        assert "write-flash" not in r.stdout
    # nothing was written: the board's flash is still erased
    assert read_rom(board, FLASH_ADDR, 64, tmp_path / "x.bin") == b"\xff" * 64
