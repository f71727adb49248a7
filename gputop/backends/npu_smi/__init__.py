"""Huawei Ascend NPUs: runs `npu-smi` and parses its text (see parse.py for the layouts)."""
