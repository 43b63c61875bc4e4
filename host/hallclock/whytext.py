"""Why the hall-network link ended, as words: for the host only (``hallclock
simulate``'s message, the tests).  The clock keeps a number (``mqtt.Client.why``,
``NetLink.why``): a code in the low 5 bits, a detail (an errno, a CONNACK
return code, a packet type) above them, so a failure costs the clock's heap
no string (docs/micropython.md "The heap model").  Never imported on the clock.

The codes are the ``_W_*`` consts of mqtt.py and netlink.py (tests/test_mqtt_firmware.py
checks that every one of them has its words here).
"""
# code: the words (``%d``: the detail)
WORDS = {
    1: "no answer from the broker",
    2: "the broker went silent",
    3: "send failed (%d)",
    4: "connection lost (%d)",
    5: "the broker closed the connection",
    6: "bad packet length",
    7: "a packet too long for the clock",
    8: "a malformed packet",
    9: "a malformed PUBLISH",
    10: "a malformed CONNACK",
    11: "refused: %s",
    12: "subscription refused",
    13: "a malformed SUBACK",
    14: "a malformed PUBREL",
    15: "a malformed PINGRESP",
    16: "a packet a broker does not send us (type %d)",
    17: "cannot connect (%d)",
    18: "no Wi-Fi network",
    19: "link dropped",
}
# why hallclock.cfg was refused (hw/config.py ``Config.code``: ``CFG<code>`` on
# the console, ``cfg=<code>`` in the health event's text): the doctor's words
CFG_WORDS = {
    1: "a line that is not KEY = VALUE",
    2: "a clock name outside the topic-safe set (1-24 letters, digits, - _ .)",
    3: "an unknown mode",
    4: "a brightness that is not 0-7",
    5: "a hall network key missing",
    6: "a broker that is not HOST:PORT",
    7: "a key that is not 32 or more hex digits",
    8: "a hall name outside the topic-safe set (1-24 letters, digits, - _ .; "
       "no + # / spaces or control characters)",
    9: "a setting the mode refuses",
    10: "tls_ca_file names no CA the clock can pin (not a file name, the file missing "
        "from the board, or not a certificate in DER: hallclock deploy puts hallclock.ca "
        "there); the clock stays off the hall network",
}
# TLS to the broker (firmware tlslink.py): the detail of a send or read that failed
TLS_WORDS = {
    1001: "TLS refused: the broker's certificate is not the hall's (not signed by the CA "
          "the clock pins, or not naming the broker's address)",
    1002: "TLS failed (is the clock's broker port the hall's TLS listener?)",
}
# CONNACK return codes 1-5 (MQTT 3.1.1 section 3.2.2.3)
REFUSALS = ("", "protocol version", "client id", "server unavailable",
            "bad user name or password", "not authorized")
REFUSED = 11


def words(why):
    """The words for a link's ``why`` (None: none)."""
    if why is None:
        return None
    code, detail = why & 31, why >> 5
    if detail in TLS_WORDS:
        return TLS_WORDS[detail]
    text = WORDS.get(code)
    if text is None:
        return "link failure %d" % why
    if code == REFUSED:
        return text % (REFUSALS[detail] if 0 < detail < len(REFUSALS) else detail)
    return text % detail if "%" in text else text
