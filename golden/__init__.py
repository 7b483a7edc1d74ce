"""The golden checks shared by the tests and tools/gpu_report.py.

golden.check: reading the golden files and the tolerance table (numpy and safetensors only).
golden.runs: running a kernel on a golden case (needs the trainer and a GPU, not pytest or torch).
make_golden.py writes the golden files with torch, from the per-family references in golden/ref/
(each family's torch reference beside its cases); they are imported only by make_golden.py.
"""
