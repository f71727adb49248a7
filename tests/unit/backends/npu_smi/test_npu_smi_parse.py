"""Every real npu-smi sample parsed, with its values asserted."""

from __future__ import annotations

import pytest

from gputop.backends.npu_smi.chip_info import (
    Common,
    Health,
    Memory,
    Power,
    Temp,
    parse_board,
    parse_common,
    parse_health,
    parse_memory,
    parse_power,
    parse_temp,
    parse_usages,
)
from gputop.backends.npu_smi.info_help import parse_help
from gputop.backends.npu_smi.inventory import NpuEntry, parse_info_l, parse_info_m
from gputop.backends.npu_smi.mapping import (
    Enrichment,
    assign_indices,
    chip_key,
    chip_to_device,
    health_hints,
    table_devices,
)
from gputop.backends.npu_smi.proc_mem import parse_proc_mem
from gputop.backends.npu_smi.syntax import NpuSmiParseError
from gputop.backends.npu_smi.table import parse_table
from gputop.backends.npu_smi.topo import parse_topo
from gputop.backends.npu_smi.watch import parse_watch
from tests.support.npu_smi import FIXTURES
from tests.support.npu_smi_expected import (
    T_310_X1,
    T_310B4,
    T_910A_WARN,
    T_910A_X8,
    T_910B2C,
    T_910B4,
    T_950,
    T_A3,
    TABLES,
)


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_every_fixture_is_covered_by_a_test() -> None:
    names = {p.name for p in FIXTURES.iterdir()}
    covered = set(TABLES) | set(KV_FILES)
    assert names == covered, names ^ covered


# ------------------------------------------------------------------ the table view


@pytest.mark.parametrize("name", sorted(TABLES))
def test_table_fixture_values(name: str) -> None:
    want = TABLES[name]
    table = parse_table(read(name))
    assert table.layout == want["layout"]
    assert table.version == want["version"]
    assert table.elided == want.get("elided", False)
    assert table.has_process_table == want["process_table"]
    assert table.idle_npus == want["idle"]
    assert [(c.npu_id, c.chip_id) for c in table.chips] == [
        (w[1], w[2]) for w in want["chips"]
    ]
    for chip, w in zip(table.chips, want["chips"], strict=True):
        assert chip.health == w[4]
        assert chip.power_w == w[5]
        assert chip.temperature_c == w[6]
        assert chip.aicore_pct == w[7]
        assert chip.bus_id == w[10]
    assert len(table.processes) == len(want["processes"])


@pytest.mark.parametrize("name", sorted(TABLES))
def test_table_fixture_maps_to_devices(name: str) -> None:
    want = TABLES[name]
    devices = table_devices(parse_table(read(name)))
    got = [
        (d.index, d.npu_id, d.chip_id, d.name, d.power_draw_w, d.temperature_c,
         d.utilization_gpu_pct, d.memory_used_mib, d.memory_total_mib, d.pci_bus_id)
        for d in devices
    ]
    assert got == [(w[0], w[1], w[2], w[3], w[5], w[6], w[7], w[8], w[9], w[10])
                   for w in want["chips"]]
    for d in devices:
        assert d.vendor == "huawei"
        # No equivalent in npu-smi's table: null, never a made-up 0.
        assert d.uuid is None and d.fan_pct is None and d.power_limit_w is None
        assert d.pstate is None and d.clock_event_reasons is None and d.energy_j is None
    procs = [(d.index, p.pid, p.name, p.gpu_memory_mib) for d in devices for p in d.processes]
    assert procs == [(i, pid, n, float(m)) for i, pid, n, m in want["processes"]]


def test_910b_memory_comes_from_hbm_not_the_zero_ddr() -> None:
    chip = parse_table(read(T_910B4)).chips[0]
    assert (chip.memory_used_mb, chip.memory_total_mb) == (0, 0)
    assert (chip.hbm_used_mb, chip.hbm_total_mb) == (2654, 32768)


