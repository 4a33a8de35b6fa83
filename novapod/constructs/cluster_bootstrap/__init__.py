"""ClusterBootstrap: install the HyperPod dependencies into an EKS cluster (CodeBuild).

`buildspec` is pure (it renders the pins `novapod.pins` reads from data); `construct`
holds the CDK construct, `handler/` its custom-resource Lambda code and `codebuild/`
the build's scripts.
"""
