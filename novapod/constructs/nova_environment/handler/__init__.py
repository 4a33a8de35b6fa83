"""Lambda code of the NovaEnvironment custom resource: `index` (entry points), `decisions`
(pure logic) and `kubernetes` (the cluster's Kubernetes API over HTTPS).

Deployed with the handler core (`provider.handler_code`), so the handler strings are
`novapod_lambda.nova_environment.handler.index.on_event` and `...is_complete`; imports
stay relative (`from ...handler_core import aws`) and need only the Lambda runtime's
boto3 and the standard library.
"""
