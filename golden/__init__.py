"""The golden checks shared by the tests and tools/gpu_report.py.

golden.check: reading the golden files and the tolerance table (numpy and safetensors only).
golden.runs: running a kernel on a golden case (needs the trainer and a GPU, not pytest or torch).
make_golden.py writes the golden files with torch; it is run as a script and imported by nothing.
"""
