#!/usr/bin/env bash
# One GPU session's measurements, in one call of the device machine (issue 33: "where a GPU
# machine is at hand, scripts/bench_gpu.py and the host/engine split of bench_scale run on it").
#
# Usage, on a CUDA box from the repository root: bash scripts/gpu_session.sh OUT_DIR [STEP...]
# Steps (default: qwen llama scale; one device call holds at most 10 minutes, so split them):
#   qwen, llama: bench_gpu.py on that committed shape (Qwen2.5-7B-Instruct, Llama-3.1-8B-Instruct;
#      random bf16 weights, transformers rows; vLLM rows where vLLM is installed), one process each;
#   sdpa: bench_gpu.py on the Llama shape, 8 items, rows per attention kernel (default, efficient,
#      math): which kernel the packed decode steps should use;
#   scale: bench_scale.py --judge random: `grade` on $ITEMS (default 1000) items x 6 criteria with
#      1,000-token submissions, the Qwen2.5-7B shape with random weights, grade only; host vs
#      engine seconds per judgment;
#   ab: the same split as an interleaved A/B of two package trees on one random judge folder:
#      $AB_TREES (default "A=.ab_base B=. B=. A=.ab_base"; .ab_base holds an old autorubric_local,
#      e.g. `git archive COMMIT autorubric_local | tar -x -C .ab_base`, ignored and carried);
#   profile: a cProfile of one grade child on $PROFILE_ITEMS (default 100) items with this tree,
#      summarised by profile_summary.py (where the GPU path's host time goes).
# ab and profile share the random judge folder in /dev/shm (built once, removed at the end);
# BENCH_GPU_ARGS adds bench_gpu arguments ("--items 16": half the workload); SCALE_ARGS adds
# bench_scale arguments (a CPU rehearsal: "--random-tiny --max-batch-tokens 16384").
# Each step has its own time limit (timeout), so a slow step cannot take the others' results.
# 2026-11-28 on one H200: llama 141 s, qwen over 170 s, scale ~220 s (its 15 GB folder included).
#
# Where the box lacks this package's dependencies (the lent device machine has torch and
# transformers but an older transformers and no pydantic), wheels in .whl/ are installed first
# (--target /tmp/site), and a tokenizer folder in .gputok/ (the bundled SmolLM2 judge's
# tokenizer, saved with save_pretrained: the GGUF does not travel) replaces reading the GGUF.
# Both are ignored paths (.git/info/exclude), made here and named in the device call's carry:
#   python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     transformers==5.24.0 tokenizers==0.23.3 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 \
#     typing-inspection==0.4.5 typing_extensions==4.16.0 outlines==1.3.3 outlines_core==0.2.14 genson==1.4.0 \
#     jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
#     diskcache==5.6.3 sqlite-utils==4.2.1 sqlite-fts4==1.0.3 click-default-group==1.2.4 regex==2026.11.19
#   python -c "import sys; sys.path.insert(0, 'scripts'); import bench_gpu; bench_gpu.judge_tokenizer().save_pretrained('.gputok')"
# (23 MB of wheels: what the package imports that the 2026-11 device image lacks or has too old.)
set -u
out=${1:?usage: gpu_session.sh OUT_DIR [STEP...]}
shift
steps=("${@:-qwen llama scale}")
steps=(${steps[*]})
items=${ITEMS:-1000}
mkdir -p "$out"
# Bytecode is written: each bench_scale child imports transformers again, and without .pyc files
# (the wheels install with --no-compile) every child compiled it from source (~10 s each).
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
if [ -d .whl ]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
tokenizer=()
[ -d .gputok ] && tokenizer=(--tokenizer .gputok)
log=$out/gpu_session_log.txt
day=$(date -u +%F)
{
    echo "# scripts/gpu_session.sh, $(date -u +%FT%TZ), HEAD $(git rev-parse --short HEAD 2>/dev/null || echo "?") (a device copy's HEAD can lag the tree sent)"
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    "$py" -c "import sys, torch, transformers; print('python', sys.version.split()[0], '| torch', torch.__version__,
'| transformers', transformers.__version__, '| cuda', torch.version.cuda)"
    nproc; free -g | head -2
} >"$log" 2>&1
shm=$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp )
judge_dir=$shm/gpu-session-random-judge  # ab and profile's shared random judge (15 GB)
gpu=$("$py" -c "import torch; n = torch.cuda.get_device_name().lower(); print('h200' if 'h200' in n else 'h100' if 'h100' in n else 'gpu')")
bench_gpu() {  # NAME LIMIT ARGS...
    local name=$1 limit=$2
    shift 2
    echo "## bench_gpu $name: $*" >>"$log"
    timeout -k 10 "$limit" "$py" scripts/bench_gpu.py "${tokenizer[@]}" "$@" ${BENCH_GPU_ARGS:-} \
        --out "$out/bench_gpu_${gpu}_${name}_$day.txt" >>"$log" 2>&1
    echo "exit $? at $(date -u +%T)" >>"$log"
}
for step in "${steps[@]}"; do
    case $step in
    qwen) bench_gpu qwen2.5-7b-instruct "${BENCH_GPU_LIMIT:-240}" --config qwen2.5-7b-instruct ;;
    llama) bench_gpu llama-3.1-8b-instruct "${BENCH_GPU_LIMIT:-200}" --config llama-3.1-8b-instruct ;;
    sdpa) bench_gpu llama-3.1-8b-instruct-sdpa "${BENCH_GPU_LIMIT:-240}" --config llama-3.1-8b-instruct --items 8 \
        --sdpa default --sdpa efficient --sdpa math ;;
    scale)
        echo "## bench_scale --judge random ($items items)" >>"$log"
        # The random judge's 15 GB folder is written to and read from memory, not the disk.
        TMPDIR=$( [ -d /dev/shm ] && echo /dev/shm || echo /tmp ) timeout -k 10 "${BENCH_SCALE_LIMIT:-260}" \
            "$py" scripts/bench_scale.py --judge random --model-config qwen2.5-7b-instruct "${tokenizer[@]}" \
            --items "$items" --grade-only >"$out/bench_scale_${gpu}_random-qwen7b_$day.txt" 2>>"$log"
        echo "exit $? at $(date -u +%T)" >>"$log" ;;
    ab)
        echo "## bench_scale A/B ($items items): ${AB_TREES:-A=.ab_base B=. B=. A=.ab_base}" >>"$log"
        TMPDIR=$shm timeout -k 10 "${BENCH_AB_LIMIT:-300}" "$py" scripts/bench_scale.py --judge random \
            --model-config qwen2.5-7b-instruct "${tokenizer[@]}" --judge-dir "$judge_dir" --items "$items" --grade-only ${SCALE_ARGS:-} \
            --trees ${AB_TREES:-A=.ab_base B=. B=. A=.ab_base} >"$out/ab_scale_${gpu}_random-qwen7b_$day.txt" 2>>"$log"
        echo "exit $? at $(date -u +%T)" >>"$log" ;;
    profile)
        echo "## bench_scale profile (${PROFILE_ITEMS:-100} items)" >>"$log"
        TMPDIR=$shm BENCH_SCALE_PROFILE=$out/scale.prof timeout -k 10 "${BENCH_PROFILE_LIMIT:-120}" "$py" \
            scripts/bench_scale.py --judge random --model-config qwen2.5-7b-instruct "${tokenizer[@]}" \
            --judge-dir "$judge_dir" --items "${PROFILE_ITEMS:-100}" --grade-only ${SCALE_ARGS:-} \
            >"$out/profile_scale_${gpu}_random-qwen7b_$day.txt" 2>>"$log"
        echo "exit $? at $(date -u +%T)" >>"$log"
        [ -f "$out/scale.prof" ] && "$py" scripts/profile_summary.py "$out/scale.prof" --top 30 \
            >>"$out/profile_scale_${gpu}_random-qwen7b_$day.txt" 2>>"$log" ;;
    *) echo "unknown step $step (qwen, llama, sdpa, scale, ab, profile)" >&2; exit 2 ;;
    esac
done
rm -rf "$judge_dir"
