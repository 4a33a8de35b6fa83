"""ClusterBootstrap: install the HyperPod dependencies into an EKS cluster (CodeBuild).

`pins` (data model) and `buildspec` are pure; `construct` holds the CDK construct,
`handler/` its custom-resource Lambda code and `codebuild/` the build's scripts.
"""
