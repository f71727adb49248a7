"""What each real `npu-smi info` capture in tests/fixtures/npu-smi/ says, read off by hand.

Shared by the parser tests and the end-to-end `gputop snapshot --json` tests. Per chip:
(index, npu id, chip id, name, health, power W, temperature C, AICore %, used MiB, total MiB,
bus id); processes: (device index, pid, name, memory MiB).
"""

from __future__ import annotations

T_310_X1 = "info_310-x1_npu-smi-23.0.0_A300-3000_no-processes.txt"
T_310B4 = "info_310B4-x1_npu-smi-23.0.0_Alarm_BusId-NA.txt"
T_310_2020 = "info_310x4_npu-smi-20.2.0_huawei-doc.txt"
T_310_2104 = "info_310x4_npu-smi-21.0.4_hugepages_huawei-doc.txt"
T_910A_X2 = "info_910A-x2-A900_npu-smi-21.0.3.2_no-hugepages.txt"
T_910A_X8 = "info_910A-x8_npu-smi-22.0.3.1_huawei-doc.txt"
T_910A_WARN = "info_910A-xxx-x8_npu-smi-24.1.RC2_processes_warning_huawei-doc.txt"
T_910B1 = "info_910B1-x8_npu-smi-23.0.rc2_ELIDED-by-author.txt"
T_910B2C = "info_910B2C-x2_npu-smi-23.0.2.1_1-process_trailing-spaces.txt"
T_910B4 = "info_910B4-x8_npu-smi-25.0.rc1.1_no-processes-per-NPU_indexid-44432403459.txt"
T_A3 = "info_Ascend910-A3-2npu-x-2chip_npu-smi-25.2.0_Phy-ID_dash-power_process.txt"
T_950 = "info_Ascend950-x1_official-doc-example_npu-smi-x.x.x.txt"

_BUS_910A = ["61", "DB", "B2", "3E", "60", "DA", "B1", "3D"]
_BUS_910A_WARN = ["C1", "81", "41", "01", "C2", "82", "42", "02"]
_BUS_910B4 = ["C1", "C2", "81", "82", "01", "02", "41", "42"]


def _bus(x: str) -> str:
    return f"0000:{x}:00.0"


_WARN_PIDS = {
    0: [37656, 37664, 37640, 37648],
    1: [37665, 37641, 37649, 37657],
    2: [37658, 37650, 37666, 37642],
    3: [37643, 37651, 37659, 37667],
    4: [37668, 37644, 37652, 37660],
    5: [37653, 37661, 37669, 37645],
    6: [37646, 37654, 37662, 37670],
    7: [37671, 37647, 37655, 37663],
}

