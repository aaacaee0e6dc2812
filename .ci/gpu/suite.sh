# usage: bash .ci/gpu/suite.sh [pytest args...]   (on the GPU machine; see .ci/gpu/README.md)
# Runs pytest on the NVIDIA device only, logging nvidia-smi used memory every second.
. .ci/gpu/setup.sh
export QCOM_EXT_TEST_DEVICES=nvidia CI=true QCOM_EXT_LEAK_CYCLES=${QCOM_EXT_LEAK_CYCLES:-200}
( while true; do echo "$(date +%s) $(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits)"; sleep 1; done ) > $OUT/gpu_mem.log 2>&1 &
MON=$!
PYTHONPATH=$PWD/.ci/gpu:$PYTHONPATH python3 -m pytest -q -p timeline -p no:cacheprovider --timeout 300 -o addopts="" --durations=25 "$@" 2>&1 | tee $OUT/pytest.log | tail -60
kill $MON
python3 - <<'PY'
import os
rows = [l.split() for l in open(os.environ["OUT"] + "/gpu_mem.log") if len(l.split()) == 2]
mem = [int(m) for _, m in rows if m.isdigit()]
if mem:
    print(f"GPU memory used (MiB): start {mem[0]}, max {max(mem)}, end {mem[-1]}, samples {len(mem)}")
PY
