"""Lambda code of the ClusterBootstrap custom resource: `index` (entry points) and
`decisions` (pure logic).

Deployed with the handler core (`provider.handler_code`), so the handler strings are
`novapod_lambda.cluster_bootstrap.handler.index.on_event` and `...is_complete`; imports
stay relative (`from ...handler_core import aws`) and need only the Lambda runtime's
boto3.
"""
