"""After deploy: the commands that look at (and end) a deployed environment.

- `pipeline_check`: `novapod pipeline-check`, a pipeline stage's HyperPod cluster is
  InService and its Nova environment check passed;
- `purchases`: `novapod purchases`, the purchase ledger read (and, with `--release`, the
  one deliberate write a human makes);
- `destroy`: `novapod destroy-plan`, offline, the sequence that removes the environment
  and what outlives it.
"""
