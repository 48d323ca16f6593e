"""What every package shares: the registry, versions, results writing."""