TABLES: dict[str, dict] = {
    T_310_X1: {
        "layout": "310", "version": "23.0.0",
        "chips": [(0, 0, 0, "Ascend 310", "OK", 12.8, 61, 0, 577, 7759, _bus("01"))],
        "processes": [], "idle": (0,), "process_table": True,
    },
    T_310B4: {
        "layout": "310", "version": "23.0.0",
        "chips": [(0, 0, 0, "Ascend 310B4", "Alarm", 0.0, 65, 0, 3628, 15609, None)],
        "processes": [], "idle": (), "process_table": False,
    },
    T_310_2020: {
        "layout": "310", "version": "20.2.0",
        "chips": [
            (i, 215, i, "Ascend 310", "OK", 12.8, t, 0, 2703, 8192, _bus(b))
            for i, t, b in zip(range(4), [56, 57, 57, 55], ["DA", "DC", "DD", "DB"], strict=True)
        ],
        "processes": [], "idle": (), "process_table": False,
    },
    T_310_2104: {
        "layout": "310", "version": "21.0.4.B030",
        "chips": [
            (3 + i, 6, i, "Ascend 310", "OK", 12.8, t, 0, m, 8192, _bus(b))
            for i, t, m, b in zip(range(4), [73, 74, 70, 65], [2703, 2867, 2867, 2867],
                                  ["89", "8A", "8B", "8C"], strict=True)
        ],
        "processes": [], "idle": (), "process_table": False,
    },
    T_910A_X2: {
        "layout": "910", "version": "21.0.3.2",
        "chips": [
            (1, 1, 0, "Ascend 910A", "OK", 65.3, 45, 0, 0, 32768, _bus("3B")),
            (4, 4, 0, "Ascend 910A", "OK", 63.6, 44, 0, 0, 32768, _bus("86")),
        ],
        "processes": [], "idle": (), "process_table": False,
    },
    T_910A_X8: {
        "layout": "910", "version": "22.0.3.1",
        "chips": [
            (i, i, 0, "Ascend 910A", "OK", p, t, 0, 0, 32768, _bus(b))
            for i, p, t, b in zip(range(8), [67.2, 63.3, 64.8, 191.7, 66.4, 62.7, 64.5, 191.4],
                                  [43, 38, 34, 42, 44, 33, 35, 40], _BUS_910A, strict=True)
        ],
        "processes": [], "idle": (), "process_table": False,
    },
    T_910A_WARN: {
        "layout": "910", "version": "24.1.RC2",
        "chips": [
            (i, i, 0, "Ascend xxx", h, p, t, 0, 0, 32768, _bus(b))
            for i, h, p, t, b in zip(
                range(8),
                ["OK", "OK", "OK", "Warning", "OK", "OK", "OK", "Warning"],
                [70.5, 71.2, 69.0, 206.9, 70.2, 64.9, 69.4, 203.2],
                [42, 36, 35, 39, 39, 37, 40, 42],
                _BUS_910A_WARN,
                strict=True,
            )
        ],
        "processes": [(n, pid, "hlt_host_devmm_", 686) for n in range(8) for pid in _WARN_PIDS[n]],
        "idle": (), "process_table": True,
    },
    T_910B1: {
        "layout": "910", "version": "23.0.rc2", "elided": True,
        "chips": [
            (0, 0, 0, "Ascend 910B1", "OK", 88.4, 46, 0, 4175, 65536, _bus("C1")),
            (1, 1, 0, "Ascend 910B1", "OK", 92.1, 47, 0, 4175, 65536, _bus("01")),
            (7, 7, 0, "Ascend 910B1", "OK", 92.7, 48, 0, 4174, 65536, _bus("42")),
        ],
        "processes": [], "idle": (), "process_table": False,
    },
    T_910B2C: {
        "layout": "910", "version": "23.0.2.1",
        "chips": [
            (0, 0, 0, "Ascend 910B2C", "OK", 88.6, 51, 0, 20701, 65536, _bus("5A")),
            (1, 1, 0, "Ascend 910B2C", "OK", 99.6, 50, 0, 20687, 65536, _bus("19")),
        ],
        "processes": [(0, 124528, "python3.8", 17400)], "idle": (), "process_table": True,
    },
    T_910B4: {
        "layout": "910", "version": "25.0.rc1.1",
        "chips": [
            (i, i, 0, "Ascend 910B4", "OK", p, t, 0, 2653 if i == 7 else 2654, 32768, _bus(b))
            for i, p, t, b in zip(range(8), [87.2, 82.7, 82.7, 89.1, 84.5, 84.8, 87.1, 81.6],
                                  [33, 33, 33, 34, 39, 37, 38, 37], _BUS_910B4, strict=True)
        ],
        "processes": [], "idle": tuple(range(8)), "process_table": True,
    },
    T_A3: {
        "layout": "910_93", "version": "25.2.0",
        "chips": [
            (0, 0, 0, "Ascend910", "OK", 162.8, 37, 0, 3133, 65536, _bus("9C")),
            (1, 0, 1, "Ascend910", "OK", None, 37, 0, 2876, 65536, _bus("9E")),
            (2, 1, 0, "Ascend910", "OK", 167.1, 38, 0, 3116, 65536, _bus("37")),
            (3, 1, 1, "Ascend910", "OK", None, 38, 0, 10568, 65536, _bus("39")),
        ],
        "processes": [(3, 990711, "python", 7746)], "idle": (0,), "process_table": True,
    },
    T_950: {
        "layout": "950", "version": "x.x.x",
        "chips": [(0, 0, None, "Ascend xxx", "OK", 204.4, 56, 0, 4439, 86016, _bus("91"))],
        "processes": [], "idle": (0,), "process_table": True,
    },
}
