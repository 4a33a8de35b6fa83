"""`novapod status CONFIG`: what a deployed environment runs and pays for, read-only, with
the caller's credentials.

- `expected`: what the config says the environment holds (plans and their SageMaker
  names, instance groups with their types, counts and plans); pure.
- `collect`: the facts, gathered through clients the caller passes in (CloudFormation
  for the ledger's name, DynamoDB for the purchase ledger, SageMaker for the plans, their
  extension history, the HyperPod cluster and its nodes; CloudWatch for the scheduled
  check's samples of the plans' use; S3, EKS and the cluster's
  Kubernetes API, through `novapod.operate.cluster_api`, for the jobs' runs); the only
  module that calls AWS.
- `jobs`: each job's runs and where they stand against the plan's schedule; pure.
- `utilization`: each plan's instance-hours reserved so far and, from the scheduled
  check's samples (CloudWatch, read by `collect`), the share of them in use; pure.
- `assess`: from the facts and a time, each plan's and group's state, the drift from the
  config, and what needs attention (with the command that deals with it); pure.
- `render`: the report as text tables or as JSON (the contract, whose schema is
  docs/reference/status.schema.json); pure.
- `watch`: `--watch SECONDS`, a round every SECONDS on an injected sleep.
"""
