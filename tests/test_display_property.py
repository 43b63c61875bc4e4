"""The laptop shows what the clock shows: random scenarios of every mode and
delay kind (presses, bouncing contacts, remote commands, long presses,
reboots with ``--restore``, settings and round frames from the host, jittered
loops, the 2**30 tick wrap) run on the
virtual device with the real host link, and at every change of a displayed
second the host's model -- and the live view's row and the hall display's
answer built from it -- shows exactly the digits on the device's displays,
while the replay finds every logged event where the clock's own code puts
it.  A fixed seed and a bounded number of examples; the longer run is in
``make bench`` (bench/display.py)."""
from hypothesis import HealthCheck, given, seed, settings

from displayprop import check, scenario


@seed(20261201)
@settings(max_examples=150, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario())
def test_every_displayed_second_is_the_devices(case):
    compared, mismatches = check(*case)
    assert mismatches == [], mismatches
    assert compared >= 1
