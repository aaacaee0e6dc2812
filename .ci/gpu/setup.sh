# sourced on the GPU machine: wheels, qcom_ext's metadata (entry points), NVIDIA ICD, env
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
find qcom_ext -type d -name __pycache__ -prune -exec rm -rf {} +   # stale layouts
find qcom_ext -type d -empty -delete
export PYTHONPATH=/tmp/site
[ -d /tmp/site/qcom_ext-0.1.0.dist-info ] || python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/site . >>/tmp/pip.log 2>&1 || { cat /tmp/pip.log; exit 1; }
rm -rf /tmp/site/qcom_ext   # the code comes from the checkout; only the metadata stays
export PYTHONPATH=$PWD:/tmp/site
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
export PYTHONUNBUFFERED=1
