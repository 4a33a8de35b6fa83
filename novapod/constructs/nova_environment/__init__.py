"""The NovaEnvironment custom resource: a deploy-time check that the HyperPod cluster can
take a Nova job (the handler lives in `handler/`)."""
