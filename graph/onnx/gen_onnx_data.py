# Writes the ONNX backend test data (node/, simple/, real/) with python3-onnx
# 1.12's own generator, which fails as shipped under numpy >= 1.24 (np.float,
# np.object, ... were removed): the aliases are put back first. No file of
# the onnx package is changed.
#   /usr/bin/python3 gen_onnx_data.py generate-data -o OUT_DIR [-t Conv]
import runpy
import sys

import numpy as np

np.float, np.object, np.bool, np.int, np.str = float, object, bool, int, str
sys.argv = ["backend-test-tools"] + sys.argv[1:]
runpy.run_module("onnx.backend.test.cmd_tools", run_name="__main__")
