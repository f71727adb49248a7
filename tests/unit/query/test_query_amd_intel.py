"""Query mode on AMD and Intel cards read from captured sysfs trees: every field the model holds
printed as nvidia-smi would, NVIDIA-only fields ``[N/A]``, never a 0 standing in for a missing
value (docs/query-mode.md, "AMD and Intel"). The expected values are read by hand from the
capture files named beside each."""

from __future__ import annotations

from gputop.commands.main import main
from tests.support import amd, intel

RX7900XTX = "sysfs_RX7900XTX-Navi31-RDNA3_amdgpu_lact-snapshot"

# (field, cell) in query order; the comment names the captured file under card0/device/.
AMD_CELLS = [
    ("index", "0"),
    ("pci.bus_id", "0000:03:00.0"),             # uevent PCI_SLOT_NAME
    ("pci.device_id", "0x744C1002"),            # uevent PCI_ID=1002:744C
    ("pci.sub_device_id", "0xE4711DA2"),        # uevent PCI_SUBSYS_ID=1DA2:E471
    ("vbios_version", "113-D70401XT-N11"),      # vbios_version
    ("utilization.gpu", "3 %"),                 # gpu_busy_percent 3
    ("utilization.memory", "[N/A]"),            # no mem_busy_percent in this capture
    ("memory.used", "[N/A]"),                   # no mem_info_vram_used in this capture
    ("memory.total", "[N/A]"),
    ("power.draw", "68.00 W"),                  # hwmon power1_average 68000000 uW
    ("power.limit", "290.00 W"),                # hwmon power1_cap 290000000
    ("power.default_limit", "290.00 W"),        # power1_cap_default
    ("power.min_limit", "261.00 W"),            # power1_cap_min
    ("power.max_limit", "333.00 W"),            # power1_cap_max
    ("temperature.gpu", "53"),                  # temp1 "edge" 53000 m°C
    ("temperature.memory", "68"),               # temp3 "mem" 68000
    ("fan.speed", "0 %"),                       # pwm1 0 of pwm1_max 255: a real 0
    ("clocks.sm", "31 MHz"),                    # freq1 "sclk" 31000000 Hz
    ("clocks.mem", "1249 MHz"),                 # freq2 "mclk" 1249000000 Hz
    ("clocks.max.sm", "2219 MHz"),              # pp_dpm_sclk top level 2219Mhz
    ("clocks.max.memory", "1249 MHz"),          # pp_dpm_mclk top level 1249Mhz
    ("pcie.link.gen.current", "4"),             # current_link_speed 16.0 GT/s
    ("pcie.link.width.current", "16"),          # current_link_width
    # NVIDIA-only: no such thing on an AMD card
    ("uuid", "[N/A]"), ("pstate", "[N/A]"), ("clocks_event_reasons.active", "[N/A]"),
    ("clocks_event_reasons.sw_power_cap", "[N/A]"), ("ecc.mode.current", "[N/A]"),
    ("compute_mode", "[N/A]"), ("compute_cap", "[N/A]"), ("mig.mode.current", "[N/A]"),
    ("persistence_mode", "[N/A]"), ("encoder.stats.sessionCount", "[N/A]"),
]

# card1/ of the Arc A380 (i915) capture.
INTEL_CELLS = [
    ("index", "0"),
    ("pci.bus_id", "0000:0b:00.0"),             # device/uevent PCI_SLOT_NAME
    ("pci.device_id", "0x56A58086"),            # PCI_ID=8086:56A5
    ("temperature.gpu", "55"),                  # hwmon temp1_input 55000
    ("power.limit", "55.00 W"),                 # hwmon power1_max 55000000 uW
    ("power.draw", "[N/A]"),                    # a rate of energy1_input: one sample has none
    ("clocks.sm", "600 MHz"),                   # gt_act_freq_mhz 600
    ("clocks.max.sm", "2450 MHz"),              # gt_RP0_freq_mhz 2450
    ("pcie.link.gen.current", "1"),             # device/current_link_speed 2.5 GT/s
    ("pcie.link.width.current", "1"),           # device/current_link_width
    ("utilization.gpu", "[N/A]"),               # busy share needs two readings of idle time
    ("memory.used", "[N/A]"), ("memory.total", "[N/A]"),  # i915 prints no VRAM figures
    ("fan.speed", "[N/A]"),                     # fan1_input is RPM, not a duty %
    ("uuid", "[N/A]"), ("pstate", "[N/A]"), ("clocks_event_reasons.active", "[N/A]"),
    ("ecc.mode.current", "[N/A]"), ("mig.mode.current", "[N/A]"),
]


def _query(capsys, backend: str, root, cells) -> list[str]:
    fields = ",".join(name for name, _ in cells)
    code = main(["--backend", backend, "--sysfs-root", str(root), f"--query-gpu={fields}",
                 "--format=csv,noheader"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out.rstrip("\n").split(", ")


def test_an_amd_card_prints_what_it_holds_and_na_for_the_rest(tmp_path, capsys):
    row = _query(capsys, "amd", amd.mount(tmp_path, RX7900XTX), AMD_CELLS)
    assert list(zip([n for n, _ in AMD_CELLS], row)) == AMD_CELLS


def test_an_intel_card_prints_what_it_holds_and_na_for_the_rest(tmp_path, capsys):
    row = _query(capsys, "intel", intel.mount(tmp_path, intel.A380), INTEL_CELLS)
    assert list(zip([n for n, _ in INTEL_CELLS], row)) == INTEL_CELLS