def test_910a_keeps_ddr_in_the_record_and_reports_hbm() -> None:
    chip = parse_table(read(T_910A_X8)).chips[3]
    assert (chip.memory_used_mb, chip.memory_total_mb) == (1866, 15077)
    assert (chip.hbm_used_mb, chip.hbm_total_mb) == (0, 32768)
    assert (chip.hugepages_used, chip.hugepages_total) == (15, 15)


def test_first_generation_910_named_910b_is_not_taken_for_the_910b_generation() -> None:
    # Derived from the real 910A table: only the name changes, as on boards that call a
    # first-generation 910 "910B". The memory columns, not the name, decide.
    text = read(T_910A_X8).replace("910A  ", "910B  ")
    devices = table_devices(parse_table(text))
    assert devices[0].name == "Ascend 910B"
    assert (devices[0].memory_used_mib, devices[0].memory_total_mib) == (0.0, 32768.0)
    chip = parse_table(text).chips[0]
    assert (chip.memory_used_mb, chip.memory_total_mb) == (1867, 15077)


def test_five_digit_figures_touching_the_slash() -> None:
    b2c = parse_table(read(T_910B2C))
    assert [c.hbm_used_mb for c in b2c.chips] == [20701, 20687]
    a3 = parse_table(read(T_A3))
    assert a3.chips[3].hbm_used_mb == 10568


def test_a3_phy_ids_and_dash_power() -> None:
    a3 = parse_table(read(T_A3))
    assert [c.phy_id for c in a3.chips] == [0, 1, 2, 3]
    assert [c.power_w for c in a3.chips] == [162.8, None, 167.1, None]
    assert [(p.npu_id, p.chip_id, p.pid, p.name, p.memory_mb) for p in a3.processes] == [
        (1, 1, 990711, "python", 7746)
    ]


def test_310_device_column_is_the_logic_id_and_the_index() -> None:
    table = parse_table(read("info_310x4_npu-smi-21.0.4_hugepages_huawei-doc.txt"))
    assert [c.device_id for c in table.chips] == [3, 4, 5, 6]
    assert sorted(assign_indices(table.chips).values()) == [3, 4, 5, 6]
    assert table.has_hugepages and not table.has_hbm


def test_old_310_without_hugepages_column() -> None:
    table = parse_table(read("info_310x4_npu-smi-20.2.0_huawei-doc.txt"))
    assert not table.has_hugepages and not table.has_hbm
    assert all(c.hugepages_total is None and c.hbm_total_mb is None for c in table.chips)


def test_warning_health_gives_status_reason_and_hint() -> None:
    table = parse_table(read(T_910A_WARN))
    devices = table_devices(table)
    health = {d.index: c.health for d, c in zip(devices, table.chips, strict=True)}
    assert [d.status for d in devices] == ["ok"] * 8
    assert devices[3].status_reason == "npu-smi health Warning"
    assert devices[0].status_reason is None
    hints = health_hints(devices, health)
    assert [(h.device, h.code, h.severity) for h in hints] == [
        (3, "device-unhealthy", "warning"), (7, "device-unhealthy", "warning")
    ]
    assert "NPU 3 chip 0" in hints[0].message


def test_alarm_health_on_310b4() -> None:
    table = parse_table(read(T_310B4))
    (dev,) = table_devices(table)
    assert dev.status == "ok" and dev.status_reason == "npu-smi health Alarm"
    (hint,) = health_hints([dev], {0: "Alarm"})
    assert hint.severity == "critical"


