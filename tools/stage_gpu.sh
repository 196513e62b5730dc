#!/usr/bin/env bash
# Stages what a GPU run needs into .gpu/ (git-ignored, carried to the GPU
# host): kilnc, kiln, every test binary labelled `gpu`, stripped and gzipped,
# plus a CTestTestfile.cmake that re-creates the `gpu` tests with
# paths relative to the unpacked folder. tools/gpu_check.sh consumes it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STAGE=.gpu
rm -rf "$STAGE" && mkdir -p "$STAGE/pkg/bin"
cp "$BUILD/bin/kilnc" "$BUILD/bin/kiln" "$STAGE/pkg/bin/"
ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 > "$STAGE/tests.json"
python3 - "$BUILD" "$STAGE" <<'PY'
import json, os, shutil, sys
build, stage = os.path.abspath(sys.argv[1]), sys.argv[2]
src = os.path.abspath('.')
lines = []
for t in json.load(open(os.path.join(stage, 'tests.json')))['tests']:
    exe = t['command'][0]
    name = os.path.basename(exe)
    dst = os.path.join(stage, 'pkg', 'bin', name)
    if not os.path.exists(dst):
        shutil.copy(exe, dst)
    if exe.endswith('.sh'):  # script tests bring their helper scripts
        for f in os.listdir(os.path.dirname(exe)):
            if f.endswith(('.py', '.sh')):
                shutil.copy(os.path.join(os.path.dirname(exe), f), os.path.join(stage, 'pkg', 'bin', f))
    # Arguments naming the build's binaries (e.g. kilnc) point at the staged
    # bin/ ($KILN_BIN_DIR, set by tools/gpu_check.sh).
    args = ' '.join('"%s"' % a.replace(os.path.join(build, 'bin') + '/', '$ENV{KILN_BIN_DIR}/')
                    for a in t['command'][1:])
    lines.append('add_test(%s "${CMAKE_CURRENT_LIST_DIR}/bin/%s" %s)' % (t['name'], name, args))
    props = {p['name']: p['value'] for p in t.get('properties', [])}
    # Paths into the source tree point at the repository copy on the GPU
    # host ($KILN_GPU_ROOT); the build tree is replaced by the staged bin/.
    env = [e.replace(src, '$ENV{KILN_GPU_ROOT}') for e in props.get('ENVIRONMENT', [])
           if build not in e and not e.startswith('KILN_BIN_DIR=')]
    # KILN_BIN_DIR comes from tools/gpu_check.sh's environment.
    lines.append('set_tests_properties(%s PROPERTIES LABELS "gpu" ENVIRONMENT "%s")' % (t['name'], ';'.join(env)))
open(os.path.join(stage, 'pkg', 'CTestTestfile.cmake'), 'w').write('\n'.join(lines) + '\n')
PY
for f in "$STAGE"/pkg/bin/*; do strip "$f" 2>/dev/null || true; done
tar -C "$STAGE" -czf "$STAGE/pkg.tar.gz" pkg
rm -rf "$STAGE/pkg" "$STAGE/tests.json"
ls -la "$STAGE"
