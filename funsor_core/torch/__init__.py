"""funsor's ``funsor.torch`` path; ``funsor_core.torch.distributions`` holds the distribution
families (the same on every backend; nothing here imports torch)."""
