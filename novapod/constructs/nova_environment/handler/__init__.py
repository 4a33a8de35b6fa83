"""Lambda code of the NovaEnvironment custom resource: `index` (entry points), `decisions`
(pure logic) and `kubernetes` (the cluster's Kubernetes API over HTTPS).

Deployed as an asset whose root holds this folder, so the handler strings are
`handler.index.on_event` and `handler.index.is_complete`; imports stay relative and
need only the Lambda runtime's boto3 and the standard library.
"""
