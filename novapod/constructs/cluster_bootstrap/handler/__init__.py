"""Lambda code of the ClusterBootstrap custom resource: `index` (entry points) and
`decisions` (pure logic).

Deployed as an asset whose root holds this folder, so the handler strings are
`handler.index.on_event` and `handler.index.is_complete`; imports stay relative and
need only the Lambda runtime's boto3.
"""
