from gputop.core.formatting import NA, num, pct, short_mib
from gputop.core.units import GIB, MB_PER_MIB, MIB, MIB_PER_GIB


def test_num_formats_a_value_and_says_what_is_missing():
    assert num(41.6) == "42"
    assert num(3, "d", " GPUs") == "3 GPUs"
    assert num(None, "5.0f", "W") == NA
    assert num(None, none="-") == "-"


def test_pct_right_aligns_in_the_cells_asked():
    assert pct(95) == "  95%" and pct(None) == "  N/A"
    assert pct(3, 4) == "  3%" and pct(None, 4) == " N/A"
    assert pct(100, 4) == "100%"


def test_short_mib_switches_unit_at_a_gib_and_a_tib():
    assert short_mib(None) == NA
    assert short_mib(512) == "512M"
    assert short_mib(81920) == "80G"
    assert short_mib(1.5 * 1024 * 1024) == "1.5T"


def test_units_are_binary():
    assert MIB == 2**20 and GIB == 2**30 and MIB_PER_GIB == GIB // MIB
    assert MB_PER_MIB == 1.048576