@pytest.mark.parametrize(
    ("state", "status", "severity"),
    [("Critical", "error", "critical"), ("UNKNOWN", "ok", "warning")],
)
def test_critical_and_unknown_health(state: str, status: str, severity: str) -> None:
    # Derived from the real 910B4 table: NPU 2's health word replaced by another state that
    # npu-smi prints (npu_common.c: OK, Warning, Alarm, Critical, UNKNOWN).
    text = read(T_910B4).replace("| 2     910B4               | OK      ",
                                 f"| 2     910B4               | {state:<8}")
    table = parse_table(text)
    assert table.chips[2].health == state
    devices = table_devices(table)
    assert devices[2].status == status
    assert state in (devices[2].status_reason or "")
    hints = health_hints(devices, {2: state})
    assert [(h.device, h.severity) for h in hints] == [(2, severity)]


def test_health_detail_from_t_health_goes_into_the_reason() -> None:
    chip = parse_table(read(T_910A_WARN)).chips[3]
    detail = Health(3, 0, "Warning", "0x80E18402", "HBM ECC single-bit errors")
    dev = chip_to_device(chip, 3, (), Enrichment(health=detail))
    assert dev.status_reason == "npu-smi health Warning (0x80E18402: HBM ECC single-bit errors)"


def test_trailing_warning_line_is_kept_not_fatal() -> None:
    # npu_info_print.c prints this after the process table when the driver install looks broken.
    line = ("[WARNING]The driver package may not be completely installed, which may cause "
            "function abnormal. Please reinstall it.\n")
    table = parse_table(read(T_910B4) + line)
    assert table.warnings == (line.strip(),)
    assert len(table.chips) == 8 and table.idle_npus == tuple(range(8))


def test_empty_process_name() -> None:
    # Derived from the real 910B2C table: the name blanked, as npu-smi prints it for a process
    # it cannot name (seen in containers).
    text = read(T_910B2C).replace("python3.8", " " * len("python3.8"))
    (proc,) = parse_table(text).processes
    assert proc.name is None and proc.pid == 124528 and proc.memory_mb == 17400


def test_na_power_as_on_310p() -> None:
    # 310P tables print "NA" for power (npu_info_print.c); derived from the real 310 table.
    text = read(T_310_X1).replace("| 12.8   ", "| NA     ")
    (chip,) = parse_table(text).chips
    assert chip.power_w is None and chip.temperature_c == 61


def test_indented_table_copy_parses_the_same() -> None:
    text = "".join("    " + line for line in read(T_910B4).splitlines(keepends=True))
    assert parse_table(text) == parse_table(read(T_910B4))


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 0),
        ("hello\n", 1),
        ("+----+\n| npu-smi 1  Version: 1 |\n+----+\n| what | ever |\n| a | b |\n+===+\n", 4),
    ],
)
def test_garbage_is_a_typed_error_naming_the_line(text: str, line: int) -> None:
    with pytest.raises(NpuSmiParseError) as err:
        parse_table(text)
    assert err.value.line == line
    if line:
        assert f"line {line}" in str(err.value)


def test_truncated_table_names_the_last_line() -> None:
    lines = read(T_910B4).splitlines(keepends=True)
    with pytest.raises(NpuSmiParseError) as err:
        parse_table("".join(lines[:7]))  # cut between a chip's two lines
    assert err.value.line == 7


def test_shifted_column_is_an_error() -> None:
    text = read(T_910B4).replace("| 0                         | 0000:C1:00.0  | 0           0    / 0",
                                 "| 0                         | 0000:C1:00.0  | 0           0      0")
    with pytest.raises(NpuSmiParseError) as err:
        parse_table(text)
    assert err.value.line == 8


# ------------------------------------------------------------------ key-value queries

