"""What the handlers share (the custom resources' and the scheduled check's), bundled
into each handler's asset.

`aws` makes the handlers' boto3 clients (retries and timeouts; reused while the
environment is unchanged) and wraps their calls; `errors` reads what a failed call says
(code, status, retries, detail); `values` coerces CloudFormation's properties, handles
times and writes the JSON log line; `health` says what needs a human in a plan, a group
or a node (the scheduled check and `novapod status` judge alike); `runs` what a job's
run is from its PyTorchJobs (the same two judge alike); `kubernetes` reads the EKS
cluster's Kubernetes API (the token, the cluster's CA, paged GETs); `ledger` is the
purchase ledger (a DynamoDB table in the storage stack where every purchase is claimed
with a conditional write before the call); `names` re-derives a plan's name from what it
buys (the same digest `novapod.capacity.naming` uses at synth).

Handlers import these modules relatively (`from ...handler_core import aws`): in the
source tree that is `novapod.constructs.handler_core`; in a Lambda asset
(`novapod.constructs.provider.handler_code`) the same layout sits under a top-level
package of its own. Only the Lambda runtime's boto3 is needed, and only by `aws`: the
others are pure, so the constructs may import them at synth.
"""
