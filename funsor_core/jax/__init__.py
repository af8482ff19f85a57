"""funsor's ``funsor.jax`` path; ``funsor_core.jax.distributions`` holds the distribution
families (the same on every backend; nothing here imports jax)."""