KV_FILES = {
    "info-h_Ascend950_official-doc-example.txt",
    "info-h_npu-smi-23.0.rc2_910B1.txt",
    "info-l_910B4-x8_npu-smi-25.0.rc1.1_indexid-44432403459.txt",
    "info-l_Ascend950_official-doc-example.txt",
    "info-m_310-MiniD-x4-plus-Mcu_npu-smi-21.0.4_huawei-doc.txt",
    "info-m_310-MiniD-x4_npu-smi-20.2.0_huawei-doc.txt",
    "info-m_910B4-x8-plus-Mcu_npu-smi-25.0.rc1.1_indexid-44432403459.txt",
    "info-m_Ascend910A-x8_npu-smi-22.0.3.1_huawei-doc.txt",
    "info-m_Ascend910A-x8_npu-smi-24.1.RC2_huawei-doc.txt",
    "info-m_Ascend950_official-doc-example.txt",
    "info-t-board-i0_Ascend950_official-doc-example.txt",
    "info-t-common-i0_Ascend950_official-doc-example.txt",
    "info-t-common-i1_910B1_npu-smi-23.0.rc2.txt",
    "info-t-health-i0_Ascend950_official-doc-example.txt",
    "info-t-memory-i0_Ascend950_official-doc-example.txt",
    "info-t-power-i0_Ascend950_official-doc-example.txt",
    "info-t-proc-mem-i0_Ascend950_official-doc-example.txt",
    "info-t-temp-i0_Ascend950_official-doc-example.txt",
    "info-t-topo_910B1-x8_npu-smi-23.0.rc2.txt",
    "info-t-usages-i0_910B1_npu-smi-23.0.rc2.txt",
    "info-t-usages-i0_Ascend950_official-doc-example.txt",
    "info-watch_Ascend950-x8_official-doc-example_INDENTED4.txt",
}


def test_help_950_has_no_chip_option() -> None:
    h = parse_help(read("info-h_Ascend950_official-doc-example.txt"))
    assert h.options == {"-i", "-p"}
    assert {"board", "common", "memory", "usages", "temp", "power", "health", "proc-mem",
            "topo", "current-fault-event"} <= h.types
    assert len(h.types) == 24


def test_help_910b1() -> None:
    h = parse_help(read("info-h_npu-smi-23.0.rc2_910B1.txt"))
    assert h.options == {"-i", "-c", "-p"}
    assert {"usages", "common", "proc-mem", "topo", "mcu-monitor", "boot-select"} <= h.types
    assert "current-fault-event" not in h.types
    assert len(h.types) == 45


def test_info_l_910b4_tab_indented() -> None:
    info = parse_info_l(read("info-l_910B4-x8_npu-smi-25.0.rc1.1_indexid-44432403459.txt"))
    assert info.total_count == 8
    assert [(n.npu_id, n.chip_count) for n in info.npus] == [(i, 1) for i in range(8)]


def test_info_l_950() -> None:
    info = parse_info_l(read("info-l_Ascend950_official-doc-example.txt"))
    assert info.total_count == 1
    assert info.npus == (NpuEntry(0, None, "A5 PCIe Card", "IT23HMDA0502FAA"),)


def test_info_m_310_with_mcu() -> None:
    rows = parse_info_m(read("info-m_310-MiniD-x4-plus-Mcu_npu-smi-21.0.4_huawei-doc.txt"))
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in rows] == [
        (6, 0, 0, "MiniD"), (6, 1, 1, "MiniD"), (6, 2, 2, "MiniD"), (6, 3, 3, "MiniD"),
        (6, 4, None, "Mcu"),
    ]
    assert [r.is_mcu for r in rows] == [False] * 4 + [True]


def test_info_m_310_old_misaligned() -> None:
    rows = parse_info_m(read("info-m_310-MiniD-x4_npu-smi-20.2.0_huawei-doc.txt"))
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in rows] == [
        (215, i, i, "MiniD") for i in range(4)
    ]


def test_info_m_910b4_with_mcu_rows() -> None:
    rows = parse_info_m(read(
        "info-m_910B4-x8-plus-Mcu_npu-smi-25.0.rc1.1_indexid-44432403459.txt"))
    chips = [r for r in rows if not r.is_mcu]
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in chips] == [
        (i, 0, i, "Ascend 910B4") for i in range(8)
    ]
    assert [(r.npu_id, r.chip_id, r.logic_id) for r in rows if r.is_mcu] == [
        (i, 1, None) for i in range(8)
    ]


