#!/bin/sh
# rill_run_test.sh <rill-run> <work dir>
# rill-run end to end: tools/make_run_models.py (/usr/bin/python3 with
# python3-onnx) writes small models and .pb test data into <work dir>; each
# case checks rill-run's exit status and a pattern in its output through
# expect_cli.sh. Exits 77 (ctest skip) when python3 cannot import onnx.
run="$1"; dir="$2"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$dir"
/usr/bin/python3 "$here/make_run_models.py" "$dir"
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -ne 0 ] && { echo "rill_run_test: make_run_models.py failed ($rc)" >&2; exit 1; }

failed=0
# check <case> <exit status> <regex> <rill-run args...>
check() {
  name="$1"; want="$2"; pattern="$3"; shift 3
  if out="$(sh "$here/expect_cli.sh" "$want" "$pattern" "$run" "$@" 2>&1)"; then
    echo "ok   $name"
  else
    echo "FAIL $name: rill-run $*"
    printf '%s\n' "$out" | sed 's/^/     | /'
    failed=1
  fi
}

m="$dir/conv_gemm"
set0="$m/test_data_set_0"
check "model dir + test data: PASS" 0 \
  "input +x: float32 \[2, 3, 8, 8\] \(test data .*p50 .*inferences/s.*output y: float32 \[2, 5\]: max abs err .*PASS.*PASS: every output" \
  "$m" --test-data="$m" --runs=3 --warmup=1
check "set dir, host:0, opt 0, json" 0 "device: host:0, opt 0.*ratio 1.000.*PASS" \
  "$m/model.onnx" --test_data="$set0" --device=host:0 --opt=0 --runs=2 --json="$dir/out.json"
if /usr/bin/python3 -c "
import json
d = json.load(open('$dir/out.json'))
assert d['pass'] is True and d['runs'] == 2 and d['batch'] == 2, d
assert d['outputs'][0]['shape'] == [2, 5] and d['outputs'][0]['pass'], d
assert d['memory']['planned_bytes'] == d['memory']['unshared_bytes'] > 0, d
assert len(d['latency_ms']['runs']) == 2 and d['latency_ms']['p50'] > 0, d"; then
  echo "ok   --json parses and holds the figures"
else
  echo "FAIL --json: $dir/out.json"; failed=1
fi
check "--input and --compare DIR" 0 "\(file .*input_0.pb\).*PASS" \
  "$m/model.onnx" --input "x=$set0/input_0.pb" --compare="$m" --runs=1
check "wrong reference: FAIL" 1 "output y: .*FAIL \(10 of 10 elements differ.*FAIL: outputs differ" \
  "$m/model.onnx" --test-data="$m" --compare="$dir/wrong/output_0.pb" --runs=1
check "random inputs, no reference" 0 "x: float32 \[2, 3, 8, 8\] \(random\).*output y: float32 \[2, 5\]" \
  "$m/model.onnx" --runs=1
check "symbolic batch: --batch" 0 "batch 3.*input +x: float32 \[3, 4\].*output y: float32 \[3, 3\]" \
  "$dir/dyn_batch.onnx" --batch=3 --runs=1
# Det and NonZero: op types Rill lacks; every failing node is listed, by op type.
check "unsupported op types" 1 \
  "^rill-run: cannot import .*unsupported.onnx: 3 of 5 nodes \\(2 op types\\) cannot be imported.*Det x2.*op type not supported.*NonZero x1" \
  "$dir/unsupported.onnx"
check "missing input file" 1 "^rill-run: inputs: cannot open tensor file '.*no_such.pb'" \
  "$m/model.onnx" --input=x="$dir/no_such.pb"
check "missing test data" 1 "^rill-run: --test-data: .*does not exist" \
  "$m/model.onnx" --test-data="$dir/no_such_dir"
check "unknown input name" 2 "^rill-run: --input: the model has no input 'q' \(its inputs: x\)" \
  "$m/model.onnx" --input=q="$set0/input_0.pb"
check "malformed --input" 2 "^rill-run: --input=x: expected NAME=file.pb" "$m/model.onnx" --input=x
check "optimize all: conv+bias+relu fused, dump" 0 \
  "optimize \(level all\): .*fold_conv_affine x1, fuse_conv_activation x1, constant_filters x1.*PASS: every output" \
  "$m" --test-data="$m" --runs=2 --dump-optimized="$dir/dump.txt"
grep -q "fused_conv2d(x, w, .*act=relu" "$dir/dump.txt" || { echo "FAIL dump: no fused_conv2d"; cat "$dir/dump.txt"; failed=1; }
check "optimize none" 0 "optimize \(level none\): [0-9.]+ ms, optimized 7 -> 7 op nodes" \
  "$m" --test-data="$m" --runs=1 --optimize=none
check "bad --optimize" 2 "^rill-run: --optimize: optimization level 'max'" "$m/model.onnx" --optimize=max
check "unknown rewrite" 2 "^rill-run: --disable-rewrites: no rewrite 'fuse_all'" \
  "$m/model.onnx" --disable-rewrites=fuse_all
check "bad --opt" 2 "^rill-run: --opt=2: the levels are 0 and 1" "$m/model.onnx" --opt=2
check "bad --device" 2 "^rill-run: --device=gpu: " "$m/model.onnx" --device=gpu
check "absent device" 1 "^rill-run: no device host:7" "$m/model.onnx" --device=host:7
exit $failed
