"""What the purchasing custom-resource handlers share, bundled into each handler's asset.

`names` re-derives a plan's name from what it buys (the same digest `novapod.capacity.naming`
uses at synth), `ledger` is the purchase ledger (a DynamoDB table in the storage stack
where every purchase is claimed with a conditional write before the call).

Handlers import these modules relatively (`from ...handler_core import ledger`): in the
source tree that is `novapod.constructs.handler_core`; in a Lambda asset
(`novapod.constructs.provider.handler_code(..., core=True)`) the same layout sits under
a top-level package of its own. Only the Lambda runtime's boto3 is needed.
"""