@pytest.mark.parametrize("name", ["info-m_Ascend910A-x8_npu-smi-22.0.3.1_huawei-doc.txt",
                                  "info-m_Ascend910A-x8_npu-smi-24.1.RC2_huawei-doc.txt"])
def test_info_m_910a(name: str) -> None:
    rows = parse_info_m(read(name))
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in rows] == [
        (i, 0, i, "Ascend 910A") for i in range(8)
    ]


def test_info_m_950_slot_and_phy_id() -> None:
    (row,) = parse_info_m(read("info-m_Ascend950_official-doc-example.txt"))
    assert (row.npu_id, row.slot_id, row.chip_id, row.phy_id, row.logic_id, row.name) == (
        0, 0, 0, 0, None, "xxx")


def test_t_board_950() -> None:
    b = parse_board(read("info-t-board-i0_Ascend950_official-doc-example.txt"))
    assert b.npu_id == 0 and b.pci_bus_id == "0000:F1:00.0"
    assert b.serial_number == "xxx" and b.firmware_version == "xxx"
    assert b.fields["PCI Device ID"] == "0xD806"
    assert b.fields["DDie ID"] == "870408E3 2120D518 77936EE6 80B40A0A D4100003"
    assert b.fields["Class ID"] == "NA"
    assert len(b.fields) == 25


def test_t_common_950() -> None:
    c = parse_common(read("info-t-common-i0_Ascend950_official-doc-example.txt"))
    assert c == Common(0, None, 0, 3, 0, 1650, 100, 32, 65, 298.6)


def test_t_common_910b1_skips_the_mcu_block() -> None:
    c = parse_common(read("info-t-common-i1_910B1_npu-smi-23.0.rc2.txt"), 0)
    assert c == Common(1, 0, 0, 4, 0, 1800, 800, 24, 46, 93.4)  # not the MCU's 38 C


def test_t_health_950() -> None:
    h = parse_health(read("info-t-health-i0_Ascend950_official-doc-example.txt"))
    assert h == Health(0, None, "OK", None, None)


def test_t_memory_950() -> None:
    m = parse_memory(read("info-t-memory-i0_Ascend950_official-doc-example.txt"))
    assert m == Memory(0, None, 0, 0, 131072, 3200, 63, "0x5A")


def test_t_power_950() -> None:
    p = parse_power(read("info-t-power-i0_Ascend950_official-doc-example.txt"))
    assert p == Power(0, None, 296.5)


def test_t_proc_mem_950() -> None:
    npu, procs = parse_proc_mem(read("info-t-proc-mem-i0_Ascend950_official-doc-example.txt"))
    assert npu == 0
    assert [(p.pid, p.name, p.memory_mb) for p in procs] == [(395864, "power_test", 5118)]


def test_t_temp_950_key_with_a_space() -> None:
    t = parse_temp(read("info-t-temp-i0_Ascend950_official-doc-example.txt"))
    assert t == Temp(0, None, 53)


def test_t_topo_910b1() -> None:
    topo = parse_topo(read("info-t-topo_910B1-x8_npu-smi-23.0.rc2.txt"))
    assert topo.npus == tuple(f"NPU{i}" for i in range(8))
    assert topo.links[("NPU0", "NPU0")] == "X"
    assert topo.links[("NPU3", "NPU6")] == "HCCS"
    assert sum(v == "HCCS" for v in topo.links.values()) == 56
    assert topo.cpu_affinity == {"NPU0": "144-167", "NPU1": "0-23", "NPU2": "144-167",
                                 "NPU3": "0-23", "NPU4": "96-119", "NPU5": "48-71",
                                 "NPU6": "96-119", "NPU7": "48-71"}


def test_t_usages_910b1() -> None:
    u = parse_usages(read("info-t-usages-i0_910B1_npu-smi-23.0.rc2.txt"), 0)
    assert (u.npu_id, u.chip_id, u.hbm_capacity_mb, u.hbm_usage_pct, u.hbm_bandwidth_pct) == (
        0, 0, 65536, 4, 0)
    assert u.ddr_capacity_mb == 0 and u.aicore_pct == 0 and u.npu_util_pct is None


