#!/bin/bash
# Compare gputop with the real nvidia-smi on a lent GPU machine, read only (no setting is
# changed). Run from the repository root with OUT set; everything lands in $OUT/device.tar.gz.
# Pure-Python packages the machine lacks (textual, plotext) travel in .devsite/.
set -u
D=$(mktemp -d); export PYTHONPATH="$PWD:$PWD/.devsite" PYTHONUNBUFFERED=1
PY=python3; G="$PY -m gputop --backend nvml"
run() { local name=$1; shift; timeout 60 "$@" >"$D/$name" 2>"$D/$name.err"; echo "$name rc=$?" | tee -a "$D/rc.txt"; }
{ uname -a; nvidia-smi --version; $PY -V; $PY -m pip show nvidia-ml-py 2>/dev/null | head -2; } >"$D/env.txt" 2>&1
cat "$D/env.txt"
# A real load: one process computing, one holding memory idle.
$PY - <<'PY' >"$D/load.log" 2>&1 &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 150
while time.time() < end:
    for _ in range(50): a @ a
    torch.cuda.synchronize()
PY
LOAD=$!
$PY -c "import torch,time; x=torch.empty(4<<30, dtype=torch.uint8, device='cuda'); time.sleep(150)" >"$D/idle.log" 2>&1 &
IDLE=$!
sleep 12
FIELDS=$(nvidia-smi --help-query-gpu | grep -oE '^"[a-z_.]+"' | tr -d '"' | paste -sd,)
run help-query-gpu.txt nvidia-smi --help-query-gpu
run real-query.csv nvidia-smi --query-gpu="$FIELDS" --format=csv
run ours-query.csv $G --query-gpu="$FIELDS" --format=csv
run real-apps.csv nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv
run ours-apps.csv $G --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv
run real-table.txt nvidia-smi
run ours-table.txt $G nvidia-smi
run real-L.txt nvidia-smi -L
run ours-L.txt $G nvidia-smi -L
run real-q.txt nvidia-smi -q
run ours-q.txt $G nvidia-smi -q
run real-qx.xml nvidia-smi -q -x
run ours-qx.xml $G nvidia-smi -q -x
run real-mig.txt nvidia-smi -q -d MIG
run real-gpm.txt timeout 8 nvidia-smi dmon --gpm-metrics 1,2,3,5,10,11,12,13 -c 4
run ours-snapshot.json $G snapshot --json --window 4
run ours-snapshot.txt $G snapshot --color never
run ours-loop.csv timeout -s INT 3.2 $G --query-gpu=timestamp,index,utilization.gpu,power.draw --format=csv -lms 100
$G exporter --listen 127.0.0.1:9499 >"$D/exporter.log" 2>&1 & EXP=$!
sleep 3; run ours-metrics.txt $PY -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:9499/metrics',timeout=10).read().decode())"
kill $EXP
$PY - <<'PY' >"$D/gpm.txt" 2>&1
import time, pynvml as nv
nv.nvmlInit(); h = nv.nvmlDeviceGetHandleByIndex(0)
try:
    print("gpm support", nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
except nv.NVMLError as exc:
    print("gpm support query:", exc)
from gputop.backends import BackendOptions, create
b = create("nvml", BackendOptions()); b.open(); b.sample()
t = time.perf_counter(); n = 20
for _ in range(n): s = b.sample()
print(f"backend.sample {1000 * (time.perf_counter() - t) / n:.2f} ms each over {n}")
d = s.devices[0]; print(d.saturation); print("procs", [(p.pid, p.name, p.gpu_memory_mib, p.sm_pct) for p in d.processes])
PY
# Alerts on the real GPU: gputop watch with two rules the load makes true, a command channel.
cat >"$D/alerts.toml" <<TOML
[alerts]
journal = "$D/alerts.jsonl"
[[alerts.rule]]
name = "busy"
when = "gpu busy for 2s"
severity = "info"
[[alerts.rule]]
name = "warm"
when = "temperature_c > 30 for 2s"
[alerts.channel.log]
type = "command"
command = ["sh", "-c", "cat >> $D/alerts-command.jsonl"]
TOML
run alerts-list.txt $PY -m gputop alerts --config "$D/alerts.toml"
timeout -s TERM --preserve-status 10 $G watch --config "$D/alerts.toml" >"$D/watch.out" 2>"$D/watch.log"
echo "watch rc=$?" | tee -a "$D/rc.txt"
timeout 60 $PY scripts/device_dashboard.py "$D" >"$D/dashboard.log" 2>&1; echo "dashboard rc=$?" | tee -a "$D/rc.txt"
kill $LOAD $IDLE 2>/dev/null; wait 2>/dev/null
tar -czf "$OUT/device.tar.gz" -C "$D" .
ls -la "$D" | head -60
