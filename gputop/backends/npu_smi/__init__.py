"""Huawei Ascend NPUs: runs `npu-smi` and parses its text (see table.py for the layouts)."""