def test_t_usages_950() -> None:
    u = parse_usages(read("info-t-usages-i0_Ascend950_official-doc-example.txt"))
    assert (u.hbm_capacity_mb, u.hbm_usage_pct, u.ctrlcpu_pct, u.hbm_bandwidth_pct,
            u.npu_util_pct, u.aicube_pct) == (131072, 3, 40, 3, 0, 0)


def test_watch_950_indented() -> None:
    rows = parse_watch(read("info-watch_Ascend950-x8_official-doc-example_INDENTED4.txt"))
    assert [r.npu_id for r in rows] == list(range(8))
    assert all(r.chip_id is None for r in rows)
    assert [r.values["Pwr(W)"] for r in rows] == [290.4, 292.1, 291.2, 292.1, 291.5, 289.5,
                                                   288.5, 289.3]
    assert [r.values["Ctrl Cpu(%)"] for r in rows] == [16, 4, 7, 3, 4, 6, 8, 14]
    assert rows[0].values["Temp(C)"] == 51 and rows[0].values["Memory(%)"] == 3
    assert list(rows[0].values) == ["Pwr(W)", "Temp(C)", "AI Core(%)", "AI Cpu(%)",
                                    "Ctrl Cpu(%)", "Memory(%)", "Memory BW(%)", "NPU Util(%)",
                                    "AI Cube(%)"]


def test_enrichment_fills_what_the_table_lacks_and_keeps_what_it_has() -> None:
    table = parse_table(read("info_Ascend950-x1_official-doc-example_npu-smi-x.x.x.txt"))
    e = Enrichment(
        usages=parse_usages(read("info-t-usages-i0_Ascend950_official-doc-example.txt")),
        common=parse_common(read("info-t-common-i0_Ascend950_official-doc-example.txt")),
        memory=parse_memory(read("info-t-memory-i0_Ascend950_official-doc-example.txt")),
        board=parse_board(read("info-t-board-i0_Ascend950_official-doc-example.txt")),
    )
    (dev,) = table_devices(table, enrich={chip_key(table.chips[0]): e})
    assert dev.power_draw_w == 204.4 and dev.temperature_c == 56  # the table's, not common's
    assert dev.pci_bus_id == "0000:91:00.0"  # the table's, not the board page's
    assert (dev.clock_sm_mhz, dev.clock_sm_max_mhz, dev.clock_mem_mhz) == (100, 1650, 3200)
    assert dev.utilization_memory_pct == 3 and dev.temperature_memory_c == 63
    assert dev.serial == "xxx" and dev.vbios_version == "xxx"


def test_proc_mem_fills_processes_only_without_a_process_table() -> None:
    procs = parse_proc_mem(read("info-t-proc-mem-i0_Ascend950_official-doc-example.txt"))[1]
    no_table = parse_table(read("info_910B1-x8_npu-smi-23.0.rc2_ELIDED-by-author.txt"))
    devs = table_devices(no_table, enrich={(0, 0): Enrichment(proc_mem=procs)})
    assert [(p.pid, p.name, p.gpu_memory_mib) for p in devs[0].processes] == [
        (395864, "power_test", 5118.0)]
    with_table = parse_table(read(T_950))
    devs = table_devices(with_table, enrich={(0, 0): Enrichment(proc_mem=procs)})
    assert devs[0].processes == ()  # the table said "No running processes"


def test_a_chip_listed_twice_is_an_error() -> None:
    lines = read(T_910B4).splitlines(keepends=True)
    text = "".join(lines[:9] + lines[6:9] + lines[9:])  # NPU 0's two lines and separator again
    with pytest.raises(NpuSmiParseError, match="listed twice") as err:
        parse_table(text)
    assert err.value.line == 10
