"""Run by tests/test_mpi.py under `mpiexec -n 2`: the learner goldens with every minibatch split over
the ranks (each rank holds R/K rows of it, golden.runs.rank_agents), checked against the same torch
reference and tolerances as the one-process goldens; then more epochs on the same data, after which
every rank must hold the same weights and momentum, bit for bit. Rank 0 prints one JSON line:
{"ranks", "checks", "worst": {tolerance key: largest relative error}, "failures": [...]}."""
import json
import sys

import golden.runs as gr
from golden.check import rel_error, tolerance
from trainer.distributed import DistributedError, connect
from trainer.gpu import get_gpu

# cases whose R splits over 2 ranks: discrete, continuous (the logstd gradient), hybrid with a mask,
# a clipped gradient norm, a uint8 picture
CASES = (("learner", "small_3mb"), ("learner_heads", "continuous_2mb"), ("learner_heads", "hybrid_masked_3mb"),
         ("learner_heads", "masked_clipped_1mb"), ("learner_picture", "u8_feat3_36x36x3_2mb"))

world = connect()
gpu = get_gpu(local_rank=world.local_rank)
checks, worst, failures = 0, {}, []
for family, name in CASES:
    for label, got, want, key in gr.learner_case(gpu, name, family, world=world):
        err, _ = rel_error(got, want)
        checks += 1
        worst[key] = max(worst.get(key, 0.0), err)
        if not err <= tolerance(key):
            failures.append(f"rank {world.rank}: {label}: relative error {err:.3g} > {tolerance(key):.3g} ({key})")
    _, m, _, policy, learner = gr.learner_setup(gpu, name, family, world=world)
    for _ in range(4):
        learner.run(m["lr"])
    try:
        world.check_identical(f"{family}/{name}: the weights after 4 epochs", policy.read_weights())
        world.check_identical(f"{family}/{name}: the momentum after 4 epochs", learner.muon.read_momentum())
    except DistributedError as e:
        failures.append(str(e))
failures = sum(world.gather(failures), [])
if world.rank == 0:
    print(json.dumps({"ranks": world.size, "checks": checks, "worst": worst, "failures": failures}), flush=True)
sys.exit(1 if failures else 0)
