"""The NVML read registry: each read says what it fills, and no attribute is filled twice."""

import dataclasses

from gputop.backends.nvml import reads
from gputop.core.model import Device


def test_every_read_fills_device_attributes_and_none_is_filled_twice():
    fields = {f.name for f in dataclasses.fields(Device)}
    attrs = [a for spec in reads.READS.values() for a in spec.attrs]
    assert len(attrs) == len(set(attrs))
    assert set(attrs) <= fields
    assert set(reads.READ_OF) == set(attrs)


def test_a_one_call_read_fills_its_one_attribute_with_the_converted_answer():
    calls = []

    class Backend:
        nv = type("nv", (), {"NVML_CLOCK_SM": 0})

        def call(self, gpu, key, name, *args, older=None):
            calls.append((key, name, args))
            return 250_000

    assert reads.make(Backend(), object(), "power") == {"power_draw_w": 250.0}
    assert reads.make(Backend(), object(), "clock_sm") == {"clock_sm_mhz": 250_000}
    assert calls == [("power", "nvmlDeviceGetPowerUsage", ()),
                     ("clock_sm", "nvmlDeviceGetClockInfo", (0,))]
