"""Amazon Nova on HyperPod: the catalog (data), recipe rendering and launch helpers."""
